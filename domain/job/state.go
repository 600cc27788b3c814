package job

import (
	"maps"
	"slices"
	"time"

	"cairn/domain"
)

// Status is where a job is in its life.
type Status string

const (
	StatusQueued     Status = "queued"     // waiting for a lease
	StatusDispatched Status = "dispatched" // leased to one agent, not started
	StatusRunning    Status = "running"    // running on its node; for a fan-out, its children run
	StatusCancelling Status = "cancelling" // running, asked to stop
	StatusSucceeded  Status = "succeeded"
	StatusFailed     Status = "failed"
	StatusTimedOut   Status = "timed_out"
	StatusCancelled  Status = "cancelled"
	StatusLost       Status = "lost" // nobody will report how it ended
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{
	StatusQueued, StatusDispatched, StatusRunning, StatusCancelling,
	StatusSucceeded, StatusFailed, StatusTimedOut, StatusCancelled, StatusLost,
}

// Job is the state of one job, folded from its events.
type Job struct {
	ID        string
	ParentID  string
	Spec      Spec
	Target    Target
	Timeout   time.Duration
	Grace     time.Duration
	Retries   RetryPolicy
	Queue     string
	Submitter string
	Status    Status

	Attempt      int       // leases so far
	NodeID       string    // node of the current or last lease
	LeaseUntil   time.Time // zero when not leased
	Acknowledged bool      // the leased agent confirmed receipt
	NotBefore    time.Time // set by a retry's backoff

	Result       *Result // how the last attempt ended, if an agent reported it
	CancelReason string
	LostReason   string

	Children []string     // fan-out only
	Counts   FanOutCounts // fan-out only, once completed

	SubmittedAt time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	UpdatedAt   time.Time
}

// Exists reports whether the job has been submitted.
func (j Job) Exists() bool { return j.Status != "" }

// IsFanOut reports whether the job runs on every node a selector picks, through
// child jobs, instead of running itself.
func (j Job) IsFanOut() bool { return j.Target.Mode == ModeAll }

// MaxAttempts is the first attempt plus the retries.
func (j Job) MaxAttempts() int { return j.Retries.Max + 1 }

// Terminal reports whether the job has ended for good or until a retry.
func (j Job) Terminal() bool {
	switch j.Status {
	case StatusSucceeded, StatusFailed, StatusTimedOut, StatusCancelled, StatusLost:
		return true
	}
	return false
}

// Apply folds one event into the state. Unknown events are ignored.
func (j *Job) Apply(e domain.Event) {
	switch e := e.(type) {
	case Submitted:
		*j = Job{
			ID: e.JobID, ParentID: e.ParentID, Spec: e.Spec.Clone(), Target: e.Target.clone(),
			Timeout: e.Timeout, Grace: e.Grace, Retries: e.Retry, Queue: e.Queue,
			Submitter: e.Submitter, Status: StatusQueued, SubmittedAt: e.At, UpdatedAt: e.At,
		}
	case Leased:
		j.UpdatedAt = e.At
		j.Status = StatusDispatched
		j.Attempt = e.Attempt
		j.NodeID = e.NodeID
		j.LeaseUntil = e.LeaseUntil
		j.Acknowledged = false
		j.NotBefore = time.Time{}
	case Acknowledged:
		j.UpdatedAt = e.At
		j.Acknowledged = true
	case Started:
		j.UpdatedAt = e.At
		j.Status = StatusRunning
		j.Acknowledged = true
		j.LeaseUntil = time.Time{}
		j.StartedAt = e.At
	case Finished:
		j.UpdatedAt = e.At
		j.Status = e.Outcome
		r := e.Result
		r.Output = slices.Clone(r.Output)
		j.Result = &r
		j.FinishedAt = e.At
	case LeaseExpired:
		j.UpdatedAt = e.At
		j.Status = StatusQueued
		j.LeaseUntil = time.Time{}
		j.Acknowledged = false
	case Lost:
		j.UpdatedAt = e.At
		j.Status = StatusLost
		j.LostReason = e.Reason
		j.LeaseUntil = time.Time{}
		j.FinishedAt = e.At
	case Cancelled:
		j.UpdatedAt = e.At
		j.Status = StatusCancelled
		j.CancelReason = e.Reason
		j.LeaseUntil = time.Time{}
		j.FinishedAt = e.At
	case CancelRequested:
		j.UpdatedAt = e.At
		j.Status = StatusCancelling
		j.CancelReason = e.Reason
	case RetryScheduled:
		j.UpdatedAt = e.At
		j.Status = StatusQueued
		j.NotBefore = e.NotBefore
		j.Result = nil
		j.LostReason = ""
		j.FinishedAt = time.Time{}
	case ChildrenSpawned:
		j.UpdatedAt = e.At
		j.Status = StatusRunning
		j.Children = slices.Clone(e.ChildIDs)
		j.StartedAt = e.At
	case FanOutCompleted:
		j.UpdatedAt = e.At
		j.Status = e.Outcome
		j.Counts = e.Counts
		j.FinishedAt = e.At
	}
}

// Clone is a deep copy of the spec.
func (s Spec) Clone() Spec {
	s.Args = slices.Clone(s.Args)
	s.SecretArgs = slices.Clone(s.SecretArgs)
	if s.Exec != nil {
		x := *s.Exec
		x.Argv = slices.Clone(x.Argv)
		x.Env = maps.Clone(x.Env)
		x.SecretEnv = maps.Clone(x.SecretEnv)
		s.Exec = &x
	}
	if s.Script != nil {
		x := *s.Script
		s.Script = &x
	}
	return s
}

func (t Target) clone() Target {
	t.Selector = maps.Clone(t.Selector)
	t.Requirements = slices.Clone(t.Requirements)
	for i := range t.Requirements {
		t.Requirements[i].Values = slices.Clone(t.Requirements[i].Values)
	}
	return t
}
