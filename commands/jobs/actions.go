package jobs

import (
	"cairn/commands"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/plugins/agent"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// ActionActor submits the agent plugin's jobs.
const ActionActor = "system:agent-plugin"

// ActionRunnerOptions tune a Runner.
type ActionRunnerOptions struct {
	// Timeout is each job's timeout on the node; default DefaultTimeout.
	Timeout time.Duration
	// MaxPoll bounds the wait between two looks at a job's stream; default
	// 500 ms (the first looks come sooner).
	MaxPoll time.Duration
}

// ActionRunner implements the agent plugin's JobRunner: each SAL action a
// job pinned to one node, and the plugin call waits in the log for the
// node's agent to report how it ended.
type ActionRunner struct {
	jobs  *Handlers
	store commands.Loader
	opts  ActionRunnerOptions
}

var _ agent.JobRunner = (*ActionRunner)(nil)

// NewActionRunner returns a runner submitting through h and reading store.
func NewActionRunner(h *Handlers, store commands.Loader, opts ActionRunnerOptions) *ActionRunner {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxPoll <= 0 {
		opts.MaxPoll = 500 * time.Millisecond
	}
	return &ActionRunner{jobs: h, store: store, opts: opts}
}

// JobError is a job that did not succeed.
type JobError struct {
	JobID   string
	Node    string
	Action  string
	Status  job.Status
	Message string
}

func (e *JobError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "no error reported"
	}
	return fmt.Sprintf("job %s (%s on node %s) ended %s: %s", e.JobID, e.Action, e.Node, e.Status, msg)
}

// RunAction submits the action as a job for its node and waits until it
// ends. The job belongs to the service's tenant; arguments that hold a
// sensitive value go sealed. When ctx ends first the job is cancelled, best
// effort; the plugin call that asked will be repeated, and SAL actions are
// idempotent.
func (r *ActionRunner) RunAction(ctx context.Context, a agent.Action) (json.RawMessage, error) {
	in := Submit{
		Spec:    job.Spec{Kind: job.KindAction, Action: a.Action, Args: a.Args},
		Target:  job.Target{NodeID: a.NodeID},
		Timeout: r.opts.Timeout,
	}
	if a.Sensitive {
		in.Spec.Args, in.Secrets.Args = nil, a.Args
	}
	nodeID, action := a.NodeID, a.Action
	out, err := r.jobs.Submit(ctx, commands.Meta{Actor: ActionActor, Tenant: a.TenantID}, in)
	if err != nil {
		return nil, err
	}
	wait := 10 * time.Millisecond
	for {
		j, _, err := commands.Load[job.Job](ctx, r.store, domain.JobStream, out.ID)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if err == nil && j.Terminal() {
			if j.Status == job.StatusSucceeded && j.Result != nil {
				return j.Result.Output, nil
			}
			je := &JobError{JobID: out.ID, Node: nodeID, Action: action, Status: j.Status}
			if j.Result != nil {
				je.Message = j.Result.Error
			}
			return nil, je
		}
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, _ = r.jobs.Cancel(cctx, commands.Meta{Actor: ActionActor}, Cancel{JobID: out.ID, Reason: "the plugin call that asked for it ended"})
			cancel()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, r.opts.MaxPoll)
	}
}
