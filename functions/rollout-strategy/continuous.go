package main

import "github.com/addonops/addonops/internal/verification"

// checkedTemplate is a template checked once per use: the batch runs' and the continuous runs'
// references may give the same template different args.
type checkedTemplate struct {
	key        verification.TemplateKey
	continuous bool
}

// templateRun is a reference the build checks: the entry's own (the batch runs), or its
// continuous template (verification.Continuous), named so in messages.
type templateRun struct {
	ref        verification.Ref
	continuous bool
	what       string
}

// runsOf returns the references of an annotation entry to check: its template, and its continuous
// template when it has one.
func runsOf(ref verification.Ref) []templateRun {
	out := []templateRun{{ref: ref}}
	if ref.Continuous != nil {
		out = append(out, templateRun{ref: ref.Continuous.Ref(ref), continuous: true, what: "continuous template "})
	}
	return out
}
