package dispatch

import (
	"context"
	"errors"
	"slices"
	"time"

	"cairn/commands"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/eventstore"
)

// pass looks at every open job, node and schedule and starts the commands
// the current state calls for. It runs under d.mu after each batch of events
// and on every tick; a job with a command in flight is skipped until that
// command's events have been applied.
//
// A pass after a batch of events (full false) acts on the jobs the batch
// changed and on the queued ones (capacity may have come free); a full pass
// (each tick) acts on every open job, for the decisions time brings:
// leases expiring, retries coming due.
func (d *Dispatcher) pass(now time.Time, full bool) {
	if d.runCtx == nil {
		return
	}
	owns := d.owner == nil || d.owner.Owns()
	if owns && !d.owned {
		// A new owner gives agents their grace period from now: nobody
		// watched them while the decisions had no owner (see checkNode).
		// What changed meanwhile was not looked at: look at everything.
		d.started, full, d.nodesSwept = now, true, time.Time{}
	}
	d.owned = owns
	if !owns {
		// Another replica decides; what changed is its business.
		clear(d.touchedJobs)
		clear(d.touched)
		return
	}
	for _, e := range d.order {
		if e.dropped || e.pending {
			continue
		}
		if _, changed := d.touchedJobs[e]; full || changed || e.j.Status == job.StatusQueued {
			d.act(e, now)
		}
	}
	clear(d.touchedJobs)
	if d.dropped > len(d.order)/2 {
		d.order = slices.DeleteFunc(d.order, func(e *jobEntry) bool { return e.dropped })
		d.dropped = 0
	}
	// A pass follows every batch of events: checking every node each time
	// would cost a fleet's size per event. Nodes whose state changed are
	// checked at once; the rest (whose only news is time passing) once per
	// sweep.
	if now.Sub(d.nodesSwept) >= d.nodeSweep() || now.Before(d.nodesSwept) {
		d.nodesSwept = now
		for _, n := range d.nodes {
			d.checkNode(n, now)
		}
	} else {
		for n := range d.touched {
			d.checkNode(n, now)
		}
	}
	clear(d.touched)
	for _, s := range d.schedules {
		d.fire(s, now)
	}
}

// act starts the one command job e needs now, if any.
func (d *Dispatcher) act(e *jobEntry, now time.Time) {
	p := d.parent(e)
	parentStopping := p != nil && p.j.Status == job.StatusCancelling
	switch {
	case e.fan != nil:
		d.actFanOut(e, now)
	case e.j.Terminal():
		if d.retryable(e) {
			d.retry(e)
		} else {
			d.drop(e)
		}
	case parentStopping && e.j.Status != job.StatusCancelling:
		d.command(e, "cancel", func(ctx context.Context) (commands.Outcome, error) {
			return d.jobsH.Cancel(ctx, d.meta(e.tenant), jobs.Cancel{JobID: e.j.ID, Reason: "its fan-out " + p.j.ID + " was cancelled"})
		})
	case e.j.Status == job.StatusQueued && e.pinned() && d.nodeGone(e.j.Target.NodeID):
		// Its node is down or decommissioned: nobody will take it (a repair
		// waiting on it would wait for ever; it is placed elsewhere instead).
		n := d.nodes[e.j.Target.NodeID].n
		reason := "node " + n.Hostname + " is " + string(n.Status) + ": nobody will take the job"
		d.command(e, "cancel", func(ctx context.Context) (commands.Outcome, error) {
			return d.jobsH.Cancel(ctx, d.meta(e.tenant), jobs.Cancel{JobID: e.j.ID, Reason: reason})
		})
	case e.j.Status == job.StatusQueued:
		d.place(e, p, now)
	case e.j.Status == job.StatusDispatched:
		// Unacknowledged leases expire; an acknowledged one waits for its
		// agent unless the node is gone. A lease on a node that is down or
		// decommissioned ends at once: nobody will take it, and a repair
		// waiting on the job would wait out the lease for nothing.
		gone := d.nodeGone(e.j.NodeID)
		expired := !now.Before(e.j.LeaseUntil) || gone
		if expired && (!e.j.Acknowledged || e.node == nil || gone) {
			d.command(e, "expire lease", func(ctx context.Context) (commands.Outcome, error) {
				return d.jobsH.ExpireLease(ctx, d.meta(e.tenant), jobs.ExpireLease{JobID: e.j.ID})
			})
		}
	case e.j.Status == job.StatusRunning || e.j.Status == job.StatusCancelling:
		if e.node != nil && e.node.gone() {
			reason := "node " + e.j.NodeID + " is " + string(e.node.n.Status) + ": nobody will report how the job ended"
			d.command(e, "mark lost", func(ctx context.Context) (commands.Outcome, error) {
				return d.jobsH.MarkLost(ctx, d.meta(e.tenant), jobs.MarkLost{JobID: e.j.ID, Reason: reason})
			})
		}
	}
}

// nodeGone reports whether a node is down or decommissioned.
func (d *Dispatcher) nodeGone(nodeID string) bool {
	n := d.nodes[nodeID]
	return n != nil && n.gone()
}

// retryable reports whether a job that ended will run again: it failed,
// timed out or was lost with attempts left, and, when lost, another node may
// take it (a job pinned to a node that went away would only wait for it).
// A fan-out's child is not retried once the fan-out is being cancelled.
func (d *Dispatcher) retryable(e *jobEntry) bool {
	if e.fan != nil || e.j.Attempt >= e.j.MaxAttempts() {
		return false
	}
	switch e.j.Status {
	case job.StatusFailed, job.StatusTimedOut:
	case job.StatusLost:
		if e.pinned() {
			return false
		}
	default:
		return false
	}
	if e.j.ParentID != "" {
		p := d.jobs[e.j.ParentID]
		if p == nil || p.j.Status != job.StatusRunning {
			return false
		}
	}
	return true
}

func (d *Dispatcher) retry(e *jobEntry) {
	d.command(e, "retry", func(ctx context.Context) (commands.Outcome, error) {
		return d.jobsH.Retry(ctx, d.meta(e.tenant), jobs.Retry{JobID: e.j.ID})
	})
}

// place leases a queued job to a node that can take it now, if there is one.
func (d *Dispatcher) place(e *jobEntry, parent *jobEntry, now time.Time) {
	if now.Before(e.j.NotBefore) {
		return
	}
	if parent != nil {
		if parent.j.Status != job.StatusRunning {
			return
		}
		if max := parent.j.Target.MaxParallel; max > 0 && parent.fan.active >= max {
			return
		}
	}
	var target *nodeEntry
	if e.pinned() {
		if n := d.nodes[e.j.Target.NodeID]; n != nil && d.canTake(n, e, now) {
			target = n
		}
	} else {
		target = d.pick(e, now)
	}
	if target == nil {
		return
	}
	d.lease(e, target, now)
}

// lease leases job e to node n. The dispatcher decides the lease itself,
// from the state it applied (the stream's version is the expected one, so
// a change it has not seen yet makes the append fail rather than decide
// twice), and hands the lease to the node's connections the moment it is
// recorded, without waiting to read it back from the log. One lease per
// node is in flight at a time, so a node's leases reach it in log order.
//
// The lease's period starts when it is appended, not when it was decided:
// a fan-out to 10,000 nodes decides every lease in one pass, and the last
// were appended 18 s later, with less than half of a 30 s lease left.
func (d *Dispatcher) lease(e *jobEntry, n *nodeEntry, now time.Time) {
	decided, nodeID := e.j, n.n.ID
	leaseAt := func(at time.Time) ([]domain.Event, error) {
		return decided.Lease(job.Lease{JobID: decided.ID, NodeID: nodeID, LeaseUntil: at.Add(d.opts.Lease), At: at})
	}
	if _, err := leaseAt(now); err != nil {
		d.log.Debug().Err(err).Str("job", e.j.ID).Msg("lease not decided")
		return
	}
	d.reserve(e, n)
	n.leasing = true
	id, version, tenant := e.j.ID, e.version, e.tenant
	var evs []domain.Event
	d.launchFor(e, "lease", func(ctx context.Context) (commands.Outcome, error) {
		var err error
		if evs, err = leaseAt(later(now, d.now())); err != nil {
			return commands.Outcome{}, err
		}
		stream := domain.StreamID(domain.JobStream, id)
		res, err := d.store.Append(ctx, eventstore.AppendRequest{
			Metadata: eventstore.Metadata{Actor: Actor, Tenant: tenant},
			Streams: []eventstore.StreamAppend{{
				StreamID: stream, StreamType: domain.JobStream,
				Expected: eventstore.Exactly(version), Events: evs,
			}},
		})
		if err != nil {
			return commands.Outcome{}, err
		}
		// Before the agent hears of the lease: its start comes next.
		d.written.Wrote(stream, version, tenant, evs)
		return commands.Outcome{Result: commands.ResultFor(res, domain.JobStream, id), ID: id}, nil
	}, func(out commands.Outcome, err error) {
		n.leasing = false
		if err != nil {
			if e.node == n && e.j.Status == job.StatusQueued {
				d.release(e)
			}
			return
		}
		if e.dropped || e.version >= out.Version {
			return // the event was applied (and delivered) already
		}
		leased := evs[0].(job.Leased)
		e.delivered = leased
		e.leaseCursor, e.cancelCursor, e.leaseUntil = out.Cursor, eventstore.Cursor{}, leased.LeaseUntil
		d.deliver(n, e, false) // the item applies the lease handed out (item)
	})
}

// canTake reports whether node n may be given job e now: it is online and
// not cordoned, its agent is connected here, and the job's serial queue is
// free on it.
func (d *Dispatcher) canTake(n *nodeEntry, e *jobEntry, now time.Time) bool {
	if n.leasing || !n.n.Schedulable() || !d.present(n, now) {
		return false
	}
	return e.j.Queue == "" || n.queues[e.j.Queue] == ""
}

// pick chooses, for a selector target, the matching node that can take the
// job with the fewest jobs on it; ties go round in turn so work spreads.
func (d *Dispatcher) pick(e *jobEntry, now time.Time) *nodeEntry {
	var best []*nodeEntry
	for _, n := range d.nodes {
		if !e.j.Target.Selects(n.n) || !d.canTake(n, e, now) {
			continue
		}
		switch {
		case len(best) == 0 || len(n.leases) < len(best[0].leases):
			best = append(best[:0], n)
		case len(n.leases) == len(best[0].leases):
			best = append(best, n)
		}
	}
	if len(best) == 0 {
		return nil
	}
	slices.SortFunc(best, func(a, b *nodeEntry) int { return compareStrings(a.n.ID, b.n.ID) })
	d.rr++
	return best[d.rr%uint64(len(best))]
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// present reports whether the node's agent is connected to this process:
// it has a subscription or a long poll open, or showed a sign of life within
// one heartbeat interval (a poller between two polls).
func (d *Dispatcher) present(n *nodeEntry, now time.Time) bool {
	return d.presentHere(n, now) || now.Sub(n.seenElsewhere) < d.presenceWindow()
}

// presentHere reports whether the node's agent is connected to this
// replica.
func (d *Dispatcher) presentHere(n *nodeEntry, now time.Time) bool {
	return len(n.streams) > 0 || len(n.pollers) > 0 || now.Sub(n.lastSeen) < d.opts.HeartbeatInterval
}

// command runs a command for job e and keeps the job aside until its events
// are applied.
func (d *Dispatcher) command(e *jobEntry, what string, run func(context.Context) (commands.Outcome, error)) {
	d.launchFor(e, what, run, nil)
}

func (d *Dispatcher) launchFor(e *jobEntry, what string, run func(context.Context) (commands.Outcome, error), after func(commands.Outcome, error)) {
	e.pending, e.awaitVersion = true, 0
	d.launch(what+" job "+e.j.ID, run, func(out commands.Outcome, err error) {
		if after != nil {
			after(out, err)
		}
		if err != nil || out.Version <= e.version {
			e.pending = false
			d.touchJob(e)
			return
		}
		// Wait for the subscription to bring the events the command appended.
		e.awaitVersion = out.Version
	})
}

// isExpected reports errors that only mean the dispatcher's view was behind
// the log when it decided.
func isExpected(err error) bool {
	var fenced *eventstore.FencedError
	return errors.Is(err, domain.ErrConflict) || errors.Is(err, domain.ErrInvalid) || errors.Is(err, domain.ErrNotFound) ||
		errors.As(err, &fenced)
}

// checkNode keeps a node's status in step with its agent's connection:
// connected when it shows up, disconnected after the grace period without
// a sign of life, down after the down window, drained once a draining node
// runs nothing.
func (d *Dispatcher) checkNode(n *nodeEntry, now time.Time) {
	if n.cmdPending || !n.n.Exists() {
		return
	}
	id := n.n.ID
	present := d.present(n, now)
	// Silence counts from the last sign of life, the last connection
	// recorded (perhaps by another process), or this process's start,
	// whichever is latest.
	silent := now.Sub(later(later(n.lastSeen, n.seenElsewhere), later(n.n.ConnectedAt, d.started)))
	switch {
	case present && !n.connected() && n.n.Status != node.StatusDecommissioned:
		d.nodeCommand(n, "connect", func(ctx context.Context) (commands.Outcome, error) {
			return d.nodesH.Connect(ctx, d.meta(""), nodes.Connect{NodeID: id})
		})
	case n.connected() && !present && silent >= d.opts.DisconnectAfter:
		d.nodeCommand(n, "disconnect", func(ctx context.Context) (commands.Outcome, error) {
			return d.nodesH.Disconnect(ctx, d.meta(""), nodes.Disconnect{NodeID: id})
		})
	case n.n.Status == node.StatusDisconnected && !present &&
		now.Sub(later(n.n.DisconnectedAt, later(later(n.lastSeen, n.seenElsewhere), d.started))) >= d.opts.DownAfter:
		d.nodeCommand(n, "mark down", func(ctx context.Context) (commands.Outcome, error) {
			return d.nodesH.MarkDown(ctx, d.meta(""), nodes.MarkDown{NodeID: id})
		})
	case n.n.Status == node.StatusDraining && len(n.leases) == 0:
		d.nodeCommand(n, "mark drained", func(ctx context.Context) (commands.Outcome, error) {
			return d.nodesH.MarkDrained(ctx, d.meta(""), nodes.MarkDrained{NodeID: id})
		})
	}
}

func (d *Dispatcher) nodeCommand(n *nodeEntry, what string, run func(context.Context) (commands.Outcome, error)) {
	n.cmdPending, n.awaitVersion = true, 0
	d.launch(what+" node "+n.n.ID, run, func(out commands.Outcome, err error) {
		if err != nil || out.Version <= n.version {
			n.cmdPending = false
			d.recheck(n)
			return
		}
		n.awaitVersion = out.Version
	})
}

// recheck has the next pass check node n: something it is judged by changed.
func (d *Dispatcher) recheck(n *nodeEntry) { d.touched[n] = struct{}{} }

// nodeSweep is how often a pass checks every node, for the decisions only
// time brings (silence long enough to disconnect, or to mark down): a
// second, or less when those limits are shorter.
func (d *Dispatcher) nodeSweep() time.Duration {
	return max(d.opts.Tick, min(time.Second, d.opts.DisconnectAfter/4))
}

// touchJob has the next pass act on job e: something it is judged by
// changed.
func (d *Dispatcher) touchJob(e *jobEntry) { d.touchedJobs[e] = struct{}{} }
