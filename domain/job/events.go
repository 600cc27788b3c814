package job

import (
	"time"

	"cairn/domain"
)

// Submitted records a new job; it waits in the queue.
type Submitted struct {
	JobID     string        `json:"jobId"`
	ParentID  string        `json:"parentId,omitempty"` // set on a fan-out's child
	Spec      Spec          `json:"spec"`
	Target    Target        `json:"target"`
	Timeout   time.Duration `json:"timeout"`
	Grace     time.Duration `json:"grace"` // between the stop signal and the kill
	Retry     RetryPolicy   `json:"retry"`
	Queue     string        `json:"queue,omitempty"` // jobs of one queue run one at a time per agent
	Submitter string        `json:"submitter"`
	At        time.Time     `json:"at"`
}

// Leased records that one node's agent was handed the job until LeaseUntil.
type Leased struct {
	JobID      string    `json:"jobId"`
	NodeID     string    `json:"nodeId"`
	Attempt    int       `json:"attempt"` // 1 for the first lease
	LeaseUntil time.Time `json:"leaseUntil"`
	At         time.Time `json:"at"`
}

// Acknowledged records that the leased agent received the job.
type Acknowledged struct {
	JobID  string    `json:"jobId"`
	NodeID string    `json:"nodeId"`
	At     time.Time `json:"at"`
}

// Started records that the agent began running the job.
type Started struct {
	JobID  string    `json:"jobId"`
	NodeID string    `json:"nodeId"`
	At     time.Time `json:"at"`
}

// Finished records how an attempt ended, as the agent reported it.
type Finished struct {
	JobID   string    `json:"jobId"`
	NodeID  string    `json:"nodeId"`
	Attempt int       `json:"attempt"`
	Outcome Status    `json:"outcome"` // succeeded, failed, timed_out or cancelled
	Result  Result    `json:"result"`
	At      time.Time `json:"at"`
}

// LeaseExpired records that a lease ran out before the job started; the job is
// back in the queue.
type LeaseExpired struct {
	JobID   string    `json:"jobId"`
	NodeID  string    `json:"nodeId"`
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
}

// Lost records that nobody will report how the job ended.
type Lost struct {
	JobID   string    `json:"jobId"`
	NodeID  string    `json:"nodeId,omitempty"`
	Attempt int       `json:"attempt"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
}

// Cancelled records that a job that had not started will not run.
type Cancelled struct {
	JobID  string    `json:"jobId"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// CancelRequested records that a running job was asked to stop; its agent (or,
// for a fan-out, the process manager) reports how it ended.
type CancelRequested struct {
	JobID  string    `json:"jobId"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// RetryScheduled puts a failed job back in the queue, not to be leased before
// NotBefore.
type RetryScheduled struct {
	JobID     string    `json:"jobId"`
	Attempt   int       `json:"attempt"` // the attempt that failed
	NotBefore time.Time `json:"notBefore"`
	At        time.Time `json:"at"`
}

// ChildrenSpawned records the child jobs of a fan-out, one per matching node.
type ChildrenSpawned struct {
	JobID    string    `json:"jobId"`
	ChildIDs []string  `json:"childIds"`
	At       time.Time `json:"at"`
}

// FanOutCompleted records that every child of a fan-out has ended.
type FanOutCompleted struct {
	JobID   string       `json:"jobId"`
	Counts  FanOutCounts `json:"counts"`
	Outcome Status       `json:"outcome"`
	At      time.Time    `json:"at"`
}

func (Submitted) EventType() string       { return "job.submitted" }
func (Leased) EventType() string          { return "job.leased" }
func (Acknowledged) EventType() string    { return "job.acknowledged" }
func (Started) EventType() string         { return "job.started" }
func (Finished) EventType() string        { return "job.finished" }
func (LeaseExpired) EventType() string    { return "job.lease_expired" }
func (Lost) EventType() string            { return "job.lost" }
func (Cancelled) EventType() string       { return "job.cancelled" }
func (CancelRequested) EventType() string { return "job.cancel_requested" }
func (RetryScheduled) EventType() string  { return "job.retry_scheduled" }
func (ChildrenSpawned) EventType() string { return "job.children_spawned" }
func (FanOutCompleted) EventType() string { return "job.fan_out_completed" }

// RegisterEvents registers every job event at its current schema version.
func RegisterEvents(r *domain.Registry) {
	domain.Register[Submitted](r, 1)
	domain.Register[Leased](r, 1)
	domain.Register[Acknowledged](r, 1)
	domain.Register[Started](r, 1)
	domain.Register[Finished](r, 1)
	domain.Register[LeaseExpired](r, 1)
	domain.Register[Lost](r, 1)
	domain.Register[Cancelled](r, 1)
	domain.Register[CancelRequested](r, 1)
	domain.Register[RetryScheduled](r, 1)
	domain.Register[ChildrenSpawned](r, 1)
	domain.Register[FanOutCompleted](r, 1)
}
