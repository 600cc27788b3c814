package job

import (
	"fmt"
	"time"

	"cairn/domain"
)

// A fan-out is a job whose target is a label selector with mode "all". It does
// not run itself: a process manager resolves the selector, submits one child
// job per matching node (with ParentID set and the node as target), records
// them with SpawnChildren, lets the dispatcher run at most MaxParallel of them
// at a time, and reports their tally with CompleteFanOut.

// SpawnChildren records the child jobs of a queued fan-out. An empty list
// means no node matched.
type SpawnChildren struct {
	JobID    string
	ChildIDs []string
	At       time.Time
}

// CompleteFanOut reports how every child ended.
type CompleteFanOut struct {
	JobID  string
	Counts FanOutCounts
	At     time.Time
}

// SpawnChildren moves the fan-out to running.
func (j Job) SpawnChildren(c SpawnChildren) ([]domain.Event, error) {
	if err := j.admit(c.JobID, CmdSpawnChildren, c.At); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(c.ChildIDs))
	for i, id := range c.ChildIDs {
		field := fmt.Sprintf("childIds[%d]", i)
		if err := domain.ValidateID(field, id); err != nil {
			return nil, err
		}
		if id == j.ID {
			return nil, domain.Invalid(field, "a job cannot be its own child")
		}
		if seen[id] {
			return nil, domain.Invalid(field, fmt.Sprintf("%q is listed twice", id))
		}
		seen[id] = true
	}
	ids := append([]string{}, c.ChildIDs...)
	return []domain.Event{ChildrenSpawned{JobID: j.ID, ChildIDs: ids, At: c.At.UTC()}}, nil
}

// CompleteFanOut ends the fan-out: succeeded when every child succeeded (and
// there was at least one), cancelled when a cancel was requested and not every
// child succeeded, failed otherwise, which includes "no node matched".
func (j Job) CompleteFanOut(c CompleteFanOut) ([]domain.Event, error) {
	if err := j.admit(c.JobID, CmdCompleteFanOut, c.At); err != nil {
		return nil, err
	}
	n := c.Counts
	if n.Succeeded < 0 || n.Failed < 0 || n.TimedOut < 0 || n.Cancelled < 0 || n.Lost < 0 {
		return nil, domain.Invalid("counts", "must not be negative")
	}
	if n.Total() != len(j.Children) {
		return nil, domain.Invalid("counts", fmt.Sprintf("count %d children but job %q has %d", n.Total(), j.ID, len(j.Children)))
	}
	outcome := StatusFailed
	switch {
	case n.Total() > 0 && n.Succeeded == n.Total():
		outcome = StatusSucceeded
	case j.Status == StatusCancelling:
		outcome = StatusCancelled
	}
	return []domain.Event{FanOutCompleted{JobID: j.ID, Counts: n, Outcome: outcome, At: c.At.UTC()}}, nil
}
