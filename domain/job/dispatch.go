package job

import (
	"fmt"
	"time"

	"cairn/domain"
)

// Lease hands a queued job to one node's agent until LeaseUntil. For a
// selector target the caller has checked that the node matches.
type Lease struct {
	JobID      string
	NodeID     string
	LeaseUntil time.Time
	At         time.Time
}

// Acknowledge reports that the leased agent received the job.
type Acknowledge struct {
	JobID  string
	NodeID string
	At     time.Time
}

// Start reports that the leased agent began running the job. An agent runs a
// job only once its Start is accepted, so a cancelled or re-leased job never
// runs twice.
type Start struct {
	JobID  string
	NodeID string
	At     time.Time
}

// Finish reports how an attempt ended.
type Finish struct {
	JobID   string
	NodeID  string
	Outcome Status // succeeded, failed, timed_out, or cancelled after a cancel request
	Result  Result
	At      time.Time
}

// ExpireLease reports that a dispatched job's lease ran out before it started.
// NodeGone says whether the leased node is down or decommissioned.
type ExpireLease struct {
	JobID    string
	NodeGone bool
	At       time.Time
}

// MarkLost reports that no one will report how a dispatched or running job
// ended (e.g. its node went down for good).
type MarkLost struct {
	JobID  string
	Reason string
	At     time.Time
}

// Lease decides a lease; the attempt number counts leases.
func (j Job) Lease(c Lease) ([]domain.Event, error) {
	if err := j.admit(c.JobID, CmdLease, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateID("nodeId", c.NodeID); err != nil {
		return nil, err
	}
	if j.Target.NodeID != "" && c.NodeID != j.Target.NodeID {
		return nil, domain.Invalid("nodeId", fmt.Sprintf("job %q runs on node %q only", j.ID, j.Target.NodeID))
	}
	if !c.LeaseUntil.After(c.At) {
		return nil, domain.Invalid("leaseUntil", "must be after the lease time")
	}
	if c.At.Before(j.NotBefore) {
		return nil, domain.Invalid("at", fmt.Sprintf("job %q backs off until %s before its retry", j.ID, j.NotBefore.Format(time.RFC3339)))
	}
	return []domain.Event{Leased{
		JobID: j.ID, NodeID: c.NodeID, Attempt: j.Attempt + 1,
		LeaseUntil: c.LeaseUntil.UTC(), At: c.At.UTC(),
	}}, nil
}

// Acknowledge records receipt; a repeated acknowledgement decides nothing.
func (j Job) Acknowledge(c Acknowledge) ([]domain.Event, error) {
	if err := j.admit(c.JobID, CmdAcknowledge, c.At); err != nil {
		return nil, err
	}
	if err := j.holdsLease(c.NodeID); err != nil {
		return nil, err
	}
	if j.Acknowledged {
		return nil, nil
	}
	return []domain.Event{Acknowledged{JobID: j.ID, NodeID: c.NodeID, At: c.At.UTC()}}, nil
}

// Start moves a dispatched job to running; it implies the acknowledgement.
func (j Job) Start(c Start) ([]domain.Event, error) {
	if err := j.admit(c.JobID, CmdStart, c.At); err != nil {
		return nil, err
	}
	if err := j.holdsLease(c.NodeID); err != nil {
		return nil, err
	}
	return []domain.Event{Started{JobID: j.ID, NodeID: c.NodeID, At: c.At.UTC()}}, nil
}

// Finish ends a running (or cancelling) job with the agent's outcome.
func (j Job) Finish(c Finish) ([]domain.Event, error) {
	if err := j.admit(c.JobID, CmdFinish, c.At); err != nil {
		return nil, err
	}
	if err := j.holdsLease(c.NodeID); err != nil {
		return nil, err
	}
	switch c.Outcome {
	case StatusSucceeded, StatusFailed, StatusTimedOut:
	case StatusCancelled:
		if j.Status != StatusCancelling {
			return nil, domain.Invalid("outcome", "cancelled is reported only after a cancel request")
		}
	default:
		return nil, domain.Invalid("outcome", fmt.Sprintf("%q must be one of succeeded, failed, timed_out, cancelled", c.Outcome))
	}
	if err := validateResult(c.Result); err != nil {
		return nil, err
	}
	r := c.Result
	r.Output = domain.CanonicalJSON(r.Output)
	return []domain.Event{Finished{
		JobID: j.ID, NodeID: c.NodeID, Attempt: j.Attempt, Outcome: c.Outcome, Result: r, At: c.At.UTC(),
	}}, nil
}

// ExpireLease puts a job whose lease ran out unacknowledged back in the
// queue. It is lost instead when its node is gone and no other node can take
// it: the job is pinned to that node, or it has used all its attempts. While
// the node still exists the job waits for it (or another matching node)
// however many leases expire, because it never ran.
//
// A lease on a node that is gone ends at once, whether or not it ran out or
// was acknowledged: nobody will take the job there. While the node exists an
// acknowledged lease does not expire, since its agent holds the job and may
// be starting it; a lease the dispatcher saw unacknowledged is refused here
// when the acknowledgement won the race.
func (j Job) ExpireLease(c ExpireLease) ([]domain.Event, error) {
	if err := j.admit(c.JobID, CmdExpireLease, c.At); err != nil {
		return nil, err
	}
	if !c.NodeGone {
		if c.At.Before(j.LeaseUntil) {
			return nil, domain.Invalid("at", fmt.Sprintf("the lease of job %q runs until %s", j.ID, j.LeaseUntil.Format(time.RFC3339)))
		}
		if j.Acknowledged {
			return nil, domain.Invalid("lease", fmt.Sprintf("the agent of node %q acknowledged job %q: its lease ends only when the node is gone", j.NodeID, j.ID))
		}
	}
	at := c.At.UTC()
	es := []domain.Event{LeaseExpired{JobID: j.ID, NodeID: j.NodeID, Attempt: j.Attempt, At: at}}
	if c.NodeGone && (j.Target.NodeID != "" || j.Attempt >= j.MaxAttempts()) {
		es = append(es, Lost{
			JobID: j.ID, NodeID: j.NodeID, Attempt: j.Attempt, At: at,
			Reason: fmt.Sprintf("lease expired and node %q is gone", j.NodeID),
		})
	}
	return es, nil
}

// MarkLost gives up on a dispatched or running job.
func (j Job) MarkLost(c MarkLost) ([]domain.Event, error) {
	if err := j.admit(c.JobID, CmdMarkLost, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateRequiredText("reason", c.Reason, MaxReasonLength); err != nil {
		return nil, err
	}
	return []domain.Event{Lost{JobID: j.ID, NodeID: j.NodeID, Attempt: j.Attempt, Reason: c.Reason, At: c.At.UTC()}}, nil
}
