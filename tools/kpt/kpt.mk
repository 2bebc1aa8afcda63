# kpt v1.0.0-beta.60 (github.com/kptdev/kpt), for the golden tests of the KRM functions
# (internal/krmfn/krmfntest runs `kpt fn eval --exec` and `kpt fn render`). Included from the
# top-level Makefile; paths are relative to the repository root. The tests look for exactly bin/kpt
# (from the repository root); $KPT overrides it at run time.
#
# Built from the separate tools module in tools/kpt (kpt's dependency graph never touches ours),
# because `go install github.com/kptdev/kpt@...` cannot work here: it ignores replace directives,
# and kpt needs one:
# - beta.60 is the newest kpt the module proxy serves that the checksum database knows (beta.61 is
#   served but missing from sum.golang.org; beta.55-57 and beta.62 and later are refused).
# - replace github.com/kptdev/kpt/rollouts: kpt beta.58 to beta.61 require a pseudo-version of it
#   that the proxy refuses (403). The replacement is the same module under its older
#   GoogleContainerTools path, at the version kpt beta.49-54 require; kpt only uses its Rollout
#   types, for `kpt alpha rollouts`, and they compile unchanged.
# - CGO_ENABLED=0, as kpt's own release build: no C compiler needed, and wasmtime-go (kpt's WASM
#   function runtime, a prebuilt C library inside the module) is neither downloaded nor linked in;
#   the tests run exec functions only.
# - -X .../run.version: what `kpt version` prints, as kpt's release stamps it (without the "v");
#   -s -w as the release, too. The target compares it with tools/kpt/go.mod to decide to rebuild.
# No GONOSUMDB or GOFLAGS: every module of the build is in the checksum database, and go.sum pins it.
#
# Built only when bin/kpt is missing or prints another version than tools/kpt/go.mod pins; when it
# is present, the check takes well under a second. The first build, with empty module and build
# caches, measured on 2 cores: 2 min 56 s, downloads of ~440 MB of modules included (3.5 CPU-minutes;
# 6 min 10 s while other builds loaded the machine). After changing tools/kpt/go.mod, `make kpt`
# rebuilds.
# Written to a temporary name first, so an interrupted build never leaves a binary make trusts.

KPT_BIN := bin/kpt

.PHONY: kpt
kpt: ## Build kpt (the version tools/kpt pins) into bin/ for the golden tests, when missing or another version (~3 min the first time).
	@want=$$(awk '($$1 == "require" && $$2 == "github.com/kptdev/kpt") {print $$3} ($$1 == "github.com/kptdev/kpt") {print $$2}' tools/kpt/go.mod); \
	want=$${want#v}; \
	if [ -z "$$want" ]; then echo "kpt: no github.com/kptdev/kpt requirement in tools/kpt/go.mod" >&2; exit 1; fi; \
	if [ -x $(KPT_BIN) ] && [ "$$($(KPT_BIN) version 2>/dev/null)" = "$$want" ]; then \
	  echo "kpt: $(KPT_BIN) $$want present"; exit 0; \
	fi; \
	echo "kpt: building kpt $$want into $(KPT_BIN) from tools/kpt (about 3 minutes the first time)"; \
	mkdir -p $(dir $(KPT_BIN)); \
	tmp=$(CURDIR)/$(KPT_BIN).tmp.$$$$; \
	trap 'rm -f "$$tmp"' EXIT; \
	(cd tools/kpt && GOWORK=off CGO_ENABLED=0 $(or $(GO),go) build \
	  -ldflags "-s -w -X github.com/kptdev/kpt/run.version=$$want" -o "$$tmp" github.com/kptdev/kpt); \
	mv "$$tmp" $(KPT_BIN); \
	echo "kpt: built $(KPT_BIN) $$($(KPT_BIN) version)"
