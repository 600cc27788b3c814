package job

import (
	"time"

	"cairn/domain"
)

// Cancel stops a job that has not ended.
type Cancel struct {
	JobID  string
	Reason string
	At     time.Time
}

// Retry queues a failed, timed-out or lost job again after its backoff.
type Retry struct {
	JobID string
	At    time.Time
}

// Cancel cancels a queued or dispatched job at once (its agent has not started
// it, and an agent only runs a job once Start is accepted). A running job is
// asked to stop and becomes cancelling until its agent (or, for a fan-out, the
// process manager) reports the end. Cancelling it again decides nothing.
func (j Job) Cancel(c Cancel) ([]domain.Event, error) {
	if err := j.admit(c.JobID, CmdCancel, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateText("reason", c.Reason, MaxReasonLength); err != nil {
		return nil, err
	}
	switch j.Status {
	case StatusQueued, StatusDispatched:
		return []domain.Event{Cancelled{JobID: j.ID, Reason: c.Reason, At: c.At.UTC()}}, nil
	case StatusRunning:
		return []domain.Event{CancelRequested{JobID: j.ID, Reason: c.Reason, At: c.At.UTC()}}, nil
	}
	return nil, nil // cancelling already
}

// Retry requeues the job with NotBefore = At + Backoff·2^(attempt-1), capped
// at BackoffCap, while attempts remain.
func (j Job) Retry(c Retry) ([]domain.Event, error) {
	if err := j.admit(c.JobID, CmdRetry, c.At); err != nil {
		return nil, err
	}
	if j.Attempt >= j.MaxAttempts() {
		return nil, &RetryLimitError{JobID: j.ID, Attempts: j.Attempt, MaxAttempts: j.MaxAttempts()}
	}
	at := c.At.UTC()
	return []domain.Event{RetryScheduled{
		JobID: j.ID, Attempt: j.Attempt, NotBefore: at.Add(Backoff(j.Retries.Backoff, j.Attempt)), At: at,
	}}, nil
}

// Backoff is the wait before retrying after attempt number attempt (1-based):
// base·2^(attempt-1), capped at BackoffCap.
func Backoff(base time.Duration, attempt int) time.Duration {
	d := min(base, BackoffCap)
	for i := 1; i < attempt && d < BackoffCap; i++ {
		d *= 2
	}
	return min(d, BackoffCap)
}
