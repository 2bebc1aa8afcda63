package refdocs

import "strings"

// IndexPage generates docs/reference/README.md: what each reference page holds and where it comes
// from.
func IndexPage(path string) Page {
	var b strings.Builder
	b.WriteString(generatedBy("internal/refdocs"))
	b.WriteString(`# Reference

addonops' user-facing API, one page per kind of name, each generated from the code by ` + "`make docs`" + `; a test
fails when a page and the code drift (it says to run ` + "`make docs`" + `).

| page | what it lists | generated from |
|---|---|---|
| [CLI](cli.md) | the ` + "`addonops`" + ` commands (also ` + "`kubectl addonops`" + `), one page per command, with their flags | the command tree of ` + "`cmd/addonops`" + ` |
| [Controller flags](controller-flags.md) | every flag of ` + "`addonops-controller`" + `: type, default, what it does | the controller's flag set in ` + "`cmd/addonops-controller`" + ` |
| [Annotations and labels](annotations.md) | every ` + "`addonops.io/`" + ` name: on what, who writes it, what the controller believes of it, values, an example | the ` + "`addonops.io/`" + ` strings of the code, described in ` + "`internal/refdocs`" + ` |
| [Conditions and reasons](conditions.md) | the condition types and reasons of add-on status, with their classes (Healthy, Progressing, Suspended, Degraded) | ` + "`internal/addonstatus`" + ` (its classification functions), described in ` + "`internal/refdocs`" + ` |
| [Metrics](metrics.md) | the controller's Prometheus metrics: type, labels, how each comes about, a query | the metric definitions of the code, described in ` + "`internal/refdocs`" + ` |

The descriptions the code cannot give (who writes an annotation, what a reason asks of a person)
are tables in ` + "`internal/refdocs`" + `; generating a page fails when a table misses a name the code has or
names one it no longer has.
`)
	return Page{Path: path, Content: []byte(b.String())}
}
