// Package dispatch is the control plane's side of agents and jobs.
//
// The Dispatcher is a process manager: it follows the job, node and schedule
// streams of the event log, keeps the open work in memory, and drives it by
// commands — leases to connected agents (one node by id, any one node a label
// selector matches, or every such node through a fan-out's child jobs with a
// maximum in parallel, serial queues respected per node), lease expiry,
// retries after their backoff, lost jobs on nodes that went down, fan-out
// completion and schedule firings. Every decision is an event; a restart
// rebuilds the state from the log and carries on.
//
// Leases reach agents through in-memory feeds, one per node: a subscription
// (Subscribe) or a long poll (Poll), both resumable from the cursor of the
// last item received, so no agent connection ever polls the database. The
// connections are also the nodes' heartbeats: a node without one is marked
// disconnected after a grace period and down after a further window, and its
// jobs end as lost (or are retried elsewhere when their target allows).
//
// Job output and node statistics are measurements, not state changes: the
// dispatcher checks who sends them and hands them to their own stores
// (joblogs, nodestats).
//
// Why not the watermill router that other process managers use: the
// dispatcher's state lives in memory and is rebuilt from the log on start, so
// per-message acknowledgement and a checkpoint would buy nothing, while a
// batch applied under one lock keeps the submit-to-agent path short.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/domain"
	"cairn/eventstore"
)

// Stream types the dispatcher follows.
const (
	streamJob      = domain.JobStream
	streamNode     = domain.NodeStream
	streamSchedule = domain.ScheduleStream
)

// Defaults of Options.
const (
	DefaultLease             = jobs.DefaultLease
	DefaultHeartbeatInterval = 10 * time.Second
	DefaultDisconnectAfter   = 30 * time.Second
	DefaultDownAfter         = 5 * time.Minute
	DefaultTick              = 200 * time.Millisecond
	DefaultWorkers           = 256
	DefaultFeedBuffer        = 1024
	DefaultMaxHeartbeats     = 200
)

// Options tune a Dispatcher. The zero value takes the defaults.
type Options struct {
	// Clock tells the time; default time.Now. The command handlers have
	// their own clock, which should be the same.
	Clock func() time.Time
	// Lease is how long an agent has to acknowledge a job.
	Lease time.Duration
	// HeartbeatInterval is how often agents are asked to send a heartbeat.
	HeartbeatInterval time.Duration
	// MaxHeartbeatsPerSecond bounds what a fleet's heartbeats cost: with
	// more nodes than HeartbeatInterval × it, agents are asked to beat less
	// often, as Nomad scales its heartbeat TTL. Liveness does not suffer: a
	// node whose agent holds a feed is present whatever its heartbeats.
	MaxHeartbeatsPerSecond int
	// DisconnectAfter is the grace period after which a node without a
	// connection or heartbeat is marked disconnected.
	DisconnectAfter time.Duration
	// DownAfter is how long a node stays disconnected before it is marked
	// down and its jobs are given up.
	DownAfter time.Duration
	// Tick is how often time-based work (expiries, backoffs, liveness,
	// schedules) is looked at.
	Tick time.Duration
	// Workers bounds the commands the dispatcher has in flight. A
	// fan-out's leases are appended this many at a time, and the event
	// store commits the appends waiting together in one transaction: fewer
	// in flight make more, smaller transactions (a fan-out to 10,000 nodes
	// took a tenth longer with 64); far more made it slower again.
	Workers int
	// FeedBuffer bounds the items a node's subscription may have waiting;
	// a subscriber further behind is ended and resumes from its cursor.
	FeedBuffer int
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	set := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	set(&o.Lease, DefaultLease)
	set(&o.HeartbeatInterval, DefaultHeartbeatInterval)
	set(&o.DisconnectAfter, DefaultDisconnectAfter)
	set(&o.DownAfter, DefaultDownAfter)
	set(&o.Tick, DefaultTick)
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.FeedBuffer <= 0 {
		o.FeedBuffer = DefaultFeedBuffer
	}
	if o.MaxHeartbeatsPerSecond <= 0 {
		o.MaxHeartbeatsPerSecond = DefaultMaxHeartbeats
	}
}

// Deps are the dispatcher's collaborators.
type Deps struct {
	Store  Log
	Jobs   *jobs.Handlers
	Nodes  *nodes.Handlers
	Access *access.Handlers
	Logs   Output
	Stats  Statistics
	Log    zerolog.Logger
	// Owner, when set, gates the decisions: without it this process owns
	// them (one replica).
	Owner Owner
	// Presence, when set, shares agent connections with other replicas.
	Presence Presence
	// JobStreams, when set, is told of the job streams the dispatcher
	// writes itself; the job handlers' commands.StreamCache is one.
	JobStreams StreamMemory
}

// StreamMemory remembers the events the dispatcher appends outside the
// command handlers (a fan-out's children, leases), so that the agent's
// start and finish that follow within moments decide without reading the
// stream back (commands.StreamCache.Wrote).
type StreamMemory interface {
	Wrote(streamID string, after int64, tenant string, events []domain.Event)
}

type noStreamMemory struct{}

func (noStreamMemory) Wrote(string, int64, string, []domain.Event) {}

// Owner says whether this replica owns the dispatcher's decisions (leases,
// expiries, retries, liveness, schedule firings) now, and fences the
// appends it makes as owner (cluster.Lease). Every replica follows the log
// and serves its own agents; only the owner decides.
type Owner interface {
	Owns() bool
	Fence() eventstore.Fence
}

// Presence shares, between replicas, which agents are connected where
// (cluster.Presence): each replica publishes its own, and the owner counts
// the others' as present.
type Presence interface {
	Publish(ctx context.Context, nodeIDs []string) error
	Elsewhere(ctx context.Context, within time.Duration) (map[string]time.Duration, error)
}

// Dispatcher drives jobs to agents. Build it with New, start it with Run; the
// agent operations wait until it has caught up with the log.
type Dispatcher struct {
	store Log
	// written is told of the job streams the dispatcher appends to itself.
	written StreamMemory
	jobsH   *jobs.Handlers
	nodesH  *nodes.Handlers
	access  *access.Handlers
	logs    Output
	stats   Statistics
	log     zerolog.Logger
	opts    Options
	owner   Owner
	// presence is nil for a dispatcher alone on its database.
	presence Presence
	now      func() time.Time

	commands commandQueue
	ready    chan struct{} // closed once the state has caught up with the log

	mu    sync.Mutex
	jobs  map[string]*jobEntry
	order []*jobEntry // open jobs in submission order
	nodes map[string]*nodeEntry
	// touched are the nodes whose state changed since the last pass: a
	// pass checks them, and every node only once per nodeSweep (see pass).
	touched map[*nodeEntry]struct{}
	// touchedJobs are the jobs whose state changed since the last pass.
	touchedJobs map[*jobEntry]struct{}
	nodesSwept  time.Time
	schedules   map[string]*scheduleEntry
	seq         uint64
	dropped     int // entries of order dropped since it was last compacted
	rr          uint64
	started     time.Time
	owned       bool // whether the last pass owned the decisions
	running     bool
	runCtx      context.Context
	// undecodable reports the events of types this build cannot read.
	undecodable *eventstore.Undecodable
}

// New returns a dispatcher; Run starts it.
func New(deps Deps, opts Options) (*Dispatcher, error) {
	if deps.Store == nil || deps.Jobs == nil || deps.Nodes == nil || deps.Access == nil || deps.Logs == nil || deps.Stats == nil {
		return nil, errors.New("dispatch: Store, Jobs, Nodes, Access, Logs and Stats are required")
	}
	opts.defaults()
	written := deps.JobStreams
	if written == nil {
		written = noStreamMemory{}
	}
	d := &Dispatcher{
		store: deps.Store, written: written, jobsH: deps.Jobs, nodesH: deps.Nodes, access: deps.Access,
		logs: deps.Logs, stats: deps.Stats, log: deps.Log, opts: opts, now: opts.Clock, owner: deps.Owner, presence: deps.Presence,
		commands: commandQueue{max: opts.Workers}, ready: make(chan struct{}),
		undecodable: eventstore.NewUndecodable(deps.Log, "dispatcher"),
		jobs:        map[string]*jobEntry{}, nodes: map[string]*nodeEntry{}, touched: map[*nodeEntry]struct{}{}, touchedJobs: map[*jobEntry]struct{}{}, schedules: map[string]*scheduleEntry{},
	}
	return d, nil
}

// Run rebuilds the state from the log, then follows it and drives the jobs
// until ctx ends. It returns ctx's error, or the error that stopped it.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.running {
		d.mu.Unlock()
		return errors.New("dispatch: Run called twice")
	}
	d.running, d.runCtx = true, ctx
	d.mu.Unlock()

	filter := eventstore.Filter{StreamTypes: []string{streamJob, streamNode, streamSchedule}}
	cursor, err := d.catchUp(ctx, filter)
	if err != nil {
		return err
	}
	d.mu.Lock()
	// Agents get their grace period from now to come back: nobody watched
	// them while the control plane was away (see checkNode).
	d.started = d.now()
	d.pass(d.started, true)
	d.mu.Unlock()
	close(d.ready)
	d.log.Info().Int("open_jobs", len(d.jobs)).Int("nodes", len(d.nodes)).Msg("dispatcher caught up with the log")

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(1)
	go func() { defer wg.Done(); d.ticker(ctx) }()
	if d.presence != nil {
		wg.Add(1)
		go func() { defer wg.Done(); d.sharePresence(ctx) }()
	}
	err = d.store.Subscribe(ctx, eventstore.SubscribeOptions{From: cursor, Filter: filter},
		func(ctx context.Context, b eventstore.Batch) error {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.applyBatch(b.Events)
			d.pass(d.now(), false)
			return nil
		})
	d.closeFeeds()
	return err
}

// catchUp applies the whole history of the followed streams and returns the
// cursor to follow the log from. The read is filtered in the database (by
// stream type), so it costs what those streams hold, not the whole log; and
// it reads up to the head of the log when it began, which it returns, so
// following from there does not read the other streams' history again. The
// range read waits until every event up to that head is readable, so none
// is skipped.
func (d *Dispatcher) catchUp(ctx context.Context, f eventstore.Filter) (eventstore.Cursor, error) {
	head, err := d.store.Head(ctx)
	if err != nil {
		return head, fmt.Errorf("dispatch: read the log: %w", err)
	}
	err = d.store.ReadRange(ctx, eventstore.Start, head, 5000, f, func(evs []eventstore.RecordedEvent) error {
		d.mu.Lock()
		d.applyBatch(evs)
		d.mu.Unlock()
		return nil
	})
	if err != nil {
		return head, fmt.Errorf("dispatch: read the log: %w", err)
	}
	return head, nil
}

func (d *Dispatcher) applyBatch(evs []eventstore.RecordedEvent) {
	for _, rec := range evs {
		if d.appliedAlready(rec) {
			continue
		}
		ev, err := d.store.Decode(rec)
		if err != nil {
			// An event this build cannot read is skipped rather than
			// stopping every job; the log keeps it for a newer build.
			d.undecodable.Skip(rec, err)
			continue
		}
		d.apply(rec, ev)
	}
}

// appliedAlready reports whether rec is of a job this process has applied
// up to rec's version (what it appended itself: a fan-out's children), so
// that it is not decoded again to be ignored by applyJob: the 10,000
// children of a fan-out, each with the parent's spec, were decoded for
// nothing as the subscription brought them back.
func (d *Dispatcher) appliedAlready(rec eventstore.RecordedEvent) bool {
	if rec.StreamType != streamJob {
		return false
	}
	e := d.jobs[rec.StreamID[len(streamJob)+1:]]
	return e != nil && rec.Version <= e.version
}

func (d *Dispatcher) ticker(ctx context.Context) {
	t := time.NewTicker(d.opts.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.mu.Lock()
			d.pass(d.now(), true)
			d.mu.Unlock()
		}
	}
}

// waitReady blocks until the dispatcher has caught up with the log.
func (d *Dispatcher) waitReady(ctx context.Context) error {
	select {
	case <-d.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the dispatcher is still reading the log: %w", ctx.Err())
	}
}

// Ready reports whether the dispatcher has caught up with the log, for
// readiness checks.
func (d *Dispatcher) Ready() bool {
	select {
	case <-d.ready:
		return true
	default:
		return false
	}
}

// launch runs a command in the background, in the order decided and at
// most Options.Workers at once, and hands its result to done under the
// dispatcher's lock.
func (d *Dispatcher) launch(what string, run func(context.Context) (commands.Outcome, error), done func(commands.Outcome, error)) {
	ctx := d.runCtx
	if d.owner != nil {
		// The decision is fenced with the epoch owned when it was made: if
		// this replica is deposed before the append commits, nothing is
		// appended.
		f := d.owner.Fence()
		if f == nil {
			go func() {
				d.mu.Lock()
				defer d.mu.Unlock()
				done(commands.Outcome{}, &eventstore.FencedError{Fence: "dispatch", Reason: "this replica no longer owns the decisions"})
			}()
			return
		}
		ctx = eventstore.WithFence(ctx, f)
	}
	d.commands.push(func() {
		if ctx.Err() != nil {
			return
		}
		out, err := run(ctx)
		if err != nil && ctx.Err() == nil {
			lvl := d.log.Warn()
			if isExpected(err) {
				// The log moved on since the decision (an agent or an
				// operator acted first): the next pass sees it.
				lvl = d.log.Debug()
			}
			lvl.Err(err).Str("command", what).Msg("dispatcher command refused")
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		done(out, err)
	})
}

// meta is the metadata of the dispatcher's own commands.
func (d *Dispatcher) meta(tenant string) commands.Meta {
	return commands.Meta{Actor: Actor, Tenant: tenant}
}

// Actor is the actor the dispatcher's commands are recorded under.
const Actor = "dispatcher"
