package job

import (
	"fmt"
	"slices"
	"time"

	"cairn/domain"
)

const entity = "job"

// Submit queues a new job. The caller may choose the id; a duplicate is refused.
// The caller applies defaults (timeout, grace, queue) before submitting: the
// domain only checks them.
type Submit struct {
	JobID     string
	ParentID  string // set when a fan-out spawns this job as its child
	Spec      Spec
	Target    Target
	Timeout   time.Duration
	Grace     time.Duration
	Retry     RetryPolicy
	Queue     string
	Submitter string // who submitted: a user id, a token id, a process manager
	At        time.Time
}

// Submit decides the submission of a job that does not exist yet.
func (j Job) Submit(c Submit) ([]domain.Event, error) {
	if j.Exists() {
		return nil, j.refuse(CmdSubmit)
	}
	if err := domain.FirstError(
		domain.ValidateID("jobId", c.JobID),
		validateParent(c.ParentID, c.JobID),
		validateSpec(c.Spec),
		validateTarget(c.Target, c.ParentID != ""),
		validateDurations(c.Timeout, c.Grace),
		validateRetry(c.Retry),
		validateQueue(c.Queue),
		domain.ValidateRequiredText("submitter", c.Submitter, 256),
		domain.ValidateAt(c.At),
	); err != nil {
		return nil, err
	}
	spec := c.Spec.Clone()
	spec.Args = domain.CanonicalJSON(spec.Args)
	return []domain.Event{Submitted{
		JobID: c.JobID, ParentID: c.ParentID, Spec: spec, Target: c.Target.clone(),
		Timeout: c.Timeout, Grace: c.Grace, Retry: c.Retry, Queue: c.Queue,
		Submitter: c.Submitter, At: c.At.UTC(),
	}}, nil
}

// admit checks that the command addresses this existing job, suits its kind
// (one node or fan-out), is allowed in its status, and has a time.
func (j Job) admit(id, command string, at time.Time) error {
	if !j.Exists() {
		return &domain.NotFoundError{Entity: entity, ID: id}
	}
	if id != j.ID {
		return domain.Invalid("jobId", fmt.Sprintf("is %q but the loaded job is %q", id, j.ID))
	}
	if !appliesTo(command, j.IsFanOut()) {
		if j.IsFanOut() {
			return domain.Invalid("jobId", fmt.Sprintf("job %q fans out to every matching node; %s its child jobs instead", j.ID, command))
		}
		return domain.Invalid("jobId", fmt.Sprintf("job %q runs on one node; only a fan-out (target mode all) accepts %s", j.ID, command))
	}
	if !slices.Contains(Allowed[j.Status], command) {
		return j.refuse(command)
	}
	return domain.ValidateAt(at)
}

// holdsLease refuses a report from a node other than the lease holder.
func (j Job) holdsLease(nodeID string) error {
	if nodeID != j.NodeID {
		return &LeaseError{JobID: j.ID, NodeID: nodeID, LeasedTo: j.NodeID}
	}
	return nil
}

func (j Job) refuse(command string) error {
	return &domain.StateError{Entity: entity, ID: j.ID, Command: command, State: string(j.Status)}
}
