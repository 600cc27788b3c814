package main

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"cairn/eventstore"
	"cairn/projections"
	"cairn/projections/audit"
)

func newReplayCommand(a *app) *cobra.Command {
	var until, drop string
	cmd := &cobra.Command{
		Use:     "replay --until CURSOR|TIME",
		Example: `  cairn replay --until 2026-11-01T00:00:00Z`,
		Short:   "Rebuild every read model as of a moment into a scratch schema",
		Long: `Rebuild every read model (nodes, jobs, services, resources, templates,
tenants, users, API tokens, locations, event volume) and the analytics views
as of a moment, into a new schema of the database ` + DatabaseURLEnv + ` names, so
the whole system can be queried as it was:

  SET search_path TO <schema>;
  SELECT id, status FROM nodes;
  SELECT * FROM analytics_job_outcomes_daily;

--until takes a cursor (the event is included) or a time (RFC 3339, or a
date: every event recorded at or before it). --drop SCHEMA removes a replay
made earlier.`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if drop != "" {
				if until != "" {
					return &usageError{fmt.Errorf("give --until or --drop, not both")}
				}
				return a.withLog(cmd.Context(), func(_ *eventstore.Store, pool *pgxpool.Pool) error {
					if err := audit.DropReplay(cmd.Context(), pool, drop); err != nil {
						return err
					}
					fmt.Fprintf(out, "dropped %s\n", drop)
					return nil
				})
			}
			if until == "" {
				return &usageError{fmt.Errorf("--until is required: a cursor or a time (RFC 3339)")}
			}
			at, err := parsePointFlag("until", until)
			if err != nil {
				return err
			}
			return a.withLog(cmd.Context(), func(store *eventstore.Store, pool *pgxpool.Pool) error {
				res, err := audit.Replay(cmd.Context(), store, pool, at)
				if err != nil {
					return err
				}
				if a.output == outputJSON {
					return writeJSON(out, res)
				}
				printReplay(cmd, res)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&until, "until", "", "the moment: a cursor, or a time (RFC 3339)")
	cmd.Flags().StringVar(&drop, "drop", "", "remove the scratch schema of an earlier replay")
	return cmd
}

func printReplay(cmd *cobra.Command, res projections.ReplayResult) {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "replayed %d events, up to cursor %s, into schema %s\n", res.Events, res.Cursor, res.Schema)
	if len(res.Failed) > 0 {
		fmt.Fprintf(out, "%d events could not be applied and were left out, as the live projections park them:\n", len(res.Failed))
		for _, f := range res.Failed {
			fmt.Fprintf(out, "  %s %s (stream %s) in %s: %s\n", f.Cursor, f.EventType, f.StreamID, f.Projection, f.Error)
		}
	}
	fmt.Fprintf(out, "query it with: SET search_path TO %s;\nremove it with: cairn replay --drop %s\n", res.Schema, res.Schema)
}
