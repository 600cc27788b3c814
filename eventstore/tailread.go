package eventstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// tailReads lets the subscriptions of one store that wait at the same
// cursor share one read of the log. A commit wakes every subscription of
// the process at once: the hub behind the API's subscriptions, the read
// models, the dispatcher, the scheduler and the others each asked the
// database for the same events (and then whether any were held back), and
// decoded them again, as many times over as there are subscriptions.
//
// A subscription joins a read under way only when that read began after the
// last wake-up it was given (the notifier's generation), so it never misses
// a commit it was told of.
type tailReads struct {
	// ran counts the reads made, joined those shared instead.
	ran, joined atomic.Int64

	mu     sync.Mutex
	events map[Cursor]*sharedRead[[]RecordedEvent]
	held   map[Cursor]*sharedRead[bool]
}

type sharedRead[T any] struct {
	gen   uint64 // the notifier's generation when the read began
	limit int
	done  chan struct{}
	val   T
	err   error
}

func newTailReads() *tailReads {
	return &tailReads{events: map[Cursor]*sharedRead[[]RecordedEvent]{}, held: map[Cursor]*sharedRead[bool]{}}
}

// readAfter is ReadAll(after, limit) of the whole log, shared with the
// subscriptions asking the same at the same time. The events are shared:
// callers must not change them.
func (s *Store) readAfter(ctx context.Context, after Cursor, limit int) ([]RecordedEvent, error) {
	evs, err := shareRead(ctx, s.tail, s.tail.events, after, s.notifier.generation(), limit,
		func(ctx context.Context) ([]RecordedEvent, error) { return s.readLog(ctx, after, limit) },
		func(evs []RecordedEvent) int { return len(evs) })
	if len(evs) > limit {
		evs = evs[:limit:limit]
	}
	return evs, err
}

// heldBackShared is heldBack, shared the same way.
func (s *Store) heldBackShared(ctx context.Context, after Cursor) (bool, error) {
	return shareRead(ctx, s.tail, s.tail.held, after, s.notifier.generation(), 0,
		func(ctx context.Context) (bool, error) { return s.heldBack(ctx, after) }, func(bool) int { return 0 })
}

// shareRead joins the read of key that began at generation gen or later
// and reads at least limit, under way or done, or else runs read itself for
// whoever joins it. A read done stays to be joined until the next wake-up:
// subscriptions woken together arrive over a while, some after it ended.
//
// A read of fewer events than limit may be joined too: when it found fewer
// than it asked for, it read to the head and holds all there is; otherwise
// the joiner reads alone after all. Subscriptions ask for batches of
// different sizes, and at the head every one of them would otherwise make
// its own read of the same few events.
func shareRead[T any](ctx context.Context, t *tailReads, reads map[Cursor]*sharedRead[T], key Cursor, gen uint64, limit int,
	read func(context.Context) (T, error), found func(T) int) (T, error) {
	t.mu.Lock()
	if r, ok := reads[key]; ok && r.gen >= gen {
		t.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
		if r.err != nil && (errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded)) {
			// The subscription that began the read went away mid-read:
			// read alone.
			return read(ctx)
		}
		if r.limit >= limit || r.err == nil && found(r.val) < r.limit {
			t.joined.Add(1)
			return r.val, r.err
		}
		return read(ctx) // it stopped short of the head and of limit
	}
	for k, old := range reads {
		select {
		case <-old.done:
			if old.gen < gen {
				delete(reads, k) // nobody woken since may join it
			}
		default:
		}
	}
	r := &sharedRead[T]{gen: gen, limit: limit, done: make(chan struct{})}
	reads[key] = r
	t.mu.Unlock()
	t.ran.Add(1)
	r.val, r.err = read(ctx)
	if r.err != nil {
		t.mu.Lock()
		if reads[key] == r {
			delete(reads, key)
		}
		t.mu.Unlock()
	}
	close(r.done)
	return r.val, r.err
}
