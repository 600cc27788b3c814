// Package live fans the event log out to GraphQL subscribers.
//
// One store subscription per process feeds a Hub; every subscriber reads from
// the Hub's memory, so two thousand subscribers cost one database reader, not
// two thousand. A subscriber that starts behind the Hub (it resumes from an
// old cursor) catches up from a ring of recent events, or from the log itself
// when the ring no longer reaches back that far, and then joins the live
// stream at exactly the event after the last one it saw: no gap, no
// duplicate.
//
// Each subscriber's queue is bounded. The Hub never waits for a subscriber:
// one whose queue is full is detached, drains what it has, and then ends with
// a SlowConsumerError naming the cursor to resume from.
package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"cairn/eventstore"
)

// Event is a recorded event shared, read-only, by every subscriber.
type Event = *eventstore.RecordedEvent

// Reader reads the log in global order after a cursor, only events that no
// earlier-committing transaction can still precede (eventstore.Store.ReadAll).
type Reader func(ctx context.Context, after eventstore.Cursor, limit int) ([]eventstore.RecordedEvent, error)

// Options size a Hub. The zero value is usable.
type Options struct {
	// RingSize is how many recent events the Hub keeps for subscribers that
	// resume from a recent cursor; older cursors catch up from the log.
	RingSize int
	// QueueSize bounds the events waiting for one subscriber before it is
	// detached as too slow. The default, 4,096 (32 KiB of pointers to
	// events the hub shares), is under three seconds of a flood of 1,500
	// events a second: at 1,024, subscribers that a loaded machine left
	// without a core for two thirds of a second were ended by the hundred,
	// and each resumed with a read of the log and a render of its own.
	QueueSize int
	// CatchUpBatch is how many events a catching-up subscriber reads from
	// the log at once.
	CatchUpBatch int
}

func (o *Options) defaults() {
	if o.RingSize <= 0 {
		o.RingSize = 8192
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	if o.CatchUpBatch <= 0 {
		o.CatchUpBatch = 500
	}
}

// SlowConsumerError ends a subscription that fell too far behind. Resume is
// the cursor of the last event it delivered: subscribing again after it
// misses nothing.
type SlowConsumerError struct {
	Resume eventstore.Cursor
	Queue  int
}

func (e *SlowConsumerError) Error() string {
	return fmt.Sprintf("subscriber fell more than %d events behind and was disconnected; subscribe again with after: %q to continue where it stopped",
		e.Queue, e.Resume.String())
}

// ErrHubClosed ends subscriptions when the Hub stops.
var ErrHubClosed = errors.New("the server is shutting down; reconnect and resume from the last cursor received")

// Hub holds the live tail of the log and the subscribers reading it.
type Hub struct {
	opts Options
	read Reader

	mu     sync.Mutex
	ready  chan struct{} // closed by Start
	closed bool
	// cursor is the Hub's position: every event up to it has been published.
	cursor eventstore.Cursor
	// ring holds the most recent events in global order, oldest at
	// ring[head]; ringFrom is the cursor just before the oldest of them, so
	// the ring covers (ringFrom, cursor] without gaps.
	ring     []Event
	head     int
	size     int
	ringFrom eventstore.Cursor
	subs     map[*Sub]struct{}
}

// New makes a Hub that catches subscribers up with read. It delivers nothing
// until Start.
func New(read Reader, opts Options) *Hub {
	opts.defaults()
	return &Hub{
		opts:  opts,
		read:  read,
		ready: make(chan struct{}),
		ring:  make([]Event, opts.RingSize),
		subs:  map[*Sub]struct{}{},
	}
}

// Start sets the Hub's position: events after at arrive through Publish.
func (h *Hub) Start(at eventstore.Cursor) {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.ready:
		return
	default:
	}
	h.cursor, h.ringFrom = at, at
	close(h.ready)
}

// Cursor is the Hub's position (the zero cursor before Start).
func (h *Hub) Cursor() eventstore.Cursor {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cursor
}

// Position waits until the Hub has started and returns its position.
func (h *Hub) Position(ctx context.Context) (eventstore.Cursor, error) {
	select {
	case <-h.ready:
		return h.Cursor(), nil
	case <-ctx.Done():
		return eventstore.Cursor{}, ctx.Err()
	}
}

// Subscribers counts the subscribers attached to the live stream.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Publish appends events that follow the Hub's position, in global order,
// and hands each to the subscribers it matches. It never blocks on a
// subscriber.
func (h *Hub) Publish(events []Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	fresh := events[:0:0]
	for _, e := range events {
		if h.cursor.Less(e.Cursor()) {
			fresh = append(fresh, e)
		}
	}
	if len(fresh) == 0 {
		return
	}
	for _, e := range fresh {
		if h.size == len(h.ring) {
			h.ringFrom = h.ring[h.head].Cursor()
			h.ring[h.head] = nil
			h.head = (h.head + 1) % len(h.ring)
			h.size--
		}
		h.ring[(h.head+h.size)%len(h.ring)] = e
		h.size++
	}
	h.cursor = fresh[len(fresh)-1].Cursor()
	for s := range h.subs {
		if !s.offer(fresh) {
			delete(h.subs, s)
		}
	}
}

// Close ends every subscription with ErrHubClosed.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for s := range h.subs {
		s.fail(ErrHubClosed)
	}
	clear(h.subs)
	select {
	case <-h.ready:
	default:
		close(h.ready)
	}
}

// Match selects the events a subscriber receives. It runs on the publishing
// goroutine, so it must be quick and must not block.
type Match func(Event) bool

// Subscribe starts a subscription after the cursor after, or from the Hub's
// position when after is nil. Events arrive through Next.
func (h *Hub) Subscribe(ctx context.Context, after *eventstore.Cursor, match Match) (*Sub, error) {
	select {
	case <-h.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s := &Sub{hub: h, match: match, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrHubClosed
	}
	if after == nil {
		s.last = h.cursor
		h.attachLocked(s)
		return s, nil
	}
	s.last = *after
	if !h.tryAttachLocked(s) {
		s.catchingUp = true
	}
	return s, nil
}

// tryAttachLocked attaches s when the ring reaches back to its position,
// queueing the ring's events after it.
func (h *Hub) tryAttachLocked(s *Sub) bool {
	if s.last.Less(h.ringFrom) {
		return false
	}
	for i := range h.size {
		e := h.ring[(h.head+i)%len(h.ring)]
		if s.last.Less(e.Cursor()) && s.match(e) {
			s.queue = append(s.queue, e)
		}
	}
	h.attachLocked(s)
	return true
}

func (h *Hub) attachLocked(s *Sub) {
	h.subs[s] = struct{}{}
	if len(s.queue) > 0 {
		s.signal()
	}
}

func (h *Hub) detach(s *Sub) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// Sub is one subscription. One goroutine at a time calls Next or TryNext.
type Sub struct {
	hub   *Hub
	match Match
	wake  chan struct{}

	// Owned by the Next goroutine.
	catchingUp bool
	backlog    []eventstore.RecordedEvent
	// last is the cursor of the last event delivered or passed over: an
	// event at or before it is never delivered.
	last eventstore.Cursor

	mu    sync.Mutex
	queue []Event
	err   error

	notify atomic.Pointer[func()] // called with each wake, when set
}

// offer queues the events s matches. It reports false when s can take no
// more: s is then failed as slow and must be detached.
func (s *Sub) offer(events []Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false
	}
	added := false
	for _, e := range events {
		// A subscriber may start ahead of the hub (at the log's head while
		// the hub trails it): what it started after is not news to it.
		if !s.last.Less(e.Cursor()) || !s.match(e) {
			continue
		}
		if len(s.queue) >= s.hub.opts.QueueSize {
			// The resume cursor is set when the queue has drained: it is the
			// last event the subscriber actually delivered.
			s.err = &SlowConsumerError{Queue: s.hub.opts.QueueSize}
			s.signal()
			return false
		}
		s.queue = append(s.queue, e)
		added = true
	}
	if added {
		s.signal()
	}
	return true
}

func (s *Sub) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.signal()
}

func (s *Sub) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
	if f := s.notify.Load(); f != nil {
		(*f)()
	}
}

// Notify calls f now and whenever an event or the end may be waiting: a
// subscriber that reads with TryNext when told needs no goroutine waiting
// in Next. f runs under the hub's locks: it must be quick and must not
// block.
func (s *Sub) Notify(f func()) {
	s.notify.Store(&f)
	f()
}

// Last is the cursor of the last event Next returned or passed over.
func (s *Sub) Last() eventstore.Cursor { return s.last }

// Next returns the next matching event in global order. It returns a
// *SlowConsumerError when the subscriber fell behind, ErrHubClosed when the
// server stops, or ctx's error.
func (s *Sub) Next(ctx context.Context) (Event, error) { return s.next(ctx, true) }

// TryNext is Next without the wait: (nil, nil) when no event is ready. It
// may still read the log (a subscriber catching up) and wait for that.
func (s *Sub) TryNext(ctx context.Context) (Event, error) { return s.next(ctx, false) }

func (s *Sub) next(ctx context.Context, wait bool) (Event, error) {
	for {
		if s.catchingUp {
			e, err := s.nextCaughtUp(ctx)
			if e != nil || err != nil {
				return e, err
			}
			continue
		}
		s.mu.Lock()
		for len(s.queue) > 0 {
			e := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			if s.last.Less(e.Cursor()) {
				s.last = e.Cursor()
				s.mu.Unlock()
				return e, nil
			}
		}
		s.queue = nil // let a drained queue's array go
		err := s.err
		s.mu.Unlock()
		if err != nil {
			var slow *SlowConsumerError
			if errors.As(err, &slow) {
				return nil, &SlowConsumerError{Resume: s.last, Queue: slow.Queue}
			}
			return nil, err
		}
		if !wait {
			return nil, nil
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// nextCaughtUp serves a subscriber that started behind the ring from the log,
// and attaches it to the live stream once the ring reaches back to it. It
// returns (nil, nil) when it attached, so Next goes on with the queue.
func (s *Sub) nextCaughtUp(ctx context.Context) (Event, error) {
	for {
		for len(s.backlog) > 0 {
			e := &s.backlog[0]
			s.backlog = s.backlog[1:]
			if s.last.Less(e.Cursor()) {
				s.last = e.Cursor()
				if s.match(e) {
					return e, nil
				}
			}
		}
		s.backlog = nil
		h := s.hub
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, ErrHubClosed
		}
		if h.tryAttachLocked(s) {
			s.catchingUp = false
			h.mu.Unlock()
			return nil, nil
		}
		h.mu.Unlock()
		evs, err := h.read(ctx, s.last, h.opts.CatchUpBatch)
		if err != nil {
			return nil, fmt.Errorf("catch up from %s: %w", s.last, err)
		}
		if len(evs) == 0 {
			// The log has nothing after s.last that readers may see, yet the
			// ring starts later: the ring dropped events while this read was
			// under way. Look again shortly.
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		s.backlog = evs
	}
}

// Close detaches the subscription. Next must not be called afterwards.
func (s *Sub) Close() {
	s.hub.detach(s)
	s.mu.Lock()
	s.queue = nil
	if s.err == nil {
		s.err = context.Canceled
	}
	s.mu.Unlock()
}
