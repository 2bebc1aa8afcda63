package main

import (
	"github.com/addonops/addonops/internal/krmfn/krmfntest"
)

// writeFile is what process_test.go writes its inputs with.
var writeFile = krmfntest.WriteFile
