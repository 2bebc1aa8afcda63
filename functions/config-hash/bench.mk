# config-hash's benchmark (issue 2 §4): prints the function's own time, kustomize build with and
# without it, and its growth from 200 to 20,000 configs with input size and peak RSS. Included by the
# top-level Makefile.

.PHONY: bench-config-hash
bench-config-hash: $(BIN)/config-hash ## Time config-hash alone and inside kustomize build, and its growth.
	$(GO) run ./functions/config-hash/internal/bench -bin $(BIN)/config-hash
