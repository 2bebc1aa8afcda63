//go:build tools

// Separate module: builds goimports for `make lint`, kept apart so x/tools' dependency graph never
// touches the product's go.mod (as a tool of the product's module it moved x/net and x/term).
package tools

import _ "golang.org/x/tools/cmd/goimports"
