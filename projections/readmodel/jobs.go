package readmodel

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"cairn/domain/job"
)

// Job is a job as the jobs projection keeps it.
type Job struct {
	ID       string
	ParentID string
	// TenantID is the tenant the job was submitted for, if any.
	TenantID  string
	Submitter string
	Spec      job.Spec
	Target    job.Target
	Timeout   time.Duration
	Grace     time.Duration
	Retry     job.RetryPolicy
	Queue     string
	Status    job.Status
	// Attempt counts leases; NodeID is the node of the current or last one.
	Attempt      int
	NodeID       string
	LeaseUntil   time.Time
	Acknowledged bool
	NotBefore    time.Time
	// Result is how the last attempt ended, when an agent reported it.
	Result       *job.Result
	CancelReason string
	LostReason   string
	Children     []string
	Counts       *job.FanOutCounts
	SubmittedAt  time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	UpdatedAt    time.Time
	Version      int64
	Position     int64
}

// OnNode is the node a job belongs to in a node's lists: the node of its
// lease, or before its first lease the node it targets (it waits for that
// node). ListJobs' NodeID filter applies the same rule.
func (j Job) OnNode() string {
	if j.NodeID == "" {
		return j.Target.NodeID
	}
	return j.NodeID
}

// JobFilter narrows a job list. Empty fields match every job.
type JobFilter struct {
	// TenantID scopes the list to one tenant's jobs.
	TenantID string
	// NodeID: the node's jobs, those waiting for it included (Job.OnNode).
	NodeID   string
	Status   []job.Status
	ParentID string
	// TopLevel: only jobs that are not children of a fan-out.
	TopLevel bool
	Kind     job.Kind
	Action   string
	// SubmittedFrom and SubmittedTo bound the submission time: from
	// inclusive, to exclusive; zero is unbounded.
	SubmittedFrom time.Time
	SubmittedTo   time.Time
}

const jobColumns = `id, coalesce(parent_id, ''), coalesce(tenant_id, ''), submitter, spec::text, coalesce(target_node_id, ''),
	coalesce(target_selector::text, ''), coalesce(target_mode, ''), coalesce(target_set::text, ''), max_parallel, timeout_ms, grace_ms, retry_max,
	retry_backoff_ms, coalesce(queue, ''), state, coalesce(node_id, ''), attempt, lease_until, acknowledged, not_before,
	coalesce(result::text, ''), coalesce(cancel_reason, ''), coalesce(lost_reason, ''), children::text,
	coalesce(counts::text, ''), submitted_at, started_at, finished_at, updated_at, stream_version, position`

func scanJob(rows pgx.Row) (Job, error) {
	var j Job
	var spec, selector, mode, set, state, result, children, counts string
	var maxParallel, timeout, grace, retryMax, retryBackoff, attempt int64
	var lease, notBefore, started, finished, updated pgtype.Timestamptz
	err := rows.Scan(&j.ID, &j.ParentID, &j.TenantID, &j.Submitter, &spec, &j.Target.NodeID, &selector, &mode, &set,
		&maxParallel, &timeout, &grace, &retryMax, &retryBackoff, &j.Queue, &state, &j.NodeID, &attempt, &lease,
		&j.Acknowledged, &notBefore, &result, &j.CancelReason, &j.LostReason, &children, &counts, &j.SubmittedAt,
		&started, &finished, &updated, &j.Version, &j.Position)
	if err != nil {
		return j, err
	}
	if err := json.Unmarshal([]byte(spec), &j.Spec); err != nil {
		return j, err
	}
	if err := jsonInto([]byte(selector), &j.Target.Selector); err != nil {
		return j, err
	}
	if err := j.Target.SetFromJSON([]byte(set)); err != nil {
		return j, err
	}
	if err := jsonInto([]byte(result), &j.Result); err != nil {
		return j, err
	}
	if err := jsonInto([]byte(children), &j.Children); err != nil {
		return j, err
	}
	if err := jsonInto([]byte(counts), &j.Counts); err != nil {
		return j, err
	}
	j.Target.Mode, j.Target.MaxParallel, j.Status = job.Mode(mode), int(maxParallel), job.Status(state)
	j.Timeout, j.Grace = time.Duration(timeout)*time.Millisecond, time.Duration(grace)*time.Millisecond
	j.Retry = job.RetryPolicy{Max: int(retryMax), Backoff: time.Duration(retryBackoff) * time.Millisecond}
	j.Attempt, j.LeaseUntil, j.NotBefore = int(attempt), ts(lease), ts(notBefore)
	j.SubmittedAt, j.StartedAt, j.FinishedAt, j.UpdatedAt = j.SubmittedAt.UTC(), ts(started), ts(finished), ts(updated)
	return j, nil
}

// Jobs are listed newest first.
var jobOrder = order{name: "jobs", cols: []string{"submitted_at", "id"}, times: []bool{true, false}, desc: true}

// ListJobs lists jobs, newest first.
func (r *Reader) ListJobs(ctx context.Context, f JobFilter, p Page) (Connection[Job], error) {
	q := &query{}
	if f.TenantID != "" {
		q.add("tenant_id = " + q.arg(f.TenantID))
	}
	if f.NodeID != "" {
		// A node's jobs include those waiting for it: targeted at it and
		// not leased yet.
		n := q.arg(f.NodeID)
		q.add("(node_id = " + n + " OR (node_id IS NULL AND target_node_id = " + n + "))")
	}
	if len(f.Status) > 0 {
		q.add("state = ANY(" + q.arg(strs(f.Status)) + ")")
	}
	if f.ParentID != "" {
		q.add("parent_id = " + q.arg(f.ParentID))
	}
	if f.TopLevel {
		q.add("parent_id IS NULL")
	}
	if f.Kind != "" {
		q.add("kind = " + q.arg(string(f.Kind)))
	}
	if f.Action != "" {
		q.add("action = " + q.arg(f.Action))
	}
	if !f.SubmittedFrom.IsZero() {
		q.add("submitted_at >= " + q.arg(f.SubmittedFrom))
	}
	if !f.SubmittedTo.IsZero() {
		q.add("submitted_at < " + q.arg(f.SubmittedTo))
	}
	return list(ctx, r.db, jobColumns+" FROM "+r.table("jobs"), q, jobOrder, p, scanJob,
		func(j *Job) []any { return []any{j.SubmittedAt, j.ID} })
}

// Job returns one job, or a *domain.NotFoundError.
func (r *Reader) Job(ctx context.Context, id string) (Job, error) {
	return one(ctx, r.db, jobColumns+" FROM "+r.table("jobs"), "job", id, scanJob, func(j *Job) string { return j.ID })
}

// JobsByID returns jobs in the order of ids, nil where none exists.
func (r *Reader) JobsByID(ctx context.Context, ids []string) ([]*Job, error) {
	return byIDs(ctx, r.db, jobColumns+" FROM "+r.table("jobs"), "jobs", ids, scanJob, func(j *Job) string { return j.ID })
}
