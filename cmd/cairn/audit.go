package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/graph/client"
	"cairn/internal/database"
	"cairn/projections/audit"
)

// DatabaseURLEnv names the database the audit and replay commands read.
// With it they work on the event log itself, not through the API: an
// auditor checks the record, not a server's account of it. Without it the
// audit commands go through the server the CLI is logged in to.
const DatabaseURLEnv = "DATABASE_URL"

// viaDatabase reports whether the audit commands read the database.
func (a *app) viaDatabase() bool { return a.getenv(DatabaseURLEnv) != "" }

// auditClient is the logged-in server, for the audit commands without
// DATABASE_URL.
func (a *app) auditClient() (*client.Client, error) {
	c, err := a.client()
	if err != nil {
		return nil, fmt.Errorf("%w (or set %s to read the database itself)", err, DatabaseURLEnv)
	}
	return c, nil
}

// withLog opens the event log of DATABASE_URL, acting as the application
// role, and runs f.
func (a *app) withLog(ctx context.Context, f func(*eventstore.Store, *pgxpool.Pool) error) error {
	url := a.getenv(DatabaseURLEnv)
	if url == "" {
		return &usageError{fmt.Errorf("set %s to the Cairn database: audit and replay read the event log directly", DatabaseURLEnv)}
	}
	pool, err := database.Open(ctx, url, database.Options{Role: database.AppRole, MaxConns: 4, AppName: "cairn audit"})
	if err != nil {
		return err
	}
	defer pool.Close()
	store := eventstore.New(pool, events.Registry(), eventstore.Options{})
	defer store.Close()
	return f(store, pool)
}

func newAuditCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use: "audit",
		Example: `  cairn audit export -f trail.ndjson
  cairn audit verify trail.ndjson --server`,
		Short: "Export the event log and verify its hash chains",
		Long: `Export the event log as NDJSON with every event's hash and chain links, and
verify exports offline or the log itself in the database.

With ` + DatabaseURLEnv + ` set they read that database directly; without it they go
through the server you are logged in to (cairn login), as an auditor or
administrator, while it runs.`,
	}
	cmd.AddCommand(newAuditExportCommand(a), newAuditVerifyCommand(a))
	return cmd
}

func parsePointFlag(name, s string) (audit.Point, error) {
	if s == "" {
		return audit.Point{}, nil
	}
	p, err := audit.ParsePoint(s)
	if err != nil {
		return p, &usageError{fmt.Errorf("--%s: %w", name, err)}
	}
	return p, nil
}

func newAuditExportCommand(a *app) *cobra.Command {
	var from, to, stream, file string
	cmd := &cobra.Command{
		Use: "export",
		Example: `  cairn audit export -f trail.ndjson
  cairn audit export --from 2026-11-01 --to 2026-12-01 --stream node-n1 > november.ndjson`,
		Short: "Write events as NDJSON, one per line, then a trailer",
		Long: `Write the events of a stretch of the log as NDJSON: one line per event in
global order, with its position, cursor, stream, version, type, schema version,
payload, metadata, recording time, previous hash and hash; then a trailer line
with the counts, each stream's last version and hash, and a digest of the event
lines. ` + "`cairn audit verify FILE`" + ` checks such a file offline.

--from and --to take a cursor (as Cairn returns them; 0 is the start) or a time
(RFC 3339, or a date): events after the --from cursor, or recorded at or after
the --from time; up to and including the --to cursor, or the last event
recorded at or before the --to time.`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var o audit.ExportOptions
			var err error
			if o.From, err = parsePointFlag("from", from); err != nil {
				return err
			}
			if o.To, err = parsePointFlag("to", to); err != nil {
				return err
			}
			o.StreamID = stream
			var c *client.Client
			if !a.viaDatabase() {
				if c, err = a.auditClient(); err != nil {
					return err
				}
			}
			var w io.Writer = cmd.OutOrStdout()
			var f *os.File
			if file != "" && file != "-" {
				if f, err = os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
					return fmt.Errorf("create the export file (it must not exist yet): %w", err)
				}
				w = f
			}
			var sum audit.ExportSummary
			if a.viaDatabase() {
				err = a.withLog(cmd.Context(), func(store *eventstore.Store, _ *pgxpool.Pool) error {
					sum, err = audit.Export(cmd.Context(), store, w, o)
					return err
				})
			} else {
				sum, err = exportViaAPI(cmd.Context(), c, o, w, cmd.ErrOrStderr())
			}
			if f != nil {
				err = errors.Join(err, f.Sync(), f.Close())
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d events of %d streams (%s to %s), digest %s\n",
				sum.Events, sum.Streams, sum.First, sum.Last, sum.Digest)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "start after this cursor, or at this time (default: the start of the log)")
	cmd.Flags().StringVar(&to, "to", "", "end at this cursor or time (default: the head of the log now)")
	cmd.Flags().StringVar(&stream, "stream", "", "export only this stream (e.g. node-n1)")
	cmd.Flags().StringVarP(&file, "file", "f", "", "write to this new file instead of standard output")
	return cmd
}

// VerificationFailedError: the file or the log does not verify. The report
// printed before it names the place.
type VerificationFailedError struct{ What string }

func (e *VerificationFailedError) Error() string { return e.What + " does not verify" }

func newAuditVerifyCommand(a *app) *cobra.Command {
	var server bool
	cmd := &cobra.Command{
		Use:   "verify [FILE]",
		Short: "Verify an export offline, or the log in the database (--server)",
		Long: `Verify an export file offline: every event's hash against its content, the
chain of each stream, the global order, and the trailer's counts, digest and
stream heads. The first line that breaks is named. A file rewritten
consistently, every hash recomputed, passes offline: add --server to compare
its stream heads with the log.

With --server and no FILE, verify the hash chain of every stream in the log,
naming the first event that breaks. The log is the database ` + DatabaseURLEnv + `
names, or without it the one of the server you are logged in to.

    cairn audit export -f trail.ndjson
    cairn audit verify trail.ndjson --server
    cairn audit verify --server`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if len(args) == 0 {
				if !server {
					return &usageError{errors.New("give an export FILE to verify, or --server to verify the log itself")}
				}
				return a.verifyLog(cmd.Context(), func(rep eventstore.VerifyReport) error {
					if a.output == outputJSON {
						if err := writeJSON(out, rep); err != nil {
							return err
						}
					} else if b := rep.First(); b != nil {
						fmt.Fprintf(out, "BROKEN: %d streams, %d events; %d broken streams; first break: %s\n", rep.Streams, rep.Events, len(rep.Breaks), b)
					} else {
						fmt.Fprintf(out, "OK: %d streams, %d events; every chain verifies\n", rep.Streams, rep.Events)
					}
					if !rep.OK() {
						return &VerificationFailedError{What: "the event log"}
					}
					return nil
				})
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			rep, err := audit.VerifyFile(f)
			if err != nil {
				return err
			}
			var against []audit.Problem
			if server && rep.OK() {
				if against, err = a.verifyAgainst(cmd.Context(), rep); err != nil {
					return err
				}
			}
			if a.output == outputJSON {
				if err := writeJSON(out, struct {
					File    audit.FileReport
					Against []audit.Problem `json:",omitempty"`
				}{rep, against}); err != nil {
					return err
				}
			} else {
				printFileReport(out, args[0], rep, against, server)
			}
			if !rep.OK() || len(against) > 0 {
				return &VerificationFailedError{What: args[0]}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&server, "server", false, "verify the log itself (in "+DatabaseURLEnv+", or through the server you are logged in to); with FILE, compare the file with it")
	return cmd
}

func printFileReport(w io.Writer, name string, rep audit.FileReport, against []audit.Problem, server bool) {
	if p := rep.First(); p != nil {
		fmt.Fprintf(w, "BROKEN: %s: %s\n", name, p.Error())
		if n := len(rep.Problems); n > 1 {
			fmt.Fprintf(w, "%d problems in all; the first is where the file first breaks\n", n)
		}
		return
	}
	fmt.Fprintf(w, "OK: %s: %d events of %d streams, %d lines\n", name, rep.Events, rep.Streams, rep.Lines)
	if len(rep.Anchored) > 0 {
		fmt.Fprintf(w, "%d streams begin mid-stream in this export; their first event's link to the one before can only be checked with --server\n", len(rep.Anchored))
	}
	switch {
	case len(against) > 0:
		fmt.Fprintf(w, "BROKEN against the log: %s\n", against[0].Error())
	case server:
		fmt.Fprintln(w, "the file's stream heads match the log")
	default:
		fmt.Fprintln(w, "offline checks only: add --server to compare the file with the log")
	}
}
