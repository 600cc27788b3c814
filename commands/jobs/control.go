package jobs

import (
	"context"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
)

// DefaultLease is how long an agent holds a job before acknowledging it.
const DefaultLease = 30 * time.Second

// Cancel stops a job that has not ended.
type Cancel struct {
	JobID  string `json:"jobId"`
	Reason string `json:"reason,omitempty"`
}

// Lease hands a queued job to a node's agent for Duration (zero: DefaultLease).
type Lease struct {
	JobID    string        `json:"jobId"`
	NodeID   string        `json:"nodeId"`
	Duration time.Duration `json:"duration,omitempty"`
}

// Acknowledge is the leased agent's receipt.
type Acknowledge struct {
	JobID  string `json:"jobId"`
	NodeID string `json:"nodeId"`
}

// Start is the leased agent's report that the job runs.
type Start struct {
	JobID  string `json:"jobId"`
	NodeID string `json:"nodeId"`
}

// Finish is the leased agent's report of how the job ended.
type Finish struct {
	JobID   string     `json:"jobId"`
	NodeID  string     `json:"nodeId"`
	Outcome job.Status `json:"outcome"`
	Result  job.Result `json:"result"`
}

// ExpireLease reports that a dispatched job's lease ran out.
type ExpireLease struct {
	JobID string `json:"jobId"`
}

// MarkLost gives up on a dispatched or running job.
type MarkLost struct {
	JobID  string `json:"jobId"`
	Reason string `json:"reason"`
}

// Retry queues a failed, timed-out or lost job again after its backoff.
type Retry struct {
	JobID string `json:"jobId"`
}

// SpawnChildren records the child jobs of a fan-out.
type SpawnChildren struct {
	JobID    string   `json:"jobId"`
	ChildIDs []string `json:"childIds"`
}

// CompleteFanOut reports how the children of a fan-out ended.
type CompleteFanOut struct {
	JobID  string           `json:"jobId"`
	Counts job.FanOutCounts `json:"counts"`
}

// Cancel cancels a job that has not started, or asks a running one to stop.
func (h *Handlers) Cancel(ctx context.Context, meta commands.Meta, in Cancel) (commands.Outcome, error) {
	return h.run(ctx, meta, in.JobID, in, func(j job.Job, at time.Time) ([]domain.Event, error) {
		return j.Cancel(job.Cancel{JobID: in.JobID, Reason: in.Reason, At: at})
	})
}

// Lease leases a queued job to a node.
func (h *Handlers) Lease(ctx context.Context, meta commands.Meta, in Lease) (commands.Outcome, error) {
	d := in.Duration
	if d == 0 {
		d = DefaultLease
	}
	return h.run(ctx, meta, in.JobID, in, func(j job.Job, at time.Time) ([]domain.Event, error) {
		return j.Lease(job.Lease{JobID: in.JobID, NodeID: in.NodeID, LeaseUntil: at.Add(d), At: at})
	})
}

// Acknowledge records the leased agent's receipt.
func (h *Handlers) Acknowledge(ctx context.Context, meta commands.Meta, in Acknowledge) (commands.Outcome, error) {
	return h.run(ctx, meta, in.JobID, in, func(j job.Job, at time.Time) ([]domain.Event, error) {
		return j.Acknowledge(job.Acknowledge{JobID: in.JobID, NodeID: in.NodeID, At: at})
	})
}

// Start records that the leased agent runs the job.
func (h *Handlers) Start(ctx context.Context, meta commands.Meta, in Start) (commands.Outcome, error) {
	return h.run(ctx, meta, in.JobID, in, func(j job.Job, at time.Time) ([]domain.Event, error) {
		return j.Start(job.Start{JobID: in.JobID, NodeID: in.NodeID, At: at})
	})
}

// Finish records how the job ended.
func (h *Handlers) Finish(ctx context.Context, meta commands.Meta, in Finish) (commands.Outcome, error) {
	return h.run(ctx, meta, in.JobID, in, func(j job.Job, at time.Time) ([]domain.Event, error) {
		return j.Finish(job.Finish{JobID: in.JobID, NodeID: in.NodeID, Outcome: in.Outcome, Result: in.Result, At: at})
	})
}

// ExpireLease puts the job back in the queue, or ends it as lost when its
// node is down or decommissioned and no other node can take it.
func (h *Handlers) ExpireLease(ctx context.Context, meta commands.Meta, in ExpireLease) (commands.Outcome, error) {
	j, _, err := commands.Load[job.Job](ctx, h.store, domain.JobStream, in.JobID)
	if err != nil {
		return commands.Outcome{}, err
	}
	gone := false
	if j.NodeID != "" {
		n, _, err := commands.Load[node.Node](ctx, h.store, domain.NodeStream, j.NodeID)
		if err != nil {
			return commands.Outcome{}, err
		}
		gone = !n.Exists() || n.Status == node.StatusDown || n.Status == node.StatusDecommissioned
	}
	return h.run(ctx, meta, in.JobID, in, func(j job.Job, at time.Time) ([]domain.Event, error) {
		return j.ExpireLease(job.ExpireLease{JobID: in.JobID, NodeGone: gone, At: at})
	})
}

// MarkLost ends a dispatched or running job as lost.
func (h *Handlers) MarkLost(ctx context.Context, meta commands.Meta, in MarkLost) (commands.Outcome, error) {
	return h.run(ctx, meta, in.JobID, in, func(j job.Job, at time.Time) ([]domain.Event, error) {
		return j.MarkLost(job.MarkLost{JobID: in.JobID, Reason: in.Reason, At: at})
	})
}

// Retry queues the job again after its backoff, while attempts remain.
func (h *Handlers) Retry(ctx context.Context, meta commands.Meta, in Retry) (commands.Outcome, error) {
	return h.run(ctx, meta, in.JobID, in, func(j job.Job, at time.Time) ([]domain.Event, error) {
		return j.Retry(job.Retry{JobID: in.JobID, At: at})
	})
}

// SpawnChildren records a fan-out's children and moves it to running.
func (h *Handlers) SpawnChildren(ctx context.Context, meta commands.Meta, in SpawnChildren) (commands.Outcome, error) {
	return h.run(ctx, meta, in.JobID, in, func(j job.Job, at time.Time) ([]domain.Event, error) {
		return j.SpawnChildren(job.SpawnChildren{JobID: in.JobID, ChildIDs: in.ChildIDs, At: at})
	})
}

// CompleteFanOut ends a fan-out with its children's tally.
func (h *Handlers) CompleteFanOut(ctx context.Context, meta commands.Meta, in CompleteFanOut) (commands.Outcome, error) {
	return h.run(ctx, meta, in.JobID, in, func(j job.Job, at time.Time) ([]domain.Event, error) {
		return j.CompleteFanOut(job.CompleteFanOut{JobID: in.JobID, Counts: in.Counts, At: at})
	})
}
