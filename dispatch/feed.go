package dispatch

import (
	"context"
	"slices"
	"sync"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/eventstore"
)

// AgentJob is one item of a node's feed: a job leased to the node, or the
// news that such a job is to stop.
//
// A node's feed is ordered like the log. A lease item carries the cursor of
// its Leased event; a stop item (CancelRequested) the cursor of the event
// that asked for the stop, so it always comes after its lease. An agent
// passes the cursor of the last item it received as `after` when it
// reconnects and gets every item of a job still open that it has not seen.
type AgentJob struct {
	Cursor          eventstore.Cursor
	Job             job.Job
	Attempt         int
	LeaseUntil      time.Time
	CancelRequested bool
}

// MaxPollItems bounds the items one Poll returns; the next poll gets the rest.
const MaxPollItems = 100

// MaxPollWait bounds how long Poll waits for an item.
const MaxPollWait = 60 * time.Second

func item(e *jobEntry, cancel bool) AgentJob {
	j := e.j
	if e.delivered.Attempt > j.Attempt {
		// Handed out before its event was applied here (see lease): the
		// item is the lease as it was handed out. A long poll woken by the
		// lease read the job as still queued, attempt 0, which the agent
		// refused, reconnecting after a backoff each time.
		j.Apply(e.delivered)
	}
	it := AgentJob{Cursor: e.leaseCursor, Job: j, Attempt: j.Attempt, LeaseUntil: e.leaseUntil}
	if cancel {
		it.Cursor, it.CancelRequested = e.cancelCursor, true
	}
	return it
}

// feedAfter lists the items of the node's open jobs after cursor after (all
// of them for a zero cursor), in log order.
func feedAfter(n *nodeEntry, after eventstore.Cursor) []AgentJob {
	var out []AgentJob
	for _, e := range n.leases {
		if e.leaseCursor.IsZero() {
			continue // the lease is still being recorded
		}
		if after.Less(e.leaseCursor) {
			out = append(out, item(e, false))
		}
		if !e.cancelCursor.IsZero() && after.Less(e.cancelCursor) {
			out = append(out, item(e, true))
		}
	}
	slices.SortFunc(out, func(a, b AgentJob) int {
		switch {
		case a.Cursor.Less(b.Cursor):
			return -1
		case b.Cursor.Less(a.Cursor):
			return 1
		}
		return 0
	})
	return out
}

// deliver hands an item of job e to every connection of the node.
func (d *Dispatcher) deliver(n *nodeEntry, e *jobEntry, cancel bool) {
	d.deliverItem(n, item(e, cancel))
}

func (d *Dispatcher) deliverItem(n *nodeEntry, it AgentJob) {
	for s := range n.streams {
		s.push(it, d.opts.FeedBuffer)
	}
	for ch := range n.pollers {
		close(ch)
		delete(n.pollers, ch)
	}
}

// Stream is a node's live feed: an agent's subscription.
type Stream struct {
	d    *Dispatcher
	node *nodeEntry

	// A stream either queues its items for Next and Pop, or hands them to
	// its sink (SubscribeFunc).
	sink  func(AgentJob) bool
	onEnd func(error)

	mu     sync.Mutex
	queue  []AgentJob
	wake   chan struct{} // one pending wake-up
	err    error
	closed bool
	ended  bool // onEnd was called
}

// Subscribe opens the node's feed from cursor after (zero: every item of the
// node's open jobs). The subscription counts as the node's heartbeat while it
// is open. The caller must authorise the node and Close the stream.
func (d *Dispatcher) Subscribe(ctx context.Context, nodeID string, after eventstore.Cursor) (*Stream, error) {
	return d.subscribe(ctx, nodeID, after, &Stream{wake: make(chan struct{}, 1)})
}

// SubscribeFunc opens the node's feed like Subscribe, but hands each item to
// deliver as it comes, under the dispatcher's lock, so no goroutine waits
// per connection: deliver must not block, and returns false when it cannot
// take the item (the stream then ends as a slow consumer, and the agent
// resumes from its cursor). end is called once, under the lock, when the
// stream ends: with the reason, or nil after Close.
func (d *Dispatcher) SubscribeFunc(ctx context.Context, nodeID string, after eventstore.Cursor, deliver func(AgentJob) bool, end func(error)) (*Stream, error) {
	return d.subscribe(ctx, nodeID, after, &Stream{sink: deliver, onEnd: end})
}

func (d *Dispatcher) subscribe(ctx context.Context, nodeID string, after eventstore.Cursor, s *Stream) (*Stream, error) {
	if err := d.waitReady(ctx); err != nil {
		return nil, err
	}
	if err := d.knowNode(ctx, nodeID); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	n, err := d.agentNode(nodeID)
	if err != nil {
		return nil, err
	}
	s.d, s.node = d, n
	n.streams[s] = struct{}{}
	d.recheck(n)
	for _, it := range feedAfter(n, after) {
		s.push(it, d.opts.FeedBuffer)
	}
	d.seen(n)
	return s, nil
}

// knowNode makes sure the dispatcher knows a node its agent names, reading
// the node's stream when the dispatcher has not applied its enrollment yet:
// an agent may connect the instant it enrolled.
func (d *Dispatcher) knowNode(ctx context.Context, nodeID string) error {
	d.mu.Lock()
	n := d.nodes[nodeID]
	known := n != nil && n.n.Exists()
	d.mu.Unlock()
	if known {
		return nil
	}
	loaded, version, err := commands.Load[node.Node](ctx, d.store, domain.NodeStream, nodeID)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if loaded.Exists() {
		n := d.node(nodeID)
		if version > n.version {
			n.n, n.version = loaded, version
		}
	}
	return nil
}

// agentNode returns the node an agent acts for, if it may connect.
func (d *Dispatcher) agentNode(nodeID string) (*nodeEntry, error) {
	n := d.nodes[nodeID]
	if n == nil || !n.n.Exists() {
		return nil, &domain.NotFoundError{Entity: "node", ID: nodeID}
	}
	if n.n.Status == node.StatusDecommissioned {
		return nil, &NodeGoneError{NodeID: nodeID, Status: string(n.n.Status)}
	}
	return n, nil
}

// seen records a sign of life of the node's agent and reacts at once: a
// node that comes back is connected again and may be given work.
func (d *Dispatcher) seen(n *nodeEntry) {
	now := d.now()
	n.lastSeen = later(n.lastSeen, now)
	d.recheck(n)
	if !n.connected() {
		d.pass(now, false)
	}
}

// Pop returns the next item if one is waiting, or the error that ended the
// stream once nothing is left. With neither, wait on Ready.
func (s *Stream) Pop() (AgentJob, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		it := s.queue[0]
		s.queue[0] = AgentJob{}
		s.queue = s.queue[1:]
		if len(s.queue) == 0 {
			s.queue = nil // let a long backlog's array go
		}
		return it, true, nil
	}
	return AgentJob{}, false, s.err
}

// Ready receives when an item (or the end) may be waiting. A single
// goroutine can select on it alongside its own channels, which keeps a
// connection's cost to that goroutine.
func (s *Stream) Ready() <-chan struct{} { return s.wake }

// Next returns the next item, waiting for one. It fails once the stream was
// ended (a slow consumer, a decommissioned node, the dispatcher stopping) or
// ctx ends.
func (s *Stream) Next(ctx context.Context) (AgentJob, error) {
	for {
		it, ok, err := s.Pop()
		if ok {
			return it, nil
		}
		if err != nil {
			return AgentJob{}, err
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return AgentJob{}, ctx.Err()
		}
	}
}

// push queues an item; called under the dispatcher's lock.
func (s *Stream) push(it AgentJob, limit int) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	if s.sink != nil {
		s.mu.Unlock()
		if !s.sink(it) {
			s.fail(&SlowConsumerError{Behind: limit})
		}
		return
	}
	if len(s.queue) >= limit {
		s.mu.Unlock()
		s.fail(&SlowConsumerError{Behind: limit})
		return
	}
	s.queue = append(s.queue, it)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// fail ends the stream with err once its queue is drained; called under the
// dispatcher's lock.
func (s *Stream) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
		if _, slow := err.(*SlowConsumerError); slow {
			s.queue = nil // the agent resumes from its cursor
		}
	}
	end := s.onEnd != nil && !s.ended
	s.ended = true
	s.mu.Unlock()
	delete(s.node.streams, s)
	if end {
		s.onEnd(err)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close ends the subscription; the node's grace period starts now if it has
// no other connection.
func (s *Stream) Close() {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	s.mu.Lock()
	already := s.closed
	s.closed = true
	if s.err == nil {
		s.err = ErrStreamClosed
	}
	end := s.onEnd != nil && !s.ended
	s.ended = true
	s.mu.Unlock()
	if end {
		s.onEnd(nil)
	}
	if already {
		return
	}
	delete(s.node.streams, s)
	s.node.lastSeen = later(s.node.lastSeen, d.now())
	d.recheck(s.node)
}

// Poll is the long-poll form of the feed: it returns the node's items after
// cursor after, waiting up to wait for one when there is none, and the cursor
// to pass next time. A poll counts as the node's heartbeat.
func (d *Dispatcher) Poll(ctx context.Context, nodeID string, after eventstore.Cursor, wait time.Duration) ([]AgentJob, eventstore.Cursor, error) {
	if wait < 0 || wait > MaxPollWait {
		return nil, after, &domain.ValidationError{Field: "waitSeconds", Reason: "must be between 0 and 60"}
	}
	if err := d.waitReady(ctx); err != nil {
		return nil, after, err
	}
	if err := d.knowNode(ctx, nodeID); err != nil {
		return nil, after, err
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		n, err := d.agentNode(nodeID)
		if err != nil {
			d.mu.Unlock()
			return nil, after, err
		}
		d.seen(n)
		items := feedAfter(n, after)
		if len(items) > 0 {
			d.mu.Unlock()
			if len(items) > MaxPollItems {
				items = items[:MaxPollItems]
			}
			return items, items[len(items)-1].Cursor, nil
		}
		ch := make(chan struct{})
		n.pollers[ch] = struct{}{}
		d.recheck(n)
		d.mu.Unlock()

		timedOut := false
		select {
		case <-ch:
		case <-deadline.C:
			timedOut = true
		case <-ctx.Done():
		}
		d.mu.Lock()
		delete(n.pollers, ch)
		n.lastSeen = later(n.lastSeen, d.now())
		d.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, after, err
		}
		if timedOut {
			return nil, after, nil
		}
	}
}

// closeFeeds ends every connection when the dispatcher stops.
func (d *Dispatcher) closeFeeds() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range d.nodes {
		for s := range n.streams {
			s.fail(ErrStopped)
		}
		for ch := range n.pollers {
			close(ch)
			delete(n.pollers, ch)
		}
	}
}
