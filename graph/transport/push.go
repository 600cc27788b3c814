package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"unsafe"

	"github.com/99designs/gqlgen/graphql"

	"cairn/eventstore"
	"cairn/internal/workpool"
)

// Push lets a subscription's resolver tell the transport when a value is
// ready on its channel, so that nothing waits on the channel in between:
// a connection that waits then costs no goroutine. A resolver that takes
// it (Pushed) calls Sent after each value it put on the channel and Closed
// once it will send no more (after closing the channel, or when it returns
// an error). Both are safe to call from any goroutine, under the caller's
// locks, and on a nil Push.
//
// A resolver whose result for an event depends on nothing but the event
// (and the operation and caller) says so (Shares) and which event each
// value is of (SentEvent): the first result made for an event is then kept,
// and the same operation of the same caller on any other connection sends
// it again instead of running the operation on its own value, which is
// dropped from the channel. With two hundred portals watching the log,
// every event ran two hundred times.
type Push struct {
	mu      sync.Mutex
	claimed bool
	queue   []pushed // the values ready, in the order they were sent
	spare   []pushed // an empty array for queue, while the worker takes the last
	closed  bool     // the channel is closed: take until the end
	running bool     // a goroutine is taking
	take    func(pushed) bool
	// takeKept, when set, takes a run of kept results (pushed.isKept) in
	// one go: the transport writes it as the other subscriptions of the
	// operation wrote the same run, rather than result by result.
	takeKept func([]pushed)
	workers  *workpool.Pool
	// busy and idle, when set, bracket each run of takes: the transport
	// holds back what take writes until idle, so that the results ready
	// at once leave in one write to the peer instead of one each.
	busy, idle func()
	// shared keeps results for other subscriptions of op; nil when the
	// operation's results may not be shared.
	shared *sharedResults
	op     [32]byte
	// drop takes the next value off the channel unseen (Shares); nil when
	// the resolver's results are not the event's alone.
	drop func()
	// onRoom, when set, is called once the transport took what waits
	// (Room).
	onRoom func()
	// kept is the response a kept result is handed over in: one at a
	// time, as results are taken one at a time.
	kept graphql.Response
}

// keptQueue is the longest queue a drained Push keeps for the next burst:
// 16 KiB of it (341 values), which the queue of a paced publish of the
// API's hub (fewer than 256 events) never outgrows. Kept to 4 KiB (85), it
// was outgrown and dropped at most publishes of a flood of 1,500
// mutations a second.
const keptQueue = 16 << 10 / int(unsafe.Sizeof(pushed{}))

// pushed is one value ready on the channel, of event when shared is set;
// with data, the result kept for event instead, and nothing on the channel.
type pushed struct {
	shared bool
	event  eventstore.Cursor
	data   json.RawMessage
}

// isKept reports whether it is a result kept for its event (SentKept).
func (it pushed) isKept() bool { return it.shared && it.data != nil }

// Kept is a result another subscription of the same operation and caller
// made for an event (Push.Kept), to be sent as it is.
type Kept struct {
	Event eventstore.Cursor
	Data  json.RawMessage
}

type pushKey struct{}

// Pushed is the request's Push when its transport can use one, nil
// otherwise (the resolver then needs to do nothing more).
func Pushed(ctx context.Context) *Push {
	p, _ := ctx.Value(pushKey{}).(*Push)
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.claimed = true
	return p
}

// newPush is the Push of a subscription; its results are shared with the
// same operation of the same caller when shared is not nil.
func newPush(ctx context.Context, workers *workpool.Pool, shared *sharedResults) *Push {
	p := &Push{workers: workers}
	if shared == nil || !graphql.HasOperationContext(ctx) {
		return p
	}
	sess := sessionFrom(ctx)
	if sess == nil {
		return p
	}
	if op, ok := answerKey(graphql.GetOperationContext(ctx), sess.principal, 0); ok {
		p.shared, p.op = shared, op
	}
	return p
}

// Sent says one more value is on the channel.
func (p *Push) Sent() { p.send(pushed{}) }

// Shares says the resolver's values depend on their event alone, and
// hands over how to take the next value off the channel unseen. Called
// once, before the first value is sent.
func (p *Push) Shares(drop func()) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop = drop
}

// SentEvent says one more value is on the channel, the one of event.
func (p *Push) SentEvent(event eventstore.Cursor) { p.send(pushed{shared: true, event: event}) }

// Kept returns the result kept for event, if another subscription of the
// same operation and caller made it: the resolver then says so with
// SentKept, and puts nothing on the channel for it.
func (p *Push) Kept(event eventstore.Cursor) (json.RawMessage, bool) {
	if p == nil || p.shared == nil || p.drop == nil {
		return nil, false
	}
	return p.shared.Get(sharedKey{op: p.op, event: event})
}

// SentKept says more results are ready, the ones kept for their events
// (Kept), in order; nothing is on the channel for them.
func (p *Push) SentKept(kept ...Kept) {
	if p == nil || len(kept) == 0 {
		return
	}
	p.mu.Lock()
	for _, k := range kept {
		p.queue = append(p.queue, pushed{shared: true, event: k.Event, data: k.Data})
	}
	p.kick()
}

func (p *Push) send(it pushed) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.queue = append(p.queue, it)
	p.kick()
}

// Hold holds back what the transport writes until Release: values a
// resolver makes ready in a row (the events of one wake-up) then leave in
// one write, however the worker taking them interleaves with the resolver.
func (p *Push) Hold() {
	if p != nil && p.busy != nil {
		p.busy()
	}
}

// Release ends a Hold; the last one writes what was held back.
func (p *Push) Release() {
	if p != nil && p.idle != nil {
		p.idle()
	}
}

// Room reports whether fewer than n values wait for the transport. When
// not, wake is called once the transport took them: a resolver that sends
// nothing on its channel for a kept result (SentKept) is held back by that
// instead of by the channel's buffer, without a goroutine waiting.
func (p *Push) Room(n int, wake func()) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) < n {
		return true
	}
	p.onRoom = wake
	return false
}

// Closed says no value will follow the ones already sent.
func (p *Push) Closed() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.kick()
}

// arm hands over the function that takes one result (reporting whether
// the operation ended), and optionally the one that takes a run of kept
// results; false when the resolver did not take the Push.
func (p *Push) arm(take func(pushed) bool, takeKept func([]pushed)) bool {
	p.mu.Lock()
	if !p.claimed {
		p.mu.Unlock()
		return false
	}
	p.take, p.takeKept = take, takeKept
	p.kick()
	return true
}

// kick has a worker take what is ready, unless one is taking.
// Called with p.mu held; unlocks it.
func (p *Push) kick() {
	if p.take == nil || p.running || (len(p.queue) == 0 && !p.closed) {
		p.mu.Unlock()
		return
	}
	p.running = true
	p.mu.Unlock()
	p.workers.Go(p.run)
}

// run takes what is ready, everything queued at a time: the resolver
// queues a wake-up's results in one go, and the kept ones among them are
// handed to the transport as one run.
func (p *Push) run() {
	if p.busy != nil {
		p.busy()
	}
	if p.idle != nil {
		defer p.idle()
	}
	for {
		p.mu.Lock()
		if len(p.queue) == 0 && !p.closed {
			p.running = false
			p.mu.Unlock()
			return
		}
		batch := p.queue
		p.queue, p.spare = p.spare, nil
		var room func()
		if p.onRoom != nil {
			room, p.onRoom = p.onRoom, nil
		}
		take, takeKept := p.take, p.takeKept
		p.mu.Unlock()
		if room != nil {
			room()
		}
		if len(batch) == 0 { // closed and nothing queued: take the end
			batch = append(batch, pushed{})
		}
		for i := 0; i < len(batch); {
			if takeKept != nil && batch[i].isKept() {
				j := i + 1
				for j < len(batch) && batch[j].isKept() {
					j++
				}
				takeKept(batch[i:j])
				i = j
				continue
			}
			if take(batch[i]) {
				p.mu.Lock()
				p.queue, p.spare, p.closed, p.take, p.takeKept = nil, nil, false, nil, nil
				p.running = false
				p.mu.Unlock()
				return
			}
			i++
		}
		// A subscription that waits keeps no queue a long burst grew, but
		// keeps one a paced publish fills: grown again for every publish,
		// it was 4 % of the server's time under a flood with 200
		// subscribers.
		if cap(batch) <= keptQueue {
			clear(batch)
			p.mu.Lock()
			if len(p.queue) == 0 {
				p.queue = batch[:0]
			} else if p.spare == nil {
				p.spare = batch[:0]
			}
			p.mu.Unlock()
		}
	}
}

// result is the result of the value it stands for: the one kept for its
// event (SentKept, or kept since its value was sent: that value is
// dropped), or the operation's next, which is kept for the others when it
// may be. The response is the transport's until the next call.
func (p *Push) result(ctx context.Context, it pushed, responses graphql.ResponseHandler) *graphql.Response {
	share := it.shared && p.shared != nil && p.drop != nil
	if share && it.data != nil {
		p.kept = graphql.Response{Data: it.data}
		return &p.kept
	}
	key := sharedKey{op: p.op, event: it.event}
	if share {
		if data, ok := p.shared.Get(key); ok {
			p.drop()
			p.kept = graphql.Response{Data: data}
			return &p.kept
		}
	}
	resp := responses(ctx)
	if share && resp != nil && plainResponse(resp) && len(resp.Data) <= maxSharedResult {
		// The executor writes a subscription's every result into one
		// buffer: what is kept is a copy.
		p.shared.Add(key, bytes.Clone(resp.Data))
	}
	return resp
}

// sharedResults are the results of subscriptions kept for the others of
// the same operation and caller: the most recent ones only, as every
// subscriber is sent an event within moments of the others.
type sharedResults = recentMap[sharedKey, json.RawMessage]

// newSharedResults keeps up to size results (at least one).
func newSharedResults(size int) *sharedResults {
	return newRecentMap[sharedKey, json.RawMessage](size)
}

// recentMap keeps the values of the keys added last, up to its size, the
// oldest added going first. Every subscriber looks up every event in one,
// so a look-up shares a read lock and changes nothing (a
// least-recently-used list, moving what it finds, made them wait on each
// other).
type recentMap[K comparable, V any] struct {
	mu    sync.RWMutex
	kept  map[K]V
	order []K // a ring of the keys kept, oldest at next once full
	next  int
}

// newRecentMap keeps up to size values (at least one).
func newRecentMap[K comparable, V any](size int) *recentMap[K, V] {
	size = max(size, 1)
	return &recentMap[K, V]{kept: make(map[K]V, size), order: make([]K, 0, size)}
}

// Get returns the value kept for key.
func (r *recentMap[K, V]) Get(key K) (V, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.kept[key]
	return v, ok
}

// Add keeps v for key, in place of the oldest once full, and returns what
// is kept for key: v, or the value another added first.
func (r *recentMap[K, V]) Add(key K, v V) V {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kept, ok := r.kept[key]; ok {
		return kept
	}
	if len(r.order) < cap(r.order) {
		r.order = append(r.order, key)
	} else {
		delete(r.kept, r.order[r.next])
		r.order[r.next] = key
		r.next = (r.next + 1) % len(r.order)
	}
	r.kept[key] = v
	return v
}

// Len is how many values are kept.
func (r *recentMap[K, V]) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.kept)
}

type sharedKey struct {
	op    [32]byte // the operation, its variables and its caller (answerKey)
	event eventstore.Cursor
}

// sharedResultsKept is how many results are kept: a few seconds of a
// flood's events for a few operations.
const sharedResultsKept = 8192

// maxSharedResult bounds one kept result.
const maxSharedResult = 64 << 10
