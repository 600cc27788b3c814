package graph

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"sync"

	"cairn/eventstore"
	"cairn/graph/live"
	"cairn/graph/model"
	"cairn/graph/transport"
	"cairn/internal/ptr"
	"cairn/internal/workpool"
)

// toEvent renders a recorded event for the API, its payload upcast to the
// current schema version.
func (r *Resolver) toEvent(e *eventstore.RecordedEvent) (*model.Event, error) {
	payload, err := r.deps.Store.Registry().Upcast(e.Type, e.SchemaVersion, e.Payload)
	if err != nil {
		// An event this build does not know: show it as stored.
		payload = e.Payload
	}
	m := e.Metadata
	return &model.Event{
		Cursor:        model.Cursor(e.Cursor()),
		Position:      e.Position,
		StreamID:      e.StreamID,
		StreamType:    e.StreamType,
		Version:       int(e.Version),
		Type:          e.Type,
		SchemaVersion: e.SchemaVersion,
		Payload:       model.JSON(payload),
		Metadata: &model.EventMetadata{
			CommandID:     optional(e.CommandID),
			CorrelationID: optional(m.CorrelationID),
			CausationID:   optional(m.CausationID),
			Actor:         optional(m.Actor),
			TenantID:      optional(m.Tenant),
		},
		Time:     e.RecordedAt,
		PrevHash: hex.EncodeToString(e.PrevHash),
		Hash:     hex.EncodeToString(e.Hash),
	}, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// visibleFilter turns the API's filter into the history's, narrowed to what
// the caller may see: a tenant role sees its own tenant's events only.
func visibleFilter(p Principal, f *model.EventFilter) eventstore.Filter {
	var out eventstore.Filter
	if f != nil {
		out = eventstore.Filter{
			StreamIDs: f.StreamIds, StreamTypes: f.StreamTypes, EventTypes: f.Types,
			Actor: ptr.Value(f.Actor), CorrelationID: ptr.Value(f.CorrelationID), Tenant: ptr.Value(f.TenantID),
		}
		if f.Time != nil {
			if f.Time.From != nil {
				out.From = *f.Time.From
			}
			if f.Time.To != nil {
				out.To = *f.Time.To
			}
		}
	}
	if tenantScoped(p) {
		out.Tenant = p.TenantID
	}
	return out
}

// eventPage reads one page of the history as a connection: forwards from
// after, or backwards (last, before) from before or the head.
func (r *Resolver) eventPage(ctx context.Context, first *int, after *model.Cursor, last *int, before *model.Cursor, f eventstore.Filter) (*model.EventConnection, error) {
	back, err := backwards(first, after != nil, last, before != nil)
	if err != nil {
		return nil, err
	}
	arg, size := "first", first
	if back {
		arg, size = "last", last
	}
	n, err := pageSizeOf(arg, size, 100)
	if err != nil {
		return nil, err
	}
	var from eventstore.Cursor
	switch {
	case back && before != nil:
		from = eventstore.Cursor(*before)
	case !back && after != nil:
		from = eventstore.Cursor(*after)
	}
	// Like every read of the log in global order, a page only holds events
	// no running transaction can still precede, so a page boundary never
	// skips a late commit. A page of 0 still reads one event: it says
	// whether there are any.
	var evs []eventstore.RecordedEvent
	if back {
		evs, err = r.deps.Store.ReadBefore(ctx, from, n+1, f)
	} else {
		evs, err = r.deps.Store.ReadAll(ctx, from, n+1, f)
	}
	if err != nil {
		return nil, err
	}
	more := len(evs) > n
	if more {
		evs = evs[:n]
	}
	conn := &model.EventConnection{Edges: []model.EventEdge{}, PageInfo: &model.PageInfo{}}
	if back {
		slices.Reverse(evs)
		conn.PageInfo.HasPreviousPage, conn.PageInfo.HasNextPage = more, !from.IsZero()
	} else {
		conn.PageInfo.HasNextPage, conn.PageInfo.HasPreviousPage = more, !from.IsZero()
	}
	for i := range evs {
		ev, err := r.toEvent(&evs[i])
		if err != nil {
			return nil, err
		}
		conn.Edges = append(conn.Edges, model.EventEdge{Cursor: evs[i].Cursor().String(), Node: ev})
	}
	if len(evs) > 0 {
		start, end := evs[0].Cursor().String(), evs[len(evs)-1].Cursor().String()
		conn.PageInfo.StartCursor, conn.PageInfo.EndCursor = &start, &end
	}
	return conn, nil
}

// subscribe runs one subscription over a hub: events after `after` (from
// the log's head when nil) that match, each turned into a result by render (which may
// skip an event by returning nil). It ends, with the reason delivered to the
// client, when the subscriber falls behind, the session's token stops
// working, or the server stops.
func subscribe[T any](ctx context.Context, r *Resolver, hub *live.Hub, after *model.Cursor, match live.Match,
	render func(context.Context, live.Event) (*T, error)) (<-chan *T, error) {
	return subscribeTo(ctx, r, hub, after, match, render, false)
}

// subscribeShared is subscribe for a render that depends on the event
// alone: an event's result for an operation and caller is then made once
// and sent to every subscription of that operation and caller.
func subscribeShared[T any](ctx context.Context, r *Resolver, hub *live.Hub, after *model.Cursor, match live.Match,
	render func(context.Context, live.Event) (*T, error)) (<-chan *T, error) {
	return subscribeTo(ctx, r, hub, after, match, render, true)
}

func subscribeTo[T any](ctx context.Context, r *Resolver, hub *live.Hub, after *model.Cursor, match live.Match,
	render func(context.Context, live.Event) (*T, error), shared bool) (<-chan *T, error) {
	var from eventstore.Cursor
	if after != nil {
		from = eventstore.Cursor(*after)
	} else {
		// Without after, a subscription starts strictly after the moment it
		// was made: at the log's head, not at the hub's position, which
		// trails the log while the read models apply a change made just
		// before.
		head, err := r.deps.Store.Head(ctx)
		if err != nil {
			return nil, err
		}
		from = head
	}
	sub, err := hub.Subscribe(ctx, &from, match)
	if err != nil {
		return nil, err
	}
	// Nothing waits per subscription: the hub tells when an event (or the
	// end) may be ready, and a short-lived goroutine delivers what is; the
	// session's end cancels through a callback; and the transport, told when
	// a value is ready (push), needs nothing waiting on the channel either.
	// The buffer lets values be ready before the transport is told, and
	// lets a burst be rendered while the transport writes its first ones:
	// the transport then finds several ready and sends them together.
	out := make(chan *T, deliveryBurst)
	d := &delivery[T]{sub: sub, out: out, render: render, shared: shared, sess: transport.SessionOf(ctx), push: transport.Pushed(ctx), workers: r.workers}
	d.ctx, d.cancel = context.WithCancel(ctx)
	if d.sess != nil {
		d.stopEnd = d.sess.AfterEnd(d.cancel)
	}
	if shared {
		d.push.Shares(func() { <-out })
	}
	d.woken = d.wake
	context.AfterFunc(d.ctx, d.woken)
	sub.Notify(d.woken)
	return out, nil
}

// deliveryBurst is how many results of a subscription it renders itself
// may wait for its transport on the channel.
const deliveryBurst = 16

// deliveryRun is the most kept results handed to the transport at once:
// the events of a paced publish, mostly (most publish fewer under a
// flood), and a stack array of it stays small.
const deliveryRun = 64

// deliveryQueue is how many results of a subscription may wait for its
// transport in all: enough for a paced publish (live.Feed) to be handed
// over in one go, so that its results leave in one write. Kept results
// (rendered for another subscription) cost a slot of the transport's
// queue each, not a copy.
const deliveryQueue = 256

// delivery hands a hub subscription's events to a subscription's channel,
// one goroutine at a time and only while there is something to hand over.
type delivery[T any] struct {
	ctx     context.Context
	cancel  context.CancelFunc
	sub     *live.Sub
	out     chan *T
	render  func(context.Context, live.Event) (*T, error)
	shared  bool // render depends on the event alone (subscribeShared)
	sess    *transport.Session
	push    *transport.Push
	workers *workpool.Pool
	stopEnd func() bool
	woken   func() // wake, made a func once: each use of d.wake as one allocates

	mu      sync.Mutex
	running bool // a goroutine is delivering
	again   bool // woken since the running goroutine last looked
	ended   bool
}

// wake has a worker deliver unless one is delivering; one that is looks
// again before it stops.
func (d *delivery[T]) wake() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.again = true
	if d.running || d.ended {
		return
	}
	d.running = true
	d.workers.Go(d.run)
}

func (d *delivery[T]) run() {
	d.push.Hold()
	defer d.push.Release()
	for {
		d.mu.Lock()
		d.again = false
		d.mu.Unlock()
		if !d.deliverReady() {
			return // ended
		}
		d.mu.Lock()
		if !d.again {
			d.running = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
	}
}

// deliverReady delivers the events ready now; false once the subscription
// ended.
func (d *delivery[T]) deliverReady() bool {
	// The kept results taken and not yet handed over: a subscription that
	// shares (subscribeShared) renders nothing when another of the same
	// operation rendered the event already, and the kept results are
	// handed over together, a run the transport writes as the others did.
	// The run lives on the stack of the worker delivering.
	var run [deliveryRun]transport.Kept
	kept := run[:0]
	for {
		if d.ctx.Err() != nil {
			d.end(nil)
			return false
		}
		// The transport's room is looked at once for each run, not for
		// each result.
		if len(kept) == 0 && !d.push.Room(deliveryQueue, d.woken) {
			return true // woken again once the transport took some
		}
		e, err := d.sub.TryNext(d.ctx)
		if err != nil {
			// What was taken is sent before the end: a subscriber ended as
			// slow resumes after the last event taken.
			d.push.SentKept(kept...)
			if !errors.Is(err, context.Canceled) {
				d.end(err)
			} else {
				d.end(nil)
			}
			return false
		}
		if e == nil {
			d.push.SentKept(kept...)
			return true
		}
		if data, ok := d.push.Kept(e.Cursor()); ok {
			kept = append(kept, transport.Kept{Event: e.Cursor(), Data: data})
			if len(kept) == len(run) {
				d.push.SentKept(kept...)
				kept = run[:0]
			}
			continue
		}
		d.push.SentKept(kept...)
		kept = run[:0]
		v, err := d.render(d.ctx, e)
		if err != nil {
			if d.ctx.Err() == nil {
				d.end(err)
			} else {
				d.end(nil) // the subscriber went away: nobody to tell
			}
			return false
		}
		if v == nil {
			continue
		}
		select {
		case d.out <- v:
			switch {
			case d.shared:
				d.push.SentEvent(e.Cursor())
			default:
				d.push.Sent()
			}
		case <-d.ctx.Done():
			d.end(nil)
			return false
		}
	}
}

// end closes the subscription, telling the client why: the session's end
// when that is the cause, else err when there is one.
func (d *delivery[T]) end(err error) {
	d.mu.Lock()
	d.ended = true
	d.mu.Unlock()
	switch {
	case d.sess != nil && d.sess.Err() != nil:
		transport.EndWith(d.ctx, d.sess.Err())
	case err != nil:
		transport.EndWith(d.ctx, err)
	}
	if d.stopEnd != nil {
		d.stopEnd()
	}
	d.cancel()
	d.sub.Close()
	close(d.out)
	d.push.Closed()
}
