package main

// The command tree: cobra, with kubectl's connection flags from cli-runtime's ConfigFlags.

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/addonops/addonops/internal/version"
)

// exitCode is an error that only carries an exit code: the command has said what went wrong.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// cli is what every command shares: how the user called us, where output goes, and the hub's
// connection flags.
type cli struct {
	prog           string
	stdout, stderr io.Writer
	flags          *genericclioptions.ConfigFlags
}

// run runs the command line args (args[0] is the program) and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	c := &cli{prog: programName(args[0]), stdout: stdout, stderr: stderr}
	root := c.rootCommand()
	root.SetArgs(args[1:])
	ctx, stop := signalContext()
	defer stop()
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	var usage usageError
	if errors.As(err, &usage) || strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return exitError
}

// usageError is a command line the command cannot run: a bad flag or argument.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

const (
	groupRollout = "rollout"
	groupDay2    = "day2"
)

func (c *cli) rootCommand() *cobra.Command {
	p := c.prog
	root := &cobra.Command{
		// The name the completion scripts register for: the binary's (kubectl-addonops for the
		// plugin); help and errors show how it was called ("kubectl addonops").
		Use:         strings.ReplaceAll(p, " ", "-"),
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: p},
		Short:       "Show and steer the rollout of OCM add-ons managed by addonops",
		Long: fmt.Sprintf(`%[1]s shows and steers the rollout of OCM add-ons managed by addonops.

Rollout:
  %[1]s status [flags]          every add-on on the hub: who manages it, placements, done/total, state
  %[1]s status ADDON [flags]    per placement: clusters done/total, in progress, failed and timed
                              out, config versions (desired, last applied, last known good),
                              canary state and failed clusters; --clusters: one line per cluster
  %[1]s history ADDON [flags]   the config versions each placement rolled out, oldest first
  %[1]s plan -f RENDERED.yaml   what applying a change does: per placement its kind, batches, warnings
  %[1]s snapshot -o FILE        the hub state a plan needs, to plan without hub credentials

Day-2 operations: each writes one annotation on the ClusterManagementAddOn ADDON; committing the
same annotation in Git does the same (see the README, "Day-2 operations"):
  %[1]s pause ADDON [--placement NS/NAME]     addonops.io/pause: start no new clusters
  %[1]s resume ADDON [--placement NS/NAME]    remove it from addonops.io/pause
  %[1]s promote ADDON --placement NS/NAME     addonops.io/promote: pass the canary gate for the desired version
  %[1]s override-window ADDON --placement NS/NAME
                                                 addonops.io/window-override: let the desired version
                                                 through closed maintenance windows
  %[1]s retry ADDON [--placement NS/NAME]     addonops.io/retry: restart a rollout stopped on maxFailures
  %[1]s abort ADDON [--placement NS/NAME]     addonops.io/abort: return to the last known good version
  %[1]s abort ADDON --auto=true|false         addonops.io/auto-abort: abort by itself on maxFailures

Exit codes: 0 ok; 1 the rollout failed and 2 --timeout passed (status --watch); 3 any other error.`, p),
		Version:       version.String(p),
		SilenceErrors: true,
		SilenceUsage:  true,
		// Without a command: the usage, and the exit code of a bad command line. (cobra itself
		// refuses an unknown command.)
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(c.stderr)
			_ = cmd.Help()
			return exitCode(exitError)
		},
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	// --version without cobra's -v shorthand (kubectl's -v is verbosity).
	root.Flags().Bool("version", false, "print the version")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddGroup(&cobra.Group{ID: groupRollout, Title: "Rollout:"}, &cobra.Group{ID: groupDay2, Title: "Day-2 operations:"})

	// kubectl's connection flags, on every command. The namespace flag is not among them: add-ons
	// are cluster-scoped and placements are named NS/NAME; only history takes -n (where to look for
	// the record). No discovery cache either: the commands do not use discovery.
	c.flags = genericclioptions.NewConfigFlags(false)
	c.flags.Namespace = nil
	c.flags.CacheDir = nil
	c.flags.AddFlags(root.PersistentFlags())

	root.AddCommand(
		c.statusCommand(),
		c.historyCommand(),
		c.planCommand(),
		c.snapshotCommand(),
		c.pauseCommand(),
		c.resumeCommand(),
		c.promoteCommand(),
		c.overrideWindowCommand(),
		c.retryCommand(),
		c.abortCommand(),
		&cobra.Command{
			Use:   "version",
			Short: "Print the version",
			Args:  cobra.NoArgs,
			Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(c.stdout, version.String(p)) },
		},
	)
	return root
}

// statusCommand runs `status` as before the move to cobra: runStatus parses its own flags (the
// same kubectl connection flags included, so they work before or after the verb) and returns the
// exit code, which keeps its exit codes and its --help.
func (c *cli) statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "status [ADDON] [flags]",
		GroupID: groupRollout,
		Short:   "Show where the rollout of an add-on stands (--watch to follow it)",
		Long: `Without ADDON, lists every ClusterManagementAddOn on the hub; with ADDON, shows its rollout per
placement (--clusters: per cluster). With -o json or yaml each placement also lists "owned", the
clusters it rolls out (a cluster two placements select is rolled out by one, as the controller
assigns it), and "behind", why its reason and counts are still the last change's while the
controller has not caught up with the spec.
Exit codes: 0 ok (with --watch: rollout succeeded), 1 rollout failed, 2 --timeout passed, 3 error.`,
		DisableFlagParsing: true,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			for _, a := range args {
				if !strings.HasPrefix(a, "-") {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
			}
			if strings.HasPrefix(toComplete, "-") {
				var out []cobra.Completion
				for _, f := range []string{"--watch", "--timeout", "--output", "--clusters"} {
					if strings.HasPrefix(f, toComplete) {
						out = append(out, f)
					}
				}
				return out, cobra.ShellCompDirectiveNoFileComp
			}
			return c.completeAddons(cmd, nil, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := runStatus(c.prog, args, c.stdout, c.stderr); code != exitOK {
				return exitCode(code)
			}
			return nil
		},
	}
	// `help status` prints what `status --help` prints (its flags are its own), on stdout.
	cmd.SetHelpFunc(func(*cobra.Command, []string) { runStatus(c.prog, []string{"--help"}, c.stdout, c.stdout) })
	return cmd
}
