# Benchmark of the AddOnTemplate renderer (internal/render) and of the ManifestWork build
# (internal/addonwork) that the addon-template preview and the controller share. Included by the
# top-level Makefile.

# Iterations of each benchmark; each iteration renders the seed 004 hello-template for 1,000 clusters.
ADDON_TEMPLATE_BENCHTIME ?= 10x
# Target from issue 3: under 1 ms per cluster for the hello-template.
ADDON_TEMPLATE_TARGET_NS ?= 1000000

.PHONY: bench-addon-template
bench-addon-template: ## Preview hello-template for 1,000 clusters: time and allocations per cluster.
	@out=$$($(GO) test -count=1 -run '^$$' -bench 'Benchmark(RenderHelloTemplate|PreviewManifestWorks)1000Clusters$$' \
		-benchtime $(ADDON_TEMPLATE_BENCHTIME) ./internal/render/ ./internal/addonwork/); \
	echo "$$out" | grep -E '^(cpu|Benchmark)' ; \
	echo "$$out" | awk -v target=$(ADDON_TEMPLATE_TARGET_NS) ' \
		/^Benchmark/ { \
			ns = ""; allocs = ""; bytes = ""; \
			for (i = 2; i <= NF; i++) { \
				if ($$i == "ns/cluster") ns = $$(i-1); \
				if ($$i == "allocs/cluster") allocs = $$(i-1); \
				if ($$i == "B/cluster") bytes = $$(i-1); \
			} \
			what = ($$1 ~ /PreviewManifestWorks/) ? "render + ManifestWork build" : "render                     "; \
			verdict = (ns + 0 < target + 0) ? "under" : "OVER"; \
			printf "%s %8.1f µs/cluster %7.1f allocs/cluster %7.1f KiB/cluster  (%s the %.0f µs target)\n", \
				what, ns / 1000, allocs, bytes / 1024, verdict, target / 1000; \
		}'
