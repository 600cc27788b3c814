// Package cluster connects the agent plugin to Cairn's own nodes: Runner
// runs each SAL action as a job through the job commands and waits in the
// log for the node's agent to report how it ended, and Nodes lists the nodes
// that can take work from the nodes read model.
package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"cairn/commands"
	"cairn/commands/jobs"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/plugins/agent"
	"cairn/projections/readmodel"
)

// Actor submits the plugin's jobs.
const Actor = "system:agent-plugin"

// RunnerOptions tune a Runner.
type RunnerOptions struct {
	// Timeout is each job's timeout on the node; default jobs.DefaultTimeout.
	Timeout time.Duration
	// MaxPoll bounds the wait between two looks at a job's stream; default
	// 500 ms (the first looks come sooner).
	MaxPoll time.Duration
}

// Runner implements agent.JobRunner with jobs pinned to one node.
type Runner struct {
	jobs  *jobs.Handlers
	store commands.Loader
	opts  RunnerOptions
}

var _ agent.JobRunner = (*Runner)(nil)

// NewRunner returns a runner submitting through h and reading store.
func NewRunner(h *jobs.Handlers, store commands.Loader, opts RunnerOptions) *Runner {
	if opts.Timeout <= 0 {
		opts.Timeout = jobs.DefaultTimeout
	}
	if opts.MaxPoll <= 0 {
		opts.MaxPoll = 500 * time.Millisecond
	}
	return &Runner{jobs: h, store: store, opts: opts}
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

// RunAction submits the action as a job for nodeID and waits until it ends.
// When ctx ends first the job is cancelled, best effort; the plugin call that
// asked will be repeated, and SAL actions are idempotent.
func (r *Runner) RunAction(ctx context.Context, nodeID, action string, args json.RawMessage) (json.RawMessage, error) {
	out, err := r.jobs.Submit(ctx, commands.Meta{Actor: Actor}, jobs.Submit{
		Spec:    job.Spec{Kind: job.KindAction, Action: action, Args: args},
		Target:  job.Target{NodeID: nodeID},
		Timeout: r.opts.Timeout,
	})
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
			_, _ = r.jobs.Cancel(cctx, commands.Meta{Actor: Actor}, jobs.Cancel{JobID: out.ID, Reason: "the plugin call that asked for it ended"})
			cancel()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, r.opts.MaxPoll)
	}
}

// Nodes implements agent.NodeLister over the nodes read model: online nodes
// that are not cordoned.
type Nodes struct {
	Reader *readmodel.Reader
}

var _ agent.NodeLister = Nodes{}

// Candidates implements agent.NodeLister.
func (n Nodes) Candidates(ctx context.Context) ([]agent.Node, error) {
	var out []agent.Node
	page := readmodel.Page{First: 500}
	for {
		conn, err := n.Reader.ListNodes(ctx, readmodel.NodeFilter{Status: []node.Status{node.StatusOnline}}, page)
		if err != nil {
			return nil, err
		}
		for _, e := range conn.Edges {
			if e.Node.Cordoned {
				continue
			}
			out = append(out, agent.Node{ID: e.Node.ID, Location: e.Node.LocationID, Labels: e.Node.Labels})
		}
		if !conn.PageInfo.HasNextPage {
			return out, nil
		}
		page.After = conn.PageInfo.EndCursor
	}
}
