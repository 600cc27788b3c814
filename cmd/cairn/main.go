// Command cairn is Cairn's command-line client. It talks to cairnd's GraphQL
// API like any other client: log in once with a server address and an API
// token, then list nodes, jobs and services or follow the event log.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// Exit codes: 1 for an error the command met (the server refused, the
// server could not be reached, a file could not be written), 2 for a
// mistake on the command line.
const (
	exitError   = 1
	exitUsage   = 2
	exitChanges = 3 // cairn diff found changes
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	a := newApp(os.Getenv, os.Stdin)
	err := newRootCommand(a).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairn:", err)
		os.Exit(exitCodeOf(err))
	}
}

// usageError is a mistake on the command line.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func exitCodeOf(err error) int {
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var je *jobExitError
	if errors.As(err, &je) {
		return je.ExitCode()
	}
	var de *DiffFoundError
	if errors.As(err, &de) {
		return exitChanges
	}
	return exitError
}

// app holds what every command shares: the environment, standard input,
// the output format and the HTTP client.
type app struct {
	getenv  func(string) string
	stdin   io.Reader
	http    *http.Client
	output  string
	timeout time.Duration
}

// newApp builds the shared state; getenv supplies the environment so tests
// can run commands without touching the process's own.
func newApp(getenv func(string) string, stdin io.Reader) *app {
	// No client-wide timeout: subscriptions stay open; each query has a
	// deadline of its own (--timeout).
	return &app{getenv: getenv, stdin: stdin, http: &http.Client{}}
}

// newRootCommand builds the command tree.
func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "cairn",
		Short: "Cairn's command-line client",
		Long: `cairn talks to a Cairn control plane (cairnd) over its GraphQL API.

Start with ` + "`cairn login --server URL --token TOKEN`" + `; it keeps the server and token
in $XDG_CONFIG_HOME/cairn/config.json (or ~/.config/cairn/config.json). The
environment variables ` + ServerEnv + ` and ` + TokenEnv + ` override what is stored.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			switch a.output {
			case outputTable, outputJSON, outputWide, outputYAML:
			default:
				return &usageError{fmt.Errorf("output format %q: use table, wide, json or yaml", a.output)}
			}
			if a.timeout <= 0 {
				return &usageError{fmt.Errorf("--timeout must be positive, got %s", a.timeout)}
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())}
	})
	root.PersistentFlags().StringVarP(&a.output, "output", "o", outputTable, "output format: table, wide (with ids), json or yaml")
	root.PersistentFlags().DurationVar(&a.timeout, "timeout", 30*time.Second, "how long to wait for the server's answer to a query")
	root.AddCommand(
		newLoginCommand(a),
		withSubcommands(newNodesCommand(a), append(nodeManageCommands(a), newJoinTokenCommand(a))...),
		withSubcommands(newJobsCommand(a), newJobLogsCommand(a)),
		newRunCommand(a),
		withServiceCommands(a, newServicesCommand(a)),
		newApplyCommand(a), newDiffCommand(a),
		newEventsCommand(a),
		newTemplatesCommand(a),
		newTenantsCommand(a), newUsersCommand(a), newTokensCommand(a), newLocationsCommand(a), newSchedulesCommand(a),
		newOCLCommand(a),
		newAuditCommand(a), newReplayCommand(a),
		newClusterCommand(a),
	)
	return root
}

// argsOne wants exactly one positional argument, a what; anything else is a
// usage error.
func argsOne(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return &usageError{fmt.Errorf("give one %s, got %d arguments", what, len(args))}
		}
		return nil
	}
}

// argsNone refuses positional arguments as a usage error.
func argsNone(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return &usageError{err}
	}
	return nil
}

// argsExactly wants n positional arguments, described by what.
func argsExactly(what string, n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &usageError{fmt.Errorf("give %s, got %d arguments", what, len(args))}
		}
		return nil
	}
}
