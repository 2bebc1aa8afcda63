package refdocs

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// CLI says where the CLI reference goes and what the command tree does not hold itself.
type CLI struct {
	// Index is the root command's page (docs/reference/cli.md); Dir holds one page per command
	// below it (docs/reference/cli), named by its path from the root joined by "_".
	Index, Dir string
	// Source names the code the pages are generated from, for their first line.
	Source string
	// Intro is Markdown the index shows after the root's description: what the command tree
	// cannot say (how the binary is installed, say).
	Intro string
	// OwnFlags are the flags of commands that parse their own command line (DisableFlagParsing),
	// by command name; the ones the root's persistent flags also have are left out of their page.
	OwnFlags map[string]*pflag.FlagSet
}

// CLIPages generates the CLI reference of the command tree under root: an index with the root's
// description, its commands by group and the global flags, and a page per command (help and hidden
// commands apart) like Argo Rollouts' generated CLI docs. cobra's own completion command is added
// when the tree does not have it yet (cobra adds it only when a command runs).
func CLIPages(root *cobra.Command, o CLI) []Page {
	root.InitDefaultCompletionCmd()
	var pages []Page
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			if !sub.IsAvailableCommand() || sub.Name() == "help" {
				continue
			}
			pages = append(pages, Page{Path: o.Dir + "/" + o.pageName(sub), Content: []byte(o.commandPage(sub))})
			walk(sub)
		}
	}
	pages = append(pages, Page{Path: o.Index, Content: []byte(o.indexPage(root))})
	walk(root)
	return pages
}

// pageName is the file name of cmd's page in Dir.
func (o CLI) pageName(cmd *cobra.Command) string {
	path := strings.Fields(cmd.CommandPath())[1:]
	return strings.Join(path, "_") + ".md"
}

// relDir is the link from the index to the pages' directory.
func (o CLI) relDir() string {
	return strings.TrimPrefix(o.Dir, dirOf(o.Index)+"/")
}

func dirOf(path string) string {
	if i := strings.LastIndex(path, "/"); i >= 0 {
		return path[:i]
	}
	return ""
}

func (o CLI) indexPage(root *cobra.Command) string {
	var b strings.Builder
	name := root.DisplayName()
	b.WriteString(generatedBy(o.Source))
	fmt.Fprintf(&b, "# %s CLI reference\n\n", name)
	fmt.Fprintf(&b, "%s.\n\n", prose(root.Short))
	writeLong(&b, root.Long)
	if o.Intro != "" {
		b.WriteString(strings.TrimSpace(o.Intro) + "\n\n")
	}
	b.WriteString("## Usage\n\n")
	writeUsage(&b, name+" COMMAND [ARGS] [flags]")
	b.WriteString("## Commands\n\n")
	b.WriteString("One page per command, generated from the command tree.\n\n")
	groups := append([]*cobra.Group{}, root.Groups()...)
	groups = append(groups, &cobra.Group{Title: "Other commands"})
	for _, g := range groups {
		var rows []string
		for _, sub := range root.Commands() {
			if !sub.IsAvailableCommand() || sub.Name() == "help" || sub.GroupID != g.ID {
				continue
			}
			rows = append(rows, fmt.Sprintf("| [%s](%s/%s) | %s |", code(name+" "+sub.Name()), o.relDir(), o.pageName(sub), prose(sub.Short)))
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "### %s\n\n| command | what it does |\n|---|---|\n%s\n\n", strings.TrimSuffix(g.Title, ":"), strings.Join(rows, "\n"))
	}
	b.WriteString("## Global flags\n\n")
	fmt.Fprintf(&b, "Every command takes these flags: kubectl's connection flags (the hub is reached as kubectl reaches it: `--kubeconfig`, `$KUBECONFIG`, `--context`, ...).\n\n")
	flagTable(&b, visible(root.PersistentFlags(), nil))
	if own := visible(root.LocalNonPersistentFlags(), nil); len(own) > 0 {
		fmt.Fprintf(&b, "\n%s alone also takes:\n\n", code(name))
		flagTable(&b, own)
	}
	return b.String()
}

func (o CLI) commandPage(cmd *cobra.Command) string {
	var b strings.Builder
	path := cmd.DisplayName()
	if cmd.HasParent() {
		path = cmd.Parent().CommandPath() + " " + cmd.Name()
		path = strings.Replace(path, cmd.Root().Name(), cmd.Root().DisplayName(), 1)
	}
	b.WriteString(generatedBy(o.Source))
	fmt.Fprintf(&b, "# %s\n\n", path)
	fmt.Fprintf(&b, "%s.\n\n", strings.TrimSuffix(prose(cmd.Short), "."))
	writeLong(&b, cmd.Long)
	b.WriteString("## Usage\n\n")
	use := cmd.UseLine()
	use = strings.Replace(use, cmd.Root().Name(), cmd.Root().DisplayName(), 1)
	writeUsage(&b, use)
	if cmd.Example != "" {
		b.WriteString("## Examples\n\n<!-- readme-test: check-only \"examples of the command's help: they need a hub with add-ons\" -->\n```sh\n")
		b.WriteString(strings.TrimSpace(cmd.Example) + "\n```\n\n")
	}
	var flags []*pflag.Flag
	if own, ok := o.OwnFlags[cmd.Name()]; ok && cmd.DisableFlagParsing {
		flags = visible(own, cmd.Root().PersistentFlags())
	} else {
		flags = visible(cmd.LocalNonPersistentFlags(), nil)
	}
	b.WriteString("## Flags\n\n")
	if len(flags) == 0 {
		b.WriteString("None of its own.\n\n")
	} else {
		flagTable(&b, flags)
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "It also takes the [global flags](%s#global-flags) (the hub's connection).\n\n", relIndex(o))
	if subs := available(cmd); len(subs) > 0 {
		b.WriteString("## Commands\n\n| command | what it does |\n|---|---|\n")
		for _, sub := range subs {
			fmt.Fprintf(&b, "| [%s](%s) | %s |\n", code(path+" "+sub.Name()), o.pageName(sub), prose(sub.Short))
		}
		b.WriteString("\n")
	}
	b.WriteString("## See also\n\n")
	if cmd.Parent() != nil && cmd.Parent() != cmd.Root() {
		fmt.Fprintf(&b, "- [%s](%s): %s\n", code(strings.Replace(cmd.Parent().CommandPath(), cmd.Root().Name(), cmd.Root().DisplayName(), 1)), o.pageName(cmd.Parent()), prose(cmd.Parent().Short))
	}
	fmt.Fprintf(&b, "- [%s](%s): every command, and the global flags\n", code(cmd.Root().DisplayName()), relIndex(o))
	return b.String()
}

// relIndex is the link from a command's page to the index.
func relIndex(o CLI) string {
	up := strings.Repeat("../", strings.Count(strings.TrimPrefix(o.Dir, dirOf(o.Index)+"/"), "/")+1)
	return up + strings.TrimPrefix(o.Index, dirOf(o.Index)+"/")
}

func available(cmd *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() && sub.Name() != "help" {
			out = append(out, sub)
		}
	}
	return out
}

// writeLong writes a command's long description: its plain paragraphs as Markdown paragraphs and
// its indented lines (a table of commands, a shell session) as a text block.
func writeLong(b *strings.Builder, long string) {
	for _, para := range strings.Split(strings.TrimSpace(long), "\n\n") {
		lines := strings.Split(para, "\n")
		i := 0
		for i < len(lines) && !strings.HasPrefix(lines[i], " ") && !strings.HasPrefix(lines[i], "\t") {
			i++
		}
		if i > 0 {
			fmt.Fprintf(b, "%s\n\n", prose(strings.Join(lines[:i], "\n")))
		}
		if i < len(lines) {
			b.WriteString("<!-- readme-test: skip \"the command's help text, generated by make docs; the drift test keeps it current\" -->\n```text\n")
			for _, l := range lines[i:] {
				b.WriteString(strings.TrimRight(l, " ") + "\n")
			}
			b.WriteString("```\n\n")
		}
	}
}

// writeUsage writes a usage line as a shell block. Alternatives inside brackets lose their
// spaces ("[--placement NS/NAME|--auto=true|false]"): the documentation test reads a spaced pipe
// as a shell pipeline.
func writeUsage(b *strings.Builder, use string) {
	use = strings.ReplaceAll(use, " | ", "|")
	fmt.Fprintf(b, "<!-- readme-test: check-only \"the usage line, generated from the command: it needs a hub with add-ons\" -->\n```sh\n%s\n```\n\n", use)
}

// visible are the flags of fs that --help shows, in its order, without those of except.
func visible(fs, except *pflag.FlagSet) []*pflag.Flag {
	var out []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || f.Name == "help" {
			return
		}
		if except != nil && except.Lookup(f.Name) != nil {
			return
		}
		out = append(out, f)
	})
	return out
}

// flagTable writes flags as a Markdown table: flag, type, default, description.
func flagTable(b *strings.Builder, flags []*pflag.Flag) {
	b.WriteString("| flag | type | default | description |\n|---|---|---|---|\n")
	for _, f := range flags {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", flagName(f), flagType(f), cellCode(flagDefault(f)), prose(f.Usage))
	}
}

func flagName(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return code("-"+f.Shorthand) + ", " + code("--"+f.Name)
	}
	return code("--" + f.Name)
}

// flagType is the flag's value type in pflag's words (klog's flags come from Go's flag package,
// whose values name their Go type).
func flagType(f *pflag.Flag) string {
	switch t := f.Value.Type(); t {
	case "Level":
		return "int"
	case "moduleSpec":
		return "string"
	default:
		return t
	}
}

// flagDefault is the default as --help shows it: nothing for an empty string or an empty list.
func flagDefault(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "[]":
		return ""
	}
	return f.DefValue
}
