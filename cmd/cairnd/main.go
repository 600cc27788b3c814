// Command cairnd is Cairn's control-plane server: it keeps the event log in
// PostgreSQL and serves the API, health, readiness and metrics over HTTP.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal starts a graceful shutdown; restoring the default
	// handling lets a second one end the process at once.
	go func() { <-ctx.Done(); stop() }()
	err := newRootCommand(os.Getenv).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairnd:", err)
		os.Exit(1)
	}
}

// newRootCommand builds the command tree. getenv supplies the environment,
// so tests can run commands without touching the process's own.
func newRootCommand(getenv func(string) string) *cobra.Command {
	cfg := &config{}
	root := &cobra.Command{
		Use:   "cairnd",
		Short: "Cairn's control-plane server",
		Long: `cairnd is the control-plane server of Cairn, an event-sourced control plane
for a private cloud. It keeps every change as an event in PostgreSQL: the
server DATABASE_URL names, or, when it is unset, a private cluster it runs
itself in the data directory.`,
		Version: versionString(),
		// Errors are printed once, by main; usage only for mistakes in flags.
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return cfg.resolve(cmd.Flags(), getenv)
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
	})
	cfg.bindGlobalFlags(root.PersistentFlags())
	root.AddCommand(
		newServeCommand(cfg),
		newMigrateCommand(cfg),
		newTokenCommand(cfg),
		newProjectionsCommand(cfg),
		newVersionCommand(),
	)
	return root
}
