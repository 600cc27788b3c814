package job

import (
	"fmt"

	"cairn/domain"
)

// LeaseError refuses a report from a node that does not hold the job's lease,
// e.g. a late message from an agent whose lease expired and was handed on.
type LeaseError struct {
	JobID    string
	NodeID   string // the node that reported
	LeasedTo string // the node that holds the lease
}

func (e *LeaseError) Error() string {
	return fmt.Sprintf("job %q is leased to node %q, not to node %q; drop this report", e.JobID, e.LeasedTo, e.NodeID)
}

// Is makes errors.Is(err, domain.ErrConflict) true.
func (e *LeaseError) Is(target error) bool { return target == domain.ErrConflict }

// RetryLimitError refuses a retry of a job that has used all its attempts.
type RetryLimitError struct {
	JobID       string
	Attempts    int
	MaxAttempts int
}

func (e *RetryLimitError) Error() string {
	return fmt.Sprintf("cannot retry job %q: it has used %d of %d attempts; submit a new job to run it again",
		e.JobID, e.Attempts, e.MaxAttempts)
}

// Is makes errors.Is(err, domain.ErrConflict) true.
func (e *RetryLimitError) Is(target error) bool { return target == domain.ErrConflict }
