package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"cairn/internal/database"
	"cairn/migrations"
)

func newMigrateCommand(cfg *config) *cobra.Command {
	var statusOnly bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations and print the schema version",
		Long: `Apply pending database migrations and print the schema version.

It connects as the login role of DATABASE_URL (or the embedded cluster's
superuser), which must own the schema; it does not switch to cairn_app.
Several cairnd processes migrating at once take turns. ` + "`cairnd serve`" + ` migrates
at start-up too, so this command is for applying migrations ahead of a rollout
and for checking where a database stands.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return migrate(cmd.Context(), cfg, cfg.logger(cmd.ErrOrStderr()), cmd.OutOrStdout(), statusOnly)
		},
	}
	cmd.Flags().BoolVar(&statusOnly, "status", false, "print the current and latest schema versions without applying anything")
	return cmd
}

func migrate(ctx context.Context, cfg *config, log zerolog.Logger, out io.Writer, statusOnly bool) (err error) {
	be, err := openBackend(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, be.Close()) }()

	pool, err := database.Open(ctx, be.url, database.Options{MaxConns: 2, AppName: "cairnd migrate"})
	if err != nil {
		return err
	}
	defer pool.Close()

	if statusOnly {
		st, err := migrations.Check(ctx, pool)
		if err != nil {
			return err
		}
		verdict := "up to date"
		if !st.UpToDate() {
			verdict = "migrations pending: run `cairnd migrate`"
		}
		_, err = fmt.Fprintf(out, "current: %d\nlatest:  %d\n%s\n", st.Current, st.Latest, verdict)
		return err
	}

	st, err := migrations.Up(ctx, pool)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "schema version: %d\n", st.Current)
	return err
}
