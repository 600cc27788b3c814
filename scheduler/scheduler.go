// Package scheduler places resources on nodes: it keeps every node's load
// (what it offers, what is allocated on it) and every location's reserve
// and status, folded from the log, and decides allocations with
// domain/placement's Schedule.
//
// It keeps nothing the log does not hold: it rebuilds its view from the
// node and location streams when it starts, follows the log after that,
// and every allocation it decides is appended by the caller (with the
// resource's own events, in one append) at the node stream's version the
// decision saw, so two decisions for the last free slot of a node cannot
// both commit. While an allocation on a node is being appended, the node
// is held: the next decision waits for it or picks another node.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cairn/domain"
	"cairn/domain/node"
	"cairn/domain/placement"
	"cairn/domain/tenant"
	"cairn/eventstore"
)

// Log is what the scheduler reads of the event store.
type Log interface {
	Head(ctx context.Context) (eventstore.Cursor, error)
	ReadRange(ctx context.Context, from, to eventstore.Cursor, pageSize int, f eventstore.Filter, handle func([]eventstore.RecordedEvent) error) error
	Subscribe(ctx context.Context, opts eventstore.SubscribeOptions, handle func(context.Context, eventstore.Batch) error) error
	ReadStream(ctx context.Context, streamID string, o eventstore.ReadStreamOptions) ([]eventstore.RecordedEvent, error)
	Decode(e eventstore.RecordedEvent) (domain.Event, error)
}

// Scheduler decides where resources go. Build it with New, run it with
// Run; Reserve and Release wait until Run has read the log.
type Scheduler struct {
	log   Log
	clock func() time.Time
	zl    zerolog.Logger
	// undecodable reports the events of types this build cannot read.
	undecodable *eventstore.Undecodable
	factsWait   time.Duration

	ready     chan struct{}
	readyOnce sync.Once

	mu        sync.Mutex
	changed   *sync.Cond // a held node was let go
	nodes     map[string]*nodeEntry
	locations map[string]*locationEntry
	// all and byLocation index nodes for the scans of every decision;
	// indexStale is set when a node comes or moves.
	all        []*nodeEntry
	byLocation map[string][]*nodeEntry
	indexStale bool
	// seen is how far into the log the view has read.
	seen eventstore.Cursor
}

type locationEntry struct {
	load    placement.LocationLoad
	version int64
}

type nodeEntry struct {
	id      string
	load    placement.NodeLoad
	version int64
	// held is set while an allocation decided on this node is appended.
	held bool
	// cand is the node as Schedule sees it, made again when stale.
	cand  placement.Candidate
	stale bool
}

// New returns a scheduler reading log; clock stamps its events (nil:
// time.Now).
func New(log Log, clock func() time.Time, zl zerolog.Logger, opts ...Option) *Scheduler {
	if clock == nil {
		clock = time.Now
	}
	s := &Scheduler{log: log, clock: clock, zl: zl, ready: make(chan struct{}), undecodable: eventstore.NewUndecodable(zl, "scheduler"),
		nodes: map[string]*nodeEntry{}, locations: map[string]*locationEntry{}, factsWait: DefaultFactsWait}
	for _, o := range opts {
		o(s)
	}
	s.changed = sync.NewCond(&s.mu)
	return s
}

// DefaultFactsWait is how long a placement waits for nodes that would be
// considered but have not reported their facts yet (an agent reports them
// a moment after it connects) before it says that no node fits.
const DefaultFactsWait = 30 * time.Second

// Option changes a default of New.
type Option func(*Scheduler)

// WithFactsWait sets how long a placement waits for nodes yet to report
// their facts (DefaultFactsWait).
func WithFactsWait(d time.Duration) Option { return func(s *Scheduler) { s.factsWait = d } }

var followed = eventstore.Filter{StreamTypes: []string{domain.NodeStream, domain.LocationStream}}

// Run reads the node and location streams, then follows the log until ctx
// ends. While the database is away it tries again with a backoff: what it
// read stays, and events read twice are recognised by their versions.
func (s *Scheduler) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		head, err := s.catchUp(ctx)
		if err == nil {
			err = s.log.Subscribe(ctx, eventstore.SubscribeOptions{From: head, Filter: followed},
				func(ctx context.Context, b eventstore.Batch) error {
					s.applyBatch(ctx, b.Events)
					s.mu.Lock()
					if s.seen.Less(b.Cursor) {
						s.seen = b.Cursor
					}
					s.changed.Broadcast()
					s.mu.Unlock()
					return nil
				})
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.zl.Warn().Err(err).Dur("retry_in", backoff).Msg("scheduler lost the log; reading it again")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// catchUp reads the followed streams up to the log's head, which it
// returns.
func (s *Scheduler) catchUp(ctx context.Context) (eventstore.Cursor, error) {
	head, err := s.log.Head(ctx)
	if err != nil {
		return head, fmt.Errorf("scheduler: read the log: %w", err)
	}
	err = s.log.ReadRange(ctx, eventstore.Start, head, 5000, followed, func(evs []eventstore.RecordedEvent) error {
		s.applyBatch(ctx, evs)
		return nil
	})
	if err != nil {
		return head, fmt.Errorf("scheduler: read the log: %w", err)
	}
	s.mu.Lock()
	n := len(s.nodes)
	if s.seen.Less(head) {
		s.seen = head
	}
	s.mu.Unlock()
	s.readyOnce.Do(func() {
		close(s.ready)
		s.zl.Info().Int("nodes", n).Msg("scheduler caught up with the log")
	})
	return head, nil
}

// Ready is closed once Run has read the log.
func (s *Scheduler) Ready() <-chan struct{} { return s.ready }

func (s *Scheduler) waitReady(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the scheduler is still reading the log: %w", ctx.Err())
	}
}

func (s *Scheduler) applyBatch(ctx context.Context, evs []eventstore.RecordedEvent) {
	var stale []string
	s.mu.Lock()
	for _, rec := range evs {
		ev, err := s.log.Decode(rec)
		if err != nil {
			s.undecodable.Skip(rec, err)
			continue
		}
		id := rec.StreamID[len(rec.StreamType)+1:]
		switch rec.StreamType {
		case domain.LocationStream:
			l := s.locations[id]
			if l == nil {
				l = &locationEntry{}
				s.locations[id] = l
			}
			if rec.Version > l.version {
				l.load.Apply(ev)
				l.version = rec.Version
				// Its nodes' reserve or status may have changed.
				for _, n := range s.nodes {
					if n.load.Node.LocationID == id {
						n.stale = true
					}
				}
			}
		case domain.NodeStream:
			n := s.nodes[id]
			if n == nil {
				n = &nodeEntry{id: id}
				s.nodes[id] = n
				s.indexStale = true
			}
			switch {
			case rec.Version <= n.version:
				// Already folded: an allocation this scheduler decided.
			case rec.Version == n.version+1:
				loc := n.load.Node.LocationID
				n.load.Apply(ev)
				n.version = rec.Version
				n.stale = true
				s.indexStale = s.indexStale || n.load.Node.LocationID != loc
			default:
				stale = append(stale, id)
			}
		}
	}
	s.mu.Unlock()
	for _, id := range stale {
		if err := s.reload(ctx, id); err != nil && ctx.Err() == nil {
			s.zl.Warn().Err(err).Str("node", id).Msg("scheduler could not re-read a node; it is read again on its next event")
		}
	}
}

// reload folds a node's stream afresh, replacing what the view holds
// unless a decision holds it (its outcome reloads it).
func (s *Scheduler) reload(ctx context.Context, id string) error {
	recs, err := s.log.ReadStream(ctx, domain.StreamID(domain.NodeStream, id), eventstore.ReadStreamOptions{})
	if err != nil {
		return err
	}
	fresh := &nodeEntry{id: id, stale: true}
	for _, rec := range recs {
		ev, err := s.log.Decode(rec)
		if err != nil {
			return err
		}
		fresh.load.Apply(ev)
		fresh.version = rec.Version
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.nodes[id]; cur != nil && cur.held {
		return nil
	}
	if cur := s.nodes[id]; cur == nil || cur.version <= fresh.version {
		s.nodes[id] = fresh
		s.indexStale = true
	}
	return nil
}

// Request is one resource to place.
type Request struct {
	Ask       placement.Ask
	ServiceID string
	// Groups are the spread and distinct groups the allocation counts in.
	Groups []string
}

// Decision is an allocation (or a release) decided and held until Done.
// Append Node and the resource's Resource events in one append, then call
// Done with its error.
type Decision struct {
	NodeID   string
	Node     eventstore.StreamAppend
	Resource []domain.Event

	s       *Scheduler
	entry   *nodeEntry
	undo    nodeEntry
	settled bool
}

// Done lets the node go: a nil error keeps the decision in the view, any
// other undoes it and re-reads the node (another writer may have moved it).
func (d *Decision) Done(ctx context.Context, err error) {
	if d == nil || d.settled {
		return
	}
	d.settled = true
	s := d.s
	s.mu.Lock()
	d.entry.held, d.entry.stale = false, true
	if err != nil {
		d.entry.load, d.entry.version = d.undo.load, d.undo.version
	}
	s.changed.Broadcast()
	s.mu.Unlock()
	if err != nil {
		if rerr := s.reload(ctx, d.NodeID); rerr != nil && ctx.Err() == nil {
			s.zl.Warn().Err(rerr).Str("node", d.NodeID).Msg("scheduler could not re-read a node")
		}
	}
}

// Reserve decides the node for a request and holds it: the caller appends
// the decision and calls Done. When no node fits the error is a
// *placement.NoFitError; when every node that fits is held by other
// decisions, it waits for them.
func (s *Scheduler) Reserve(ctx context.Context, r Request) (*Decision, error) {
	if err := r.Ask.Validate(); err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	defer s.wakeWhenDone(ctx)()
	s.mu.Lock()
	defer s.mu.Unlock()
	caughtUp := false
	var factsCtx context.Context // while the nodes yet to report their facts are waited for
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cands, held := s.candidatesLocked(r.Ask.Location)
		choice, err := placement.Schedule(r.Ask, cands)
		if err != nil && r.Ask.Location != "" {
			// Explain with every node, those elsewhere included.
			cands, held = s.candidatesLocked("")
			choice, err = placement.Schedule(r.Ask, cands)
		}
		if err != nil && held > 0 && errors.Is(err, placement.ErrNoFit) {
			// Would a node held by a decision under way fit once let go?
			// Then wait for it; else the answer is no, with no word of holds.
			for i := range cands {
				cands[i].Held = false
			}
			if _, ferr := placement.Schedule(r.Ask, cands); ferr == nil {
				s.changed.Wait()
				continue
			} else {
				err = ferr
			}
		}
		if err != nil {
			if !caughtUp && errors.Is(err, placement.ErrNoFit) {
				// The view may trail the log (a node that just reported
				// its facts): read up to the log's head before saying no.
				caughtUp = true
				if err := s.catchUpToHeadLocked(ctx); err != nil {
					return nil, err
				}
				continue
			}
			var nf *placement.NoFitError
			if errors.As(err, &nf) && nf.Excluded(placement.ReasonNoFacts) > 0 {
				// A node that just connected reports its facts a moment
				// later: wait a while for what it offers before saying no.
				if factsCtx == nil {
					var cancel context.CancelFunc
					factsCtx, cancel = context.WithTimeout(ctx, s.factsWait)
					defer cancel()
					defer s.wakeWhenDone(factsCtx)()
				}
				if factsCtx.Err() == nil {
					s.changed.Wait()
					continue
				}
			}
			return nil, err
		}
		n := s.nodes[choice.NodeID]
		loc := s.locations[n.load.Node.LocationID]
		var reserve placement.Resources
		if loc != nil {
			reserve = loc.load.Reserve
		}
		evs, err := n.load.Allocate(placement.Allocate{NodeID: choice.NodeID, ResourceID: r.Ask.ResourceID, ServiceID: r.ServiceID,
			Request: r.Ask.Request, Groups: r.Groups, LocationReserve: reserve, At: s.clock()})
		if err != nil {
			return nil, fmt.Errorf("allocate on node %s: %w", n.load.Node.Hostname, err)
		}
		return s.holdLocked(choice.NodeID, n, evs), nil
	}
}

// catchUpToHeadLocked waits until the view has read the log up to its head
// as of now (at most 15 s: on a loaded server the view may be seconds
// behind, and a node it has not read yet must not turn into a false "no
// node fits"). Called and returns with s.mu held.
func (s *Scheduler) catchUpToHeadLocked(ctx context.Context) error {
	s.mu.Unlock()
	head, err := s.log.Head(ctx)
	s.mu.Lock()
	if err != nil {
		return fmt.Errorf("scheduler: read the log's head: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	defer s.wakeWhenDone(wctx)()
	for s.seen.Less(head) && wctx.Err() == nil {
		s.changed.Wait()
	}
	return nil
}

// wakeWhenDone wakes the waiters on s.changed when ctx ends, so that one
// waiting for it sees it; the function returned stops that.
func (s *Scheduler) wakeWhenDone(ctx context.Context) func() bool {
	return context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	})
}

// Release decides the end of a resource's allocation on a node; nil when
// the node holds none for it.
func (s *Scheduler) Release(ctx context.Context, nodeID, resourceID string) (*Decision, error) {
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	defer s.wakeWhenDone(ctx)()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := s.nodes[nodeID]
		if n == nil {
			n = &nodeEntry{id: nodeID}
			s.nodes[nodeID] = n
			s.indexStale = true
		}
		if n.held {
			s.changed.Wait()
			continue
		}
		evs, err := n.load.Release(resourceID, s.clock())
		if err != nil {
			return nil, err
		}
		at := s.clock().UTC()
		if len(evs) == 0 {
			// Nothing on the node: the resource's record alone ends.
			return &Decision{NodeID: nodeID, Resource: []domain.Event{placement.Unplaced{ResourceID: resourceID, NodeID: nodeID, At: at}},
				s: s, entry: n, undo: *n, settled: true}, nil
		}
		d := s.holdLocked(nodeID, n, evs)
		d.Resource = []domain.Event{placement.Unplaced{ResourceID: resourceID, NodeID: nodeID, At: at}}
		return d, nil
	}
}

// holdLocked applies evs to the node's view tentatively and holds it.
func (s *Scheduler) holdLocked(nodeID string, n *nodeEntry, evs []domain.Event) *Decision {
	d := &Decision{NodeID: nodeID, s: s, entry: n, undo: nodeEntry{load: n.load.Clone(), version: n.version}}
	d.Node = eventstore.StreamAppend{StreamID: domain.StreamID(domain.NodeStream, nodeID), StreamType: domain.NodeStream,
		Expected: eventstore.Exactly(n.version), Events: evs}
	for _, ev := range evs {
		n.load.Apply(ev)
		n.version++
		if a, ok := ev.(placement.Allocated); ok {
			_, placed := placement.Placements(a)
			d.Resource = append(d.Resource, placed)
		}
	}
	n.held, n.stale = true, true
	return d
}

// candidatesLocked lists the nodes for the scheduler, only those of
// location when it is set, and how many are held. A held node is offered
// as it will be if its decision commits, but marked held: it counts for
// spread and distinct, and takes nothing until its append is done
// (another node is taken rather than waiting).
func (s *Scheduler) candidatesLocked(location string) ([]placement.Candidate, int) {
	if s.indexStale || s.byLocation == nil {
		s.all, s.byLocation = s.all[:0], map[string][]*nodeEntry{}
		for _, n := range s.nodes {
			s.all = append(s.all, n)
			s.byLocation[n.load.Node.LocationID] = append(s.byLocation[n.load.Node.LocationID], n)
		}
		s.indexStale = false
	}
	scan := s.all
	if location != "" {
		scan = s.byLocation[location]
	}
	out := make([]placement.Candidate, 0, len(scan))
	held := 0
	for _, n := range scan {
		if !n.load.Node.Exists() {
			continue
		}
		if n.held {
			held++
		}
		if n.stale || n.cand.ID == "" {
			n.cand, n.stale = s.candidateLocked(n), false
		}
		out = append(out, n.cand)
	}
	return out, held
}

func (s *Scheduler) candidateLocked(n *nodeEntry) placement.Candidate {
	var reserve placement.Resources
	retired := false
	if l := s.locations[n.load.Node.LocationID]; l != nil {
		reserve = l.load.Reserve
		retired = l.load.Location.Status == tenant.LocationStatusRetired
	}
	name := n.load.Node.Hostname
	if name == "" {
		name = n.id
	}
	return placement.Candidate{ID: n.id, Name: name, Location: n.load.Node.LocationID, Labels: n.load.Node.Labels,
		NotReady: n.load.NotReady(), LocationRetired: retired, Held: n.held,
		Unmeasured: n.load.Node.FactsAt.IsZero(), Allocatable: n.load.Allocatable(reserve), Allocated: n.load.Allocated, Groups: n.load.Groups}
}

// Candidates returns every node as the scheduler sees it now.
func (s *Scheduler) Candidates(ctx context.Context) ([]placement.Candidate, error) {
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out, _ := s.candidatesLocked("")
	return out, nil
}

// NodeView is a node as other parts of the control plane ask after it.
type NodeView struct {
	ID       string
	Hostname string
	Status   node.Status
}

// Nodes lists every node with its status.
func (s *Scheduler) Nodes(ctx context.Context) ([]NodeView, error) {
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]NodeView, 0, len(s.nodes))
	for id, n := range s.nodes {
		if n.load.Node.Exists() {
			out = append(out, NodeView{ID: id, Hostname: n.load.Node.Hostname, Status: n.load.Node.Status})
		}
	}
	return out, nil
}
