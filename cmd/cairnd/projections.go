package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/internal/database"
	"cairn/migrations"
	"cairn/projections"
	"cairn/projections/models"
)

func newProjectionsCommand(cfg *config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "projections",
		Short: "Show the read-model projections and rebuild them",
		Long: `Show the read-model projections with their lag, and rebuild them.

These commands work on the database directly (DATABASE_URL, or the embedded
cluster in the data directory, which cannot be opened while cairnd runs on
it: use DATABASE_URL then). A rebuild is carried out by the running server,
which looks for requests every second; with no server running, the next one
to start carries it out.`,
	}
	cmd.AddCommand(newProjectionsListCommand(cfg), newProjectionsRebuildCommand(cfg), newProjectionsParkedCommand(cfg))
	return cmd
}

// withStore opens the database as the application role and runs f.
func withStore(ctx context.Context, cfg *config, w io.Writer, f func(*eventstore.Store, *pgxpool.Pool) error) (err error) {
	log := cfg.logger(w)
	be, err := openBackend(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, be.Close()) }()
	owner, err := database.Open(ctx, be.url, database.Options{MaxConns: 1, AppName: "cairnd projections"})
	if err != nil {
		return err
	}
	defer owner.Close()
	st, err := migrations.Check(ctx, owner)
	if err != nil {
		return err
	}
	if !st.UpToDate() {
		return fmt.Errorf("the database schema is at version %d of %d: run `cairnd migrate` first", st.Current, st.Latest)
	}
	serveURL, err := be.serveURL(ctx, owner)
	if err != nil {
		return err
	}
	pool, err := database.Open(ctx, serveURL, database.Options{Role: database.AppRole, MaxConns: 4, AppName: "cairnd projections"})
	if err != nil {
		return err
	}
	defer pool.Close()
	store := eventstore.New(pool, events.Registry(), eventstore.Options{Log: log})
	defer store.Close()
	return f(store, pool)
}

func newProjectionsListCommand(cfg *config) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the projections with their version, state and lag",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd.Context(), cfg, cmd.ErrOrStderr(), func(store *eventstore.Store, pool *pgxpool.Pool) error {
				sts, err := projections.ReadStatus(cmd.Context(), store, pool)
				if err != nil {
					return err
				}
				return writeStatus(cmd.OutOrStdout(), sts)
			})
		},
	}
}

func writeStatus(w io.Writer, sts []projections.Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tBUILD\tSTATE\tCURSOR\tEVENTS BEHIND\tSECONDS BEHIND\tAPPLIED\tPARKED\tLAST ERROR")
	for _, s := range sts {
		state := s.State
		if s.RebuildRequested {
			state += " (rebuild requested)"
		}
		lastErr := "-"
		if s.LastError != "" {
			lastErr = s.LastErrorAt.UTC().Format(time.DateTime) + " " + s.LastError
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%.1f\t%d\t%d\t%s\n", s.Name, s.Version, s.Build, state, s.Cursor,
			s.EventsBehind, s.SecondsBehind, s.Applied, s.Parked, lastErr)
	}
	return tw.Flush()
}

func newProjectionsRebuildCommand(cfg *config) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "rebuild NAME",
		Short: "Rebuild a projection from position zero without downtime",
		Long: `Rebuild a projection from position zero into new tables. Its current tables
keep serving, and keep being updated, until the new build has caught up; then
reads switch over in one transaction and the old tables are dropped.

Projections: ` + strings.Join(models.Names(), ", ") + `.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return withStore(cmd.Context(), cfg, cmd.ErrOrStderr(), func(store *eventstore.Store, pool *pgxpool.Pool) error {
				before := buildOf(cmd.Context(), store, pool, name)
				if err := projections.RequestRebuild(cmd.Context(), pool, name, models.Names()); err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "rebuild of %s requested; the running server carries it out\n", name)
				if wait <= 0 {
					return nil
				}
				return waitRebuilt(cmd.Context(), store, pool, out, name, before, wait)
			})
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the new build to serve reads (0: do not wait)")
	return cmd
}

// buildOf is the live build of a projection (0 if none).
func buildOf(ctx context.Context, store *eventstore.Store, pool *pgxpool.Pool, name string) int {
	sts, err := projections.ReadStatus(ctx, store, pool)
	if err != nil {
		return 0
	}
	for _, s := range sts {
		if s.Name == name && s.State == projections.StateLive {
			return s.Build
		}
	}
	return 0
}

// waitRebuilt polls until a build newer than before is live and none is
// building.
func waitRebuilt(ctx context.Context, store *eventstore.Store, pool *pgxpool.Pool, w io.Writer, name string, before int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		sts, err := projections.ReadStatus(ctx, store, pool)
		if err != nil {
			return err
		}
		live, building := 0, (*projections.Status)(nil)
		for i := range sts {
			switch {
			case sts[i].Name == name && sts[i].State == projections.StateLive:
				live = sts[i].Build
			case sts[i].Name == name && sts[i].State == projections.StateBuilding:
				building = &sts[i]
			}
		}
		if live > before && building == nil {
			fmt.Fprintf(w, "%s rebuilt: build %d serves reads\n", name, live)
			return nil
		}
		select {
		case <-ctx.Done():
			progress := "it has not started: is cairnd running?"
			if building != nil {
				progress = fmt.Sprintf("build %d is %d events behind", building.Build, building.EventsBehind)
			}
			return fmt.Errorf("%s not rebuilt within %s (%s); `cairnd projections list` shows its progress", name, limit, progress)
		case <-time.After(time.Second):
		}
	}
}

func newProjectionsParkedCommand(cfg *config) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "parked [NAME]",
		Short: "List events projections could not apply and went past",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
				known := models.Names()
				if !slices.Contains(known, name) {
					return &projections.UnknownProjectionError{Name: name, Known: known}
				}
			}
			return withStore(cmd.Context(), cfg, cmd.ErrOrStderr(), func(store *eventstore.Store, pool *pgxpool.Pool) error {
				ps, err := projections.ListParked(cmd.Context(), pool, name, limit)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PROJECTION\tBUILD\tCURSOR\tSTREAM\tTYPE\tATTEMPTS\tPARKED AT\tERROR")
				for _, p := range ps {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Projection, p.Build, p.Cursor, p.StreamID, p.EventType,
						p.Attempts, p.ParkedAt.UTC().Format(time.DateTime), p.Error)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "most events to list, newest first")
	return cmd
}
