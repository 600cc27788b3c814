// Package reconciler keeps deployed services as their log says they
// should be. On an interval, and at once when a node goes down, it
// observes every resource of every settled service (running, registered,
// stopped), records drift when what it sees changes (never once per pass),
// and asks for a repair of what is missing or stood on a lost node; the
// orchestrator carries the repair out. It keeps nothing that matters in
// memory: the services come from the read models, each service's and
// resource's state from its own stream, and every decision is an append at
// the versions it read, so a pass cut short is simply made again.
package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/node"
	"cairn/domain/ocl"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/eventstore"
	"cairn/plugins"
	"cairn/projections/readmodel"
	"cairn/scheduler"
)

// Store is what the reconciler needs of the event log.
type Store interface {
	commands.Store
	ReadStreams(ctx context.Context, streamIDs []string) (map[string][]eventstore.RecordedEvent, error)
	Subscribe(ctx context.Context, opts eventstore.SubscribeOptions, handle func(context.Context, eventstore.Batch) error) error
	Head(ctx context.Context) (eventstore.Cursor, error)
}

// Config holds the reconciler's dependencies and settings.
type Config struct {
	Store   Store
	Reader  *readmodel.Reader
	Plugins *plugins.Registry
	// Scheduler knows every node's state; nil treats every node as up.
	Scheduler *scheduler.Scheduler
	// Interval between passes (jittered by up to a fifth); default 30 s.
	Interval time.Duration
	// Backoff after a failed repair, doubling with each failure since the
	// last success, up to Interval × 8; default Interval.
	Backoff time.Duration
	// ObserveTimeout bounds one plugin observe call; default 10 s.
	ObserveTimeout time.Duration
	Clock          func() time.Time
	Log            zerolog.Logger
	// OnPass, when set, is told what each pass of Run saw and did (metrics,
	// tests).
	OnPass func(PassStats)
}

// Reconciler is the control loop. Build it with New and run it with Run.
type Reconciler struct {
	cfg     Config
	trigger chan struct{}
}

// New returns a reconciler.
func New(cfg Config) (*Reconciler, error) {
	if cfg.Store == nil || cfg.Reader == nil || cfg.Plugins == nil {
		return nil, errors.New("reconciler: Store, Reader and Plugins are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = cfg.Interval
	}
	if cfg.ObserveTimeout <= 0 {
		cfg.ObserveTimeout = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Reconciler{cfg: cfg, trigger: make(chan struct{}, 1)}, nil
}

// Trigger asks for a pass now (coalesced with one already asked for).
func (r *Reconciler) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// Run makes passes until ctx ends: on the interval, and at once when a
// node goes down or is decommissioned.
func (r *Reconciler) Run(ctx context.Context) error {
	go r.watchNodes(ctx)
	for {
		st, err := r.Pass(ctx)
		if err != nil && ctx.Err() == nil {
			r.cfg.Log.Warn().Err(err).Msg("reconciler pass failed; the next one tries again")
		}
		if r.cfg.OnPass != nil && err == nil {
			r.cfg.OnPass(st)
		}
		wait := r.cfg.Interval + time.Duration(rand.Int64N(int64(r.cfg.Interval)/5+1))
		if err != nil {
			// The database or the read models were not there: soon again.
			wait = min(wait, 2*time.Second)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		case <-r.trigger:
		}
	}
}

// watchNodes triggers a pass when a node goes down or is decommissioned.
func (r *Reconciler) watchNodes(ctx context.Context) {
	head, err := r.cfg.Store.Head(ctx)
	if err != nil {
		return
	}
	filter := eventstore.Filter{StreamTypes: []string{domain.NodeStream},
		EventTypes: []string{(node.WentDown{}).EventType(), (node.Decommissioned{}).EventType()}}
	_ = r.cfg.Store.Subscribe(ctx, eventstore.SubscribeOptions{From: head, Filter: filter},
		func(_ context.Context, b eventstore.Batch) error {
			// A batch comes for every read of the log, matching or not.
			if len(b.Events) == 0 {
				return nil
			}
			// Let the scheduler's view take the event in first.
			time.Sleep(50 * time.Millisecond)
			r.Trigger()
			return nil
		})
}

// PassStats says what one pass saw and did.
type PassStats struct {
	Services, Resources int
	Drifts, Cleared     int
	Repairs             int
	// HealthChanges counts health check results that changed.
	HealthChanges int
	Appended      int
}

// settled are the statuses a pass looks at.
var settled = []service.Status{service.StatusRunning, service.StatusRegistered, service.StatusStopped}

// Pass observes every settled service once.
func (r *Reconciler) Pass(ctx context.Context) (PassStats, error) {
	var st PassStats
	nodes, err := r.nodeStates(ctx)
	if err != nil {
		return st, err
	}
	page := readmodel.Page{First: 200}
	for {
		conn, err := r.cfg.Reader.ListServices(ctx, readmodel.ServiceFilter{Status: settled}, page)
		if err != nil {
			return st, fmt.Errorf("reconciler: list services: %w", err)
		}
		ids := make([]string, 0, len(conn.Edges))
		for _, e := range conn.Edges {
			ids = append(ids, e.Node.ID)
		}
		if err := r.reconcile(ctx, ids, nodes, &st); err != nil {
			return st, err
		}
		if !conn.PageInfo.HasNextPage {
			return st, nil
		}
		page.After = conn.PageInfo.EndCursor
	}
}

type nodeState struct {
	name string
	down bool
}

func (r *Reconciler) nodeStates(ctx context.Context) (map[string]nodeState, error) {
	out := map[string]nodeState{}
	if r.cfg.Scheduler == nil {
		return out, nil
	}
	cands, err := r.cfg.Scheduler.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range cands {
		out[n.ID] = nodeState{name: n.Hostname, down: n.Status == node.StatusDown || n.Status == node.StatusDecommissioned}
	}
	return out, nil
}

type loaded[S any] struct {
	state   S
	version int64
	// driftAt is the position of the event that recorded the drift the
	// state holds (0 when none), the cause of a repair asked for later.
	driftAt int64
}

// fold reads streams in one query and folds each into its state.
func fold[S any, PS interface {
	*S
	Apply(domain.Event)
}](ctx context.Context, store Store, streamType string, ids []string) (map[string]loaded[S], error) {
	streams := make([]string, len(ids))
	for i, id := range ids {
		streams[i] = domain.StreamID(streamType, id)
	}
	recs, err := store.ReadStreams(ctx, streams)
	if err != nil {
		return nil, err
	}
	out := make(map[string]loaded[S], len(ids))
	for i, id := range ids {
		var l loaded[S]
		for _, rec := range recs[streams[i]] {
			ev, err := store.Decode(rec)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", streamType, id, err)
			}
			PS(&l.state).Apply(ev)
			l.version = rec.Version
			switch ev.(type) {
			case resource.DriftFound:
				l.driftAt = rec.Position
			case resource.DriftCleared:
				l.driftAt = 0
			}
		}
		out[id] = l
	}
	return out, nil
}

// reconcile observes a batch of services.
func (r *Reconciler) reconcile(ctx context.Context, ids []string, nodes map[string]nodeState, st *PassStats) error {
	svcs, err := fold[service.Service](ctx, r.cfg.Store, domain.ServiceStream, ids)
	if err != nil {
		return fmt.Errorf("reconciler: read services: %w", err)
	}
	var resIDs []string
	for _, id := range ids {
		resIDs = append(resIDs, svcs[id].state.ResourceIDs...)
	}
	res, err := fold[resource.Resource](ctx, r.cfg.Store, domain.ResourceStream, resIDs)
	if err != nil {
		return fmt.Errorf("reconciler: read resources: %w", err)
	}
	for _, id := range ids {
		s := svcs[id]
		if !slices.Contains(settled, s.state.Status) {
			continue // it moved on since the read models listed it
		}
		st.Services++
		if err := r.reconcileService(ctx, s.state, s.version, res, nodes, st); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// One service's trouble (a conflict with the orchestrator, say)
			// does not stop the pass; the next pass sees it again.
			r.cfg.Log.Warn().Err(err).Str("service", s.state.Name).Str("service_id", id).Msg("reconciler could not record what it observed")
		}
	}
	return nil
}

// reconcileService observes one service's resources, records drift that
// changed, and asks for the repair of what is missing or on a lost node.
func (r *Reconciler) reconcileService(ctx context.Context, s service.Service, version int64, res map[string]loaded[resource.Resource],
	nodes map[string]nodeState, st *PassStats) error {
	md := eventstore.Metadata{Actor: "reconciler", Tenant: s.TenantID, CorrelationID: "reconcile-" + s.ID}
	var broken []string
	var reasons []string
	var cause eventstore.Cursor
	var causeAt int64 // a drift recorded before this pass
	now := r.cfg.Clock()
	for _, rid := range s.ResourceIDs {
		l, ok := res[rid]
		if !ok || !l.state.Exists() || l.state.Status == resource.StatusDestroyed || l.state.Status == resource.StatusPending {
			continue
		}
		st.Resources++
		kind, detail := r.observe(ctx, s, l.state, nodes)
		var evs []domain.Event
		var err error
		if kind != "" {
			evs, err = l.state.FindDrift(kind, truncate(detail), now)
		} else {
			evs, err = l.state.ClearDrift(now)
		}
		if err != nil {
			return err
		}
		drifted := len(evs) > 0
		if kind == "" && s.Status == service.StatusRunning {
			health, err := r.checkHealth(ctx, s, l.state, res, now)
			if err != nil {
				return err
			}
			evs = append(evs, health...)
			st.HealthChanges += len(health)
		}
		if len(evs) > 0 {
			out, err := r.cfg.Store.Append(ctx, eventstore.AppendRequest{Metadata: md, Streams: []eventstore.StreamAppend{{
				StreamID: domain.StreamID(domain.ResourceStream, rid), StreamType: domain.ResourceStream,
				Expected: eventstore.Exactly(l.version), Events: evs}}})
			if err != nil {
				return err
			}
			st.Appended += len(evs)
			switch {
			case drifted && kind != "":
				st.Drifts++
				cause = out.Cursor
			case drifted:
				st.Cleared++
			}
		}
		if kind.Repairable() {
			broken = append(broken, rid)
			reasons = append(reasons, detail)
			if cause.IsZero() && l.driftAt > 0 {
				// Found by an earlier pass (this one backs off, or retries).
				causeAt = l.driftAt
			}
		}
	}
	if len(broken) == 0 || r.backingOff(s, now) {
		return nil
	}
	repair := withDependents(s.ResourceIDs, broken, res)
	// The causation is the position of the drift event, as the
	// orchestrator names the request its steps carry out.
	if !cause.IsZero() {
		causeAt = cause.Position
	}
	if causeAt > 0 {
		md.CausationID = strconv.FormatInt(causeAt, 10)
	}
	evs, err := s.RequestRepair(service.RequestRepair{ServiceID: s.ID, Resources: repair,
		Reason: truncate(strings.Join(reasons, "; ")), At: now})
	if err != nil {
		return err
	}
	_, err = r.cfg.Store.Append(ctx, eventstore.AppendRequest{Metadata: md, Streams: []eventstore.StreamAppend{{
		StreamID: domain.StreamID(domain.ServiceStream, s.ID), StreamType: domain.ServiceStream,
		Expected: eventstore.Exactly(version), Events: evs}}})
	if err != nil {
		return err
	}
	st.Repairs++
	st.Appended += len(evs)
	r.cfg.Log.Info().Str("service", s.Name).Str("service_id", s.ID).Strs("resources", repair).Str("why", strings.Join(reasons, "; ")).
		Msg("reconciler asked for a repair")
	return nil
}

// backingOff reports whether the last failed repair is too recent to try
// again: the wait doubles with each failure since the last success.
func (r *Reconciler) backingOff(s service.Service, now time.Time) bool {
	n := len(s.RepairFailures)
	if n == 0 {
		return false
	}
	wait := r.cfg.Backoff << min(n-1, 3)
	return now.Before(s.RepairFailures[n-1].Add(wait))
}

// withDependents adds to broken every resource that depends on one of
// them, directly or not (its properties may name their outputs), in the
// service's order.
func withDependents(all, broken []string, res map[string]loaded[resource.Resource]) []string {
	in := map[string]bool{}
	for _, id := range broken {
		in[id] = true
	}
	for changed := true; changed; {
		changed = false
		for _, id := range all {
			if in[id] {
				continue
			}
			for _, dep := range res[id].state.DependsOn {
				if in[dep] {
					in[id], changed = true, true
					break
				}
			}
		}
	}
	var out []string
	for _, id := range all {
		if in[id] {
			out = append(out, id)
		}
	}
	return out
}

// observe says how the resource differs from what its service wants; ""
// when it does not. A resource on one of Cairn's nodes is judged by its
// node (its agent watches what runs there); any other is asked of its
// plugin.
func (r *Reconciler) observe(ctx context.Context, s service.Service, res resource.Resource, nodes map[string]nodeState) (resource.DriftKind, string) {
	if _, placed := scheduler.PlacedType(r.cfg.Plugins, res.Plugin, res.Type); placed {
		if n, ok := nodes[res.NodeID]; ok && res.NodeID != "" && n.down {
			return resource.DriftNodeDown, fmt.Sprintf("node %s is down", n.name)
		}
		return "", ""
	}
	octx, cancel := context.WithTimeout(ctx, r.cfg.ObserveTimeout)
	defer cancel()
	_, err := r.cfg.Plugins.Call(octx, res.Plugin, plugins.OpObserve, plugins.Request{ResourceID: res.ID, Type: res.Type,
		Properties: res.Properties, Outputs: res.Outputs, ServiceID: s.ID, TenantID: s.TenantID})
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, plugins.ErrNotFound):
		return resource.DriftMissing, fmt.Sprintf("%s %s does not exist any more", res.Plugin, res.Type)
	case ctx.Err() != nil:
		return "", ""
	}
	return resource.DriftUnobserved, err.Error()
}

// checkHealth has the plugin that owns the resource evaluate its health
// checks (their properties resolved from the service's resources'
// outputs), and returns the events of the results that changed. A check
// the plugin does not evaluate is left unrecorded; one that cannot be
// asked (the node's agent away, say) counts as failing.
func (r *Reconciler) checkHealth(ctx context.Context, s service.Service, res resource.Resource, all map[string]loaded[resource.Resource], now time.Time) ([]domain.Event, error) {
	if len(res.Checks) == 0 {
		return nil, nil
	}
	output := func(name string, index int, key string) (json.RawMessage, bool) {
		inst := name
		if index >= 0 {
			inst = fmt.Sprintf("%s[%d]", name, index)
		}
		var outs map[string]json.RawMessage
		if json.Unmarshal(all[ocl.ResourceID(s.ID, inst)].state.Outputs, &outs) != nil {
			return nil, false
		}
		v, ok := outs[key]
		return v, ok
	}
	req := plugins.Request{ResourceID: res.ID, Type: res.Type, Properties: res.Properties, Outputs: res.Outputs,
		ServiceID: s.ID, TenantID: s.TenantID, Node: res.NodeID}
	var evs []domain.Event
	state := res
	for _, c := range res.Checks {
		props, err := ocl.ResolveProperties(c.Properties, output)
		var h plugins.Health
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, max(c.Timeout, time.Second)+r.cfg.ObserveTimeout)
			h, err = r.cfg.Plugins.CheckHealth(cctx, res.Plugin, req, plugins.Check{Name: c.Name, Type: c.Type, Properties: props, Timeout: c.Timeout})
			cancel()
		}
		switch {
		case errors.Is(err, plugins.ErrCheckUnsupported):
			continue
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			h = plugins.Health{Detail: "could not be checked: " + err.Error()}
		}
		out, err := state.RecordHealth(c.Name, h.Healthy, truncate(h.Detail), now)
		if err != nil {
			return nil, err
		}
		for _, ev := range out {
			state.Apply(ev)
		}
		evs = append(evs, out...)
	}
	return evs, nil
}

func truncate(s string) string {
	const n = resource.MaxDriftDetailLength - 8
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + " …"
}
