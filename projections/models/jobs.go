package models

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"cairn/domain/job"
	"cairn/projections"
)

// Jobs keeps one row per job (read.jobs): what it runs, where, how far it
// got and how its last attempt ended. The spec (arguments, environment,
// script) is kept for the API to show to those allowed to see it; the
// analytics views leave it out.
type Jobs struct{}

func (Jobs) Name() string     { return "jobs" }
func (Jobs) Version() int     { return 3 } // 2: queued jobs by target node; 3: target sets
func (Jobs) Tables() []string { return []string{"jobs"} }
func (Jobs) Filter() projections.Filter {
	return projections.Filter{StreamTypes: []string{"job"}}
}

func (Jobs) Setup(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE TABLE %[1]s (
			id              text PRIMARY KEY,
			parent_id       text,
			tenant_id       text,
			submitter       text NOT NULL,
			kind            text NOT NULL,
			action          text,
			spec            json NOT NULL,
			target_node_id  text,
			target_selector json,
			target_mode     text,
			target_set      json,
			max_parallel    bigint NOT NULL,
			timeout_ms      bigint NOT NULL,
			grace_ms        bigint NOT NULL,
			retry_max       bigint NOT NULL,
			retry_backoff_ms bigint NOT NULL,
			queue           text,
			state           text NOT NULL,
			node_id         text,
			attempt         bigint NOT NULL,
			lease_until     timestamptz,
			acknowledged    boolean NOT NULL,
			not_before      timestamptz,
			exit_code       bigint,
			error           text,
			result          json,
			cancel_reason   text,
			lost_reason     text,
			children        json NOT NULL,
			counts          json,
			submitted_at    timestamptz NOT NULL,
			started_at      timestamptz,
			finished_at     timestamptz,
			updated_at      timestamptz,
			stream_version  bigint NOT NULL,
			position        bigint NOT NULL
		) WITH (fillfactor = 80);`, t.Table("jobs")))
	return err
}

func (Jobs) Index(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE INDEX ON %[1]s (submitted_at DESC, id DESC);
		CREATE INDEX ON %[1]s (state, submitted_at DESC, id DESC);
		CREATE INDEX ON %[1]s (node_id, submitted_at DESC, id DESC);
		CREATE INDEX ON %[1]s (tenant_id, submitted_at DESC, id DESC);
		CREATE INDEX ON %[1]s (target_node_id, submitted_at DESC, id DESC) WHERE node_id IS NULL;
		CREATE INDEX ON %[1]s (parent_id, submitted_at DESC, id DESC) WHERE parent_id IS NOT NULL;`, t.Table("jobs")))
	return err
}

type jobRow struct {
	job.Job
	tenant   string
	version  int64
	position int64
	// submitted says the batch applied the job's submission, which sets
	// what never changes after it (the spec, the target, the tenant): a
	// row loaded from the table has only its changing columns (loadJobs)
	// and, unless submitted, only those are written back.
	submitted bool
}

var jobColumns = []column{
	{"id", kText}, {"parent_id", kNText}, {"tenant_id", kNText}, {"submitter", kText}, {"kind", kText},
	{"action", kNText}, {"spec", kJSON}, {"target_node_id", kNText}, {"target_selector", kJSON}, {"target_mode", kNText},
	{"target_set", kJSON}, {"max_parallel", kInt}, {"timeout_ms", kInt}, {"grace_ms", kInt}, {"retry_max", kInt}, {"retry_backoff_ms", kInt},
	{"queue", kNText}, {"state", kText}, {"node_id", kNText}, {"attempt", kInt}, {"lease_until", kTime},
	{"acknowledged", kBool}, {"not_before", kTime}, {"exit_code", kNInt}, {"error", kNText}, {"result", kJSON},
	{"cancel_reason", kNText}, {"lost_reason", kNText}, {"children", kJSON}, {"counts", kJSON},
	{"submitted_at", kTime}, {"started_at", kTime}, {"finished_at", kTime},
	{"updated_at", kTime}, {"stream_version", kInt}, {"position", kInt},
}

// jobChangeColumns are the columns a job's events after its submission
// change. Rewriting only these, rather than the whole row with its spec,
// keeps a fan-out's 30,000 updates of leases, starts and results from
// encoding, sending and parsing every child's spec again each time.
var jobChangeColumns = []column{
	{"id", kText}, {"state", kText}, {"node_id", kNText}, {"attempt", kInt}, {"lease_until", kTime},
	{"acknowledged", kBool}, {"not_before", kTime}, {"exit_code", kNInt}, {"error", kNText}, {"result", kJSON},
	{"cancel_reason", kNText}, {"lost_reason", kNText}, {"children", kJSON}, {"counts", kJSON},
	{"started_at", kTime}, {"finished_at", kTime}, {"updated_at", kTime}, {"stream_version", kInt}, {"position", kInt},
}

func (Jobs) Apply(ctx context.Context, tx pgx.Tx, t projections.Target, evs []projections.Event) error {
	rows, err := fold(ctx, tx, evs, "job", loadJobs(t), func(j *jobRow, e *projections.Event) {
		j.Job.Apply(e.Data)
		if _, ok := e.Data.(job.Submitted); ok {
			// A job belongs to the tenant its submitter acted for.
			j.tenant = e.Metadata.Tenant
			j.submitted = true
		}
		if j.ID == "" {
			j.ID = e.EntityID()
		}
		if j.SubmittedAt.IsZero() {
			// Lists sort by it; a stream whose submission was parked sorts
			// by the first event that was applied.
			j.SubmittedAt = e.RecordedAt.UTC()
		}
		j.version, j.position = e.Version, e.Position
	})
	if err != nil {
		return err
	}
	out, changed := newSplit(jobColumns...), newRowset(jobChangeColumns...)
	for _, f := range rows {
		j := f.state
		var result, counts []byte
		var exit int64
		var errText string
		if j.Result != nil {
			exit, errText = int64(j.Result.ExitCode), j.Result.Error
			result, _ = json.Marshal(j.Result)
		}
		if j.Counts.Total() > 0 {
			counts, _ = json.Marshal(j.Counts)
		}
		children := j.Children
		if children == nil {
			children = []string{}
		}
		if f.existed && !j.submitted {
			changed.text(j.ID).text(string(j.Status)).ntext(j.NodeID).int(int64(j.Attempt)).time(j.LeaseUntil).
				bool(j.Acknowledged).time(j.NotBefore).nint(exit, j.Result != nil).ntext(errText).json(result).
				ntext(j.CancelReason).ntext(j.LostReason).jsonOf(children).json(counts).
				time(j.StartedAt).time(j.FinishedAt).time(j.UpdatedAt).int(j.version).int(j.position)
			continue
		}
		var selector []byte
		if len(j.Target.Selector) > 0 {
			selector, _ = json.Marshal(j.Target.Selector)
		}
		out.row(f.existed).text(j.ID).ntext(j.ParentID).ntext(j.tenant).text(j.Submitter).text(string(j.Spec.Kind)).
			ntext(j.Spec.Action).jsonOf(j.Spec).ntext(j.Target.NodeID).json(selector).ntext(string(j.Target.Mode)).
			json(j.Target.SetJSON()).int(int64(j.Target.MaxParallel)).int(j.Timeout.Milliseconds()).int(j.Grace.Milliseconds()).
			int(int64(j.Retries.Max)).int(j.Retries.Backoff.Milliseconds()).
			ntext(j.Queue).text(string(j.Status)).ntext(j.NodeID).int(int64(j.Attempt)).time(j.LeaseUntil).
			bool(j.Acknowledged).time(j.NotBefore).nint(exit, j.Result != nil).ntext(errText).json(result).
			ntext(j.CancelReason).ntext(j.LostReason).jsonOf(children).json(counts).
			time(j.SubmittedAt).time(j.StartedAt).time(j.FinishedAt).
			time(j.UpdatedAt).int(j.version).int(j.position)
	}
	return write(ctx, tx, append(out.writes(t.Table("jobs"), "id"), changed.update(t.Table("jobs"), []string{"id"})...)...)
}

// loadJobs reads the changing columns (jobChangeColumns) of the jobs' rows:
// an event after the submission reads nothing else of a job, and the
// spec, the largest part of a row, is not decoded for nothing.
func loadJobs(t projections.Target) func(context.Context, pgx.Tx, []string) (map[string]*jobRow, error) {
	sql := `SELECT id, state, coalesce(node_id, ''), attempt, lease_until, acknowledged, not_before,
		coalesce(result::text, ''), coalesce(cancel_reason, ''), coalesce(lost_reason, ''), children::text,
		coalesce(counts::text, ''), started_at, finished_at, updated_at, stream_version, position
		FROM ` + t.Table("jobs") + ` WHERE id = ANY($1)`
	return func(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*jobRow, error) {
		return loadRows(ctx, tx, sql, ids, func(rows pgx.Rows, j *jobRow) (string, error) {
			var state, result, children, counts string
			var attempt int64
			var lease, notBefore, started, finished, updated pgtype.Timestamptz
			err := rows.Scan(&j.ID, &state, &j.NodeID, &attempt, &lease, &j.Acknowledged, &notBefore,
				&result, &j.CancelReason, &j.LostReason, &children, &counts, &started, &finished, &updated,
				&j.version, &j.position)
			if err != nil {
				return "", err
			}
			for _, f := range []struct {
				name string
				raw  string
				into any
			}{{"result", result, &j.Result}, {"children", children, &j.Children}, {"counts", counts, &j.Counts}} {
				if f.raw == "" {
					continue
				}
				if err := json.Unmarshal([]byte(f.raw), f.into); err != nil {
					return "", fmt.Errorf("job %q: %s: %w", j.ID, f.name, err)
				}
			}
			j.Status, j.Attempt = job.Status(state), int(attempt)
			j.LeaseUntil, j.NotBefore = ts(lease), ts(notBefore)
			j.StartedAt, j.FinishedAt, j.UpdatedAt = ts(started), ts(finished), ts(updated)
			return j.ID, nil
		})
	}
}
