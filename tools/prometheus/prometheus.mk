# Prometheus' own tools, built from the separate tools module in tools/prometheus (Prometheus'
# dependency graph never touches ours), for the tests of config/components/prometheus:
#   bin/promtool     `promtool check rules` and `promtool test rules` on the alerts;
#   bin/promqlnames  Prometheus' PromQL parser: parses each dashboard query and alert expression
#                    and prints the metric names it selects (tools/prometheus/promqlnames);
#   bin/prometheus   the Prometheus server, for the verification gates' tests (internal/testing/
#                    promserver): it scrapes a test exporter and answers the gates' queries. Built
#                    without the web UI's assets (no builtinassets tag): the tests use the API only.
# Prometheus v3.7.3 (Go module v0.307.3). Included from the top-level Makefile; paths are relative to
# the repository root. The tests look for exactly these paths; $ADDONOPS_PROMTOOL,
# $ADDONOPS_PROMQLNAMES and $ADDONOPS_PROMETHEUS override them at run time.
#
# Built only when missing: promtool took 12 minutes (5.5 min CPU) from a cold build cache on a busy
# 2-core machine, modules already downloaded; promqlnames well under a minute. After changing
# tools/prometheus/go.mod, rebuild with `rm bin/promtool bin/promqlnames && make prometheus-tools`.
# Written to a temporary name first, so an interrupted build never leaves a binary make trusts.

PROMETHEUS_BUILD_ENV := GOWORK=off

.PHONY: prometheus-tools
prometheus-tools: bin/promtool bin/promqlnames ## Build Prometheus' promtool and the PromQL name extractor for the observability tests.

.PHONY: prometheus-server
prometheus-server: bin/prometheus ## Build the Prometheus server for the verification gates' tests.

bin/prometheus:
	@mkdir -p $(@D)
	cd tools/prometheus && $(PROMETHEUS_BUILD_ENV) $(or $(GO),go) build -o $(CURDIR)/$@.tmp github.com/prometheus/prometheus/cmd/prometheus
	mv $@.tmp $@

bin/promtool:
	@mkdir -p $(@D)
	cd tools/prometheus && $(PROMETHEUS_BUILD_ENV) $(or $(GO),go) build -o $(CURDIR)/$@.tmp github.com/prometheus/prometheus/cmd/promtool
	mv $@.tmp $@

bin/promqlnames: tools/prometheus/promqlnames/main.go tools/prometheus/go.mod
	@mkdir -p $(@D)
	cd tools/prometheus && $(PROMETHEUS_BUILD_ENV) $(or $(GO),go) build -o $(CURDIR)/$@.tmp ./promqlnames
	mv $@.tmp $@
