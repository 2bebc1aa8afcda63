package main

import (
	"github.com/addonops/addonops/internal/testing/krmfntest"
)

// Golden tests. Every folder under testdata/ and examples/ is a case (layout and rules: see
// krmfntest.Golden); fnconfig.yaml is required, and besides the standalone, kustomize and kpt runs
//
//	render.args        optional: arguments of `addon-template render` (one per line), run on resources/*
//	expected/render.yaml, expected/render.stderr  the render command (with render.args)
//
// `go test -run TestGolden -update` rewrites expected/.

// writeFile is what process_test.go writes its inputs with.
var writeFile = krmfntest.WriteFile
