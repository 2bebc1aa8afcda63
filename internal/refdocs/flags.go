package refdocs

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// FlagsPage generates the reference of a server command's flags (addonops-controller): its
// description, a table of every flag --help shows (name, type, default) and a section per flag
// with its full description, under a heading whose anchor is the flag's name (#--workers).
func FlagsPage(cmd *cobra.Command, path, source string) Page {
	var b strings.Builder
	name := cmd.Name()
	b.WriteString(generatedBy(source))
	fmt.Fprintf(&b, "# %s flags\n\n", name)
	fmt.Fprintf(&b, "%s.\n\n", strings.TrimSuffix(prose(cmd.Short), "."))
	writeLong(&b, cmd.Long)
	b.WriteString("The flags are set by whoever deploys the controller: the container's arguments in " +
		"`config/manager` (or an overlay of it). A Go-style single dash (`-kubeconfig=x`) works too. " +
		"klog's other flags (`--logtostderr`, `--log_dir`, ...) are accepted but not listed: `--log-format` covers what this binary needs.\n\n")
	b.WriteString("## Usage\n\n")
	b.WriteString("<!-- readme-test: check-only \"runs the controller: it needs a hub with OCM's add-on API\" -->\n```sh\n")
	fmt.Fprintf(&b, "%s --kubeconfig hub.kubeconfig --addons=all --leader-elect=false\n```\n\n", name)
	flags := visible(cmd.Flags(), nil)
	b.WriteString("## Summary\n\n| flag | type | default |\n|---|---|---|\n")
	for _, f := range flags {
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s |\n", flagName(f), anchor("--"+f.Name), flagType(f), cellCode(flagDefault(f)))
	}
	b.WriteString("\n## Flags\n\n")
	for _, f := range flags {
		fmt.Fprintf(&b, "### --%s\n\n", f.Name)
		facts := []string{"Type " + code(flagType(f))}
		if f.Shorthand != "" {
			facts = append(facts, "shorthand "+code("-"+f.Shorthand))
		}
		if d := flagDefault(f); d != "" {
			facts = append(facts, "default "+code(d))
		} else {
			facts = append(facts, "no default value")
		}
		fmt.Fprintf(&b, "%s.\n\n%s.\n\n", strings.Join(facts, ", "), strings.TrimSuffix(capitalize(prose(f.Usage)), "."))
	}
	return Page{Path: path, Content: []byte(strings.TrimRight(b.String(), "\n") + "\n")}
}

// anchor is the fragment GitHub gives a heading: lower case, spaces to dashes, punctuation other
// than dashes and underscores dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
