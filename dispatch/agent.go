package dispatch

import (
	"context"
	"time"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/joblogs"
	"cairn/nodestats"
)

// The agent operations. The API authenticates the agent and checks that the
// node it names is the credential's own (auth.Can with the OwnNode scope)
// before calling them; each also counts as a sign of life of the node.

// Caller identifies an agent's call: the node it acts for and the command
// id the agent chose, which makes a retried report harmless.
type Caller struct {
	NodeID        string
	CommandID     string
	CorrelationID string
}

func (c Caller) meta() commands.Meta {
	return commands.Meta{Actor: c.NodeID, CommandID: c.CommandID, CorrelationID: c.CorrelationID}
}

// Enroll trades a join token for a new node and its credential.
func (d *Dispatcher) Enroll(ctx context.Context, meta commands.Meta, in access.RedeemJoinToken) (access.Enrollment, error) {
	return d.access.RedeemJoinToken(ctx, meta, in)
}

// Acknowledge confirms that the node's agent received a leased job.
func (d *Dispatcher) Acknowledge(ctx context.Context, c Caller, jobID string) (commands.Outcome, error) {
	d.touch(c.NodeID)
	return d.jobsH.Acknowledge(ctx, c.meta(), jobs.Acknowledge{JobID: jobID, NodeID: c.NodeID})
}

// Start records that the node's agent runs the job. The agent runs it only
// once this succeeded: a cancelled job, or one leased to another node since,
// is refused, so no job runs twice.
func (d *Dispatcher) Start(ctx context.Context, c Caller, jobID string) (commands.Outcome, error) {
	d.touch(c.NodeID)
	return d.jobsH.Start(ctx, c.meta(), jobs.Start{JobID: jobID, NodeID: c.NodeID})
}

// Finish records how the job ended on the node.
func (d *Dispatcher) Finish(ctx context.Context, c Caller, jobID string, outcome job.Status, result job.Result) (commands.Outcome, error) {
	d.touch(c.NodeID)
	out, err := d.jobsH.Finish(ctx, c.meta(), jobs.Finish{JobID: jobID, NodeID: c.NodeID, Outcome: outcome, Result: result})
	if err == nil {
		d.logs.JobChanged(jobID)
	}
	return out, err
}

// AppendLog stores chunks of a job's output sent by the node its last lease
// went to; the job may have ended since (an agent delivers what it buffered
// while disconnected).
func (d *Dispatcher) AppendLog(ctx context.Context, c Caller, jobID string, chunks []joblogs.Chunk) (joblogs.AppendResult, error) {
	d.touch(c.NodeID)
	leasedTo, attempt, err := d.lastLease(ctx, jobID)
	if err != nil {
		return joblogs.AppendResult{}, err
	}
	if leasedTo != c.NodeID {
		return joblogs.AppendResult{}, &job.LeaseError{JobID: jobID, NodeID: c.NodeID, LeasedTo: leasedTo}
	}
	for i := range chunks {
		chunks[i].JobID = jobID
	}
	return d.logs.Append(ctx, jobID, attempt, chunks)
}

// lastLease returns the node and attempt of the job's current or last lease.
func (d *Dispatcher) lastLease(ctx context.Context, jobID string) (string, int, error) {
	d.mu.Lock()
	e := d.jobs[jobID]
	var nodeID string
	var attempt int
	if e != nil {
		nodeID, attempt = e.j.NodeID, e.j.Attempt
		// A lease handed out but not yet applied is the current one: its
		// agent may send output before the event comes back from the log.
		if e.delivered.Attempt > attempt {
			nodeID, attempt = e.delivered.NodeID, e.delivered.Attempt
		}
	}
	d.mu.Unlock()
	if e != nil && nodeID != "" {
		return nodeID, attempt, nil
	}
	j, _, err := commands.Load[job.Job](ctx, d.store, domain.JobStream, jobID)
	if err != nil {
		return "", 0, err
	}
	if !j.Exists() {
		return "", 0, &domain.NotFoundError{Entity: "job", ID: jobID}
	}
	return j.NodeID, j.Attempt, nil
}

// Heartbeat is the reply to an agent's heartbeat.
type Heartbeat struct {
	Node       node.Node
	Version    int64 // of the node's stream, as the dispatcher applied it
	ServerTime time.Time
	// Interval is when the next heartbeat is due.
	Interval time.Duration
	// CancelJobIDs are the jobs of the agent's running list it should stop:
	// asked to stop, ended (lost, say), or leased to another node since.
	CancelJobIDs []string
}

// Heartbeat records a sign of life of the node's agent and tells it which of
// the jobs it runs to stop.
func (d *Dispatcher) Heartbeat(ctx context.Context, c Caller, running []string) (Heartbeat, error) {
	if err := d.waitReady(ctx); err != nil {
		return Heartbeat{}, err
	}
	if err := d.knowNode(ctx, c.NodeID); err != nil {
		return Heartbeat{}, err
	}
	d.mu.Lock()
	n, err := d.agentNode(c.NodeID)
	if err != nil {
		d.mu.Unlock()
		return Heartbeat{}, err
	}
	d.seen(n)
	hb := Heartbeat{Node: n.n, Version: n.version, ServerTime: d.now().UTC(), Interval: d.heartbeatInterval(), CancelJobIDs: []string{}}
	var doubtful []string
	for _, id := range running {
		if e := d.jobs[id]; e == nil || stopsOn(e.j, c.NodeID) {
			doubtful = append(doubtful, id)
		}
	}
	d.mu.Unlock()
	// This replica's view may trail the log (another replica leased the
	// job a moment ago, or the database was away): a job is stopped only
	// when its own stream says so.
	for _, id := range doubtful {
		j, _, err := commands.Load[job.Job](ctx, d.store, domain.JobStream, id)
		if err != nil {
			return Heartbeat{}, err
		}
		if !j.Exists() || stopsOn(j, c.NodeID) {
			hb.CancelJobIDs = append(hb.CancelJobIDs, id)
		}
	}
	return hb, nil
}

// stopsOn reports whether node must stop running job j: it is not the
// job's node, or the job ended, went back to the queue or is being
// cancelled.
func stopsOn(j job.Job, node string) bool {
	return j.NodeID != node || j.Terminal() || j.Status == job.StatusQueued || j.Status == job.StatusCancelling
}

// ReportFacts records the node's facts when they changed.
func (d *Dispatcher) ReportFacts(ctx context.Context, c Caller, facts node.Facts) (commands.Outcome, error) {
	d.touch(c.NodeID)
	return d.nodesH.ReportFacts(ctx, c.meta(), nodes.ReportFacts{NodeID: c.NodeID, Facts: facts})
}

// ReportStats stores a batch of the node's statistics samples.
func (d *Dispatcher) ReportStats(ctx context.Context, c Caller, samples []nodestats.Sample) (int, error) {
	d.touch(c.NodeID)
	return d.stats.Append(ctx, c.NodeID, samples)
}

// JobEnded reports whether a job has ended for good (no retry pending).
func (d *Dispatcher) JobEnded(ctx context.Context, jobID string) (bool, error) {
	d.mu.Lock()
	e := d.jobs[jobID]
	d.mu.Unlock()
	if e != nil && d.Ready() {
		return false, nil
	}
	j, _, err := commands.Load[job.Job](ctx, d.store, domain.JobStream, jobID)
	if err != nil {
		return false, err
	}
	if !j.Exists() {
		return false, &domain.NotFoundError{Entity: "job", ID: jobID}
	}
	return j.Terminal(), nil
}

// touch records a sign of life of a node's agent.
func (d *Dispatcher) touch(nodeID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := d.nodes[nodeID]; n != nil && n.n.Exists() && d.Ready() {
		d.seen(n)
	}
}

// heartbeatInterval is when agents are to send their next heartbeat: the
// configured interval, stretched so that the whole fleet sends at most
// MaxHeartbeatsPerSecond.
func (d *Dispatcher) heartbeatInterval() time.Duration {
	return max(d.opts.HeartbeatInterval, time.Duration(len(d.nodes))*time.Second/time.Duration(d.opts.MaxHeartbeatsPerSecond))
}
