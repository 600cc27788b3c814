package dispatch

import (
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/domain/schedule"
	"cairn/eventstore"
)

// jobEntry is the dispatcher's view of a job that has not ended for good:
// its folded state plus what the dispatcher is doing about it. Jobs that
// ended and will not be retried are dropped, so memory follows the open work,
// not the history.
type jobEntry struct {
	j       job.Job
	version int64
	tenant  string
	seq     uint64 // submission order: queued jobs are placed first come, first served

	// leaseCursor is the cursor of the current Leased event; cancelCursor
	// that of the cancel that followed it, if any. They order the node's
	// feed (see feed.go).
	leaseCursor  eventstore.Cursor
	cancelCursor eventstore.Cursor
	// leaseUntil is the lease's deadline as granted (the job's own is
	// cleared once it starts).
	leaseUntil time.Time
	// delivered is the lease handed to the node before the dispatcher has
	// applied its event (see lease): the node may act on it at once.
	delivered job.Leased

	// pending is set while a command the dispatcher issued for the job is
	// in flight, and until the events it appended have been applied
	// (awaitVersion), so the job is not acted on twice from a stale view.
	pending      bool
	awaitVersion int64

	// node is where the job holds a slot: from the moment a lease is issued
	// until the job leaves the node. queue is the serial queue it holds there.
	node  *nodeEntry
	queue string

	fan *fanOut // fan-outs only

	dropped bool // ended for good and forgotten
}

// fanOut tracks a fan-out's children.
type fanOut struct {
	children map[string]bool // child id → ended for good
	ended    int             // children ended for good
	counts   job.FanOutCounts
	active   int // children holding a node slot
}

func (e *jobEntry) pinned() bool { return e.j.Target.NodeID != "" }

// nodeEntry is the dispatcher's view of a node and of the agent connections
// it has in this process.
type nodeEntry struct {
	n       node.Node
	version int64
	// leases are the jobs holding a slot on the node: leased (or being
	// leased) and not ended.
	leases map[string]*jobEntry
	queues map[string]string // serial queue → job holding it
	// Connections of the node's agent in this process: subscriptions and
	// long polls waiting now.
	streams map[*Stream]struct{}
	pollers map[chan struct{}]struct{}
	// lastSeen is when the agent last showed a sign of life to this
	// process (zero: never).
	lastSeen time.Time
	// seenElsewhere is when another replica last said the agent was
	// connected to it (Presence).
	seenElsewhere time.Time
	// presencePublished is when this replica last wrote that the agent is
	// connected to it; zero while it is not.
	presencePublished time.Time
	// cmdPending is set while a liveness command (connect, disconnect,
	// down, drained) is in flight and until its events are applied.
	cmdPending   bool
	awaitVersion int64
	// leasing is set while a lease to the node is being recorded.
	leasing bool
}

func newNodeEntry() *nodeEntry {
	return &nodeEntry{
		leases: map[string]*jobEntry{}, queues: map[string]string{},
		streams: map[*Stream]struct{}{}, pollers: map[chan struct{}]struct{}{},
	}
}

// connected reports whether the node's status says its agent is connected.
func (n *nodeEntry) connected() bool {
	switch n.n.Status {
	case node.StatusOnline, node.StatusDraining, node.StatusDrained:
		return true
	}
	return false
}

// gone reports whether the node will not report on its jobs.
func (n *nodeEntry) gone() bool {
	return n.n.Status == node.StatusDown || n.n.Status == node.StatusDecommissioned
}

type scheduleEntry struct {
	s    schedule.Schedule
	next time.Time // next firing; zero when inactive
}

// apply folds one recorded event into the dispatcher's state and reacts to
// it: deliveries to the node's agent, wake-ups of log tails.
func (d *Dispatcher) apply(rec eventstore.RecordedEvent, ev domain.Event) {
	switch rec.StreamType {
	case streamJob:
		d.applyJob(rec, ev)
	case streamNode:
		d.applyNode(rec, ev)
	case streamSchedule:
		d.applySchedule(rec, ev)
	}
}

func (d *Dispatcher) applyJob(rec eventstore.RecordedEvent, ev domain.Event) {
	id := rec.StreamID[len(streamJob)+1:]
	e := d.jobs[id]
	if sub, ok := ev.(job.Submitted); ok {
		if e != nil {
			return // a replay of what this process applied already
		}
		d.seq++
		e = &jobEntry{seq: d.seq, tenant: rec.Metadata.Tenant}
		if sub.Target.Mode == job.ModeAll {
			e.fan = &fanOut{children: map[string]bool{}}
		}
		d.jobs[id] = e
		d.order = append(d.order, e)
		if p := d.jobs[sub.ParentID]; p != nil && p.fan != nil {
			if _, known := p.fan.children[id]; !known {
				p.fan.children[id] = false
			}
		}
	}
	if e == nil {
		// An event of a job this process dropped as ended (an operator's
		// retry of a lost job, say): read it back from its stream.
		if rec.Type != (job.Submitted{}).EventType() {
			d.reload(id)
		}
		return
	}
	if rec.Version <= e.version {
		return
	}
	e.j.Apply(ev)
	e.version = rec.Version
	if e.pending && e.awaitVersion > 0 && e.version >= e.awaitVersion {
		e.pending, e.awaitVersion = false, 0
	}
	d.touchJob(e)
	if p := d.parent(e); p != nil {
		d.touchJob(p)
	}
	if e.fan != nil {
		// A fan-out's children act on its state (a cancel reaches them).
		for c := range e.fan.children {
			if ce := d.jobs[c]; ce != nil {
				d.touchJob(ce)
			}
		}
	}
	switch ev := ev.(type) {
	case job.Leased:
		// A lease this process recorded was handed over already (lease).
		delivered := e.leaseCursor == rec.Cursor()
		e.leaseCursor, e.cancelCursor, e.leaseUntil = rec.Cursor(), eventstore.Cursor{}, ev.LeaseUntil
		n := d.node(ev.NodeID)
		if e.node != n {
			d.release(e)
			d.reserve(e, n)
		}
		if !delivered {
			d.deliver(n, e, false)
		}
	case job.CancelRequested:
		if e.node != nil {
			e.cancelCursor = rec.Cursor()
			d.deliver(e.node, e, true)
		}
	case job.Cancelled:
		if e.node != nil {
			// The agent has not started it and will be refused if it tries;
			// telling it saves the attempt.
			e.cancelCursor = rec.Cursor()
			d.deliver(e.node, e, true)
		}
		d.release(e)
	case job.LeaseExpired, job.Finished, job.Lost, job.FanOutCompleted:
		d.release(e)
	case job.ChildrenSpawned:
		for _, c := range ev.ChildIDs {
			if _, known := e.fan.children[c]; !known {
				e.fan.children[c] = false
			}
		}
	}
	if e.j.Terminal() {
		if d.logs != nil {
			d.logs.JobChanged(id)
		}
		if !d.retryable(e) {
			d.drop(e)
		}
	}
}

func (d *Dispatcher) applyNode(rec eventstore.RecordedEvent, ev domain.Event) {
	id := rec.StreamID[len(streamNode)+1:]
	n := d.node(id)
	if rec.Version <= n.version {
		return
	}
	n.n.Apply(ev)
	n.version = rec.Version
	d.recheck(n)
	for _, e := range n.leases {
		d.touchJob(e) // its node went down, say
	}
	if n.cmdPending && n.awaitVersion > 0 && n.version >= n.awaitVersion {
		n.cmdPending, n.awaitVersion = false, 0
	}
	switch ev.(type) {
	case node.Decommissioned:
		// Its credential is revoked: end its connections.
		for s := range n.streams {
			s.fail(&NodeGoneError{NodeID: id, Status: string(n.n.Status)})
		}
	}
}

func (d *Dispatcher) applySchedule(rec eventstore.RecordedEvent, ev domain.Event) {
	id := rec.StreamID[len(streamSchedule)+1:]
	s := d.schedules[id]
	if s == nil {
		s = &scheduleEntry{}
		d.schedules[id] = s
	}
	s.s.Apply(ev)
	// Restarting, the most recent firing is tried again if it was due within
	// catchUp: its job id makes a repeat a harmless duplicate. Instants
	// before the schedule existed are not its firings.
	s.next = s.s.Next(later(d.now().Add(-catchUp), s.s.CreatedAt))
}

// catchUp is how far back a schedule's missed firing is still made.
const catchUp = time.Minute

// node returns the entry of a node, creating an empty one for a node whose
// events have not been read yet.
func (d *Dispatcher) node(id string) *nodeEntry {
	n := d.nodes[id]
	if n == nil {
		n = newNodeEntry()
		d.nodes[id] = n
	}
	return n
}

// reserve gives a job a slot on a node (and its serial queue there).
func (d *Dispatcher) reserve(e *jobEntry, n *nodeEntry) {
	e.node = n
	n.leases[e.j.ID] = e
	d.recheck(n)
	if q := e.j.Queue; q != "" {
		e.queue = q
		n.queues[q] = e.j.ID
	}
	if p := d.parent(e); p != nil {
		p.fan.active++
	}
}

// release frees the job's slot on its node.
func (d *Dispatcher) release(e *jobEntry) {
	n := e.node
	if n == nil {
		return
	}
	delete(n.leases, e.j.ID)
	d.recheck(n)
	if e.queue != "" && n.queues[e.queue] == e.j.ID {
		delete(n.queues, e.queue)
	}
	e.node, e.queue = nil, ""
	if p := d.parent(e); p != nil {
		p.fan.active--
	}
}

func (d *Dispatcher) parent(e *jobEntry) *jobEntry {
	if e.j.ParentID == "" {
		return nil
	}
	if p := d.jobs[e.j.ParentID]; p != nil && p.fan != nil {
		return p
	}
	return nil
}

// drop forgets a job that ended for good, counting it in its fan-out.
func (d *Dispatcher) drop(e *jobEntry) {
	d.release(e)
	delete(d.jobs, e.j.ID)
	e.dropped = true
	d.dropped++
	if p := d.parent(e); p != nil {
		if ended, known := p.fan.children[e.j.ID]; !ended || !known {
			p.fan.children[e.j.ID] = true
			p.fan.ended++
			countOutcome(&p.fan.counts, e.j.Status)
			d.touchJob(p)
		}
	}
}

func countOutcome(c *job.FanOutCounts, s job.Status) {
	switch s {
	case job.StatusSucceeded:
		c.Succeeded++
	case job.StatusFailed:
		c.Failed++
	case job.StatusTimedOut:
		c.TimedOut++
	case job.StatusCancelled:
		c.Cancelled++
	case job.StatusLost:
		c.Lost++
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// reload reads back a job this process dropped, after an event showed that
// it is open again.
func (d *Dispatcher) reload(id string) {
	// The stream is read as it is now; events of it still to be applied
	// are skipped by their version.
	ctx := d.runCtx
	go func() {
		j, version, err := commands.Load[job.Job](ctx, d.store, domain.JobStream, id)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn().Err(err).Str("job", id).Msg("dispatcher could not read back a job")
			}
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.jobs[id] != nil || !j.Exists() {
			return
		}
		d.seq++
		e := &jobEntry{j: j, version: version, seq: d.seq}
		if j.IsFanOut() {
			// A fan-out read back knows its children but not how they
			// ended; they are read back in turn as their events come.
			e.fan = &fanOut{children: map[string]bool{}}
		}
		if j.Terminal() && !d.retryable(e) {
			return
		}
		d.jobs[id] = e
		d.order = append(d.order, e)
	}()
}
