package projections

import (
	"context"
	"sync"

	"cairn/eventstore"
)

// source reads the log for every worker of a runner. Workers read
// independently, each from its own cursor, but when several are at the same
// place (all of them, live; or a set rebuilding together) the first one's
// read is shared: pages are cached by the cursor they follow, decoded once,
// and loaded once even when asked for concurrently. A worker that falls
// behind the cache reads the database itself, so a slow or stuck projection
// never holds the others back.
//
// A live feed (one subscription from the head, woken by LISTEN/NOTIFY) puts
// new pages in the cache as they commit and wakes waiting workers.
type source struct {
	store Log
	limit int
	max   int

	mu      sync.Mutex
	pages   map[eventstore.Cursor]*page
	order   []eventstore.Cursor // insertion order, for eviction
	changed chan struct{}       // closed when the feed brings events
	// fed is the last event the live feed has read: every event up to it
	// is readable.
	fed eventstore.Cursor
}

type page struct {
	ready  chan struct{}
	events []Event
	err    error
}

func newSource(store Log, limit, max int) *source {
	return &source{store: store, limit: limit, max: max, pages: map[eventstore.Cursor]*page{}, changed: make(chan struct{})}
}

// wake returns a channel closed the next time new events arrive. Take it
// before reading, so events arriving between the read and the wait are not
// missed.
func (s *source) wake() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *source) signal() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// read returns the next events after the cursor in global order (at most
// about limit; none when the reader is at the head), and whether more are
// known to follow: the page was full, the next page is in the cache, or the
// live feed has read beyond the page. A short page alone does not say the
// reader is at the head: the live feed caches one short page per wake-up,
// and a reader behind it must go on through them without waiting (a wake-up
// that came before the reader looked would not come again). Events are
// shared between callers: they must not be modified.
func (s *source) read(ctx context.Context, after eventstore.Cursor) ([]Event, bool, error) {
	evs, err := s.page(ctx, after)
	if err != nil || len(evs) == 0 {
		return evs, false, err
	}
	if len(evs) >= s.limit {
		return evs, true, nil
	}
	last := evs[len(evs)-1].Cursor()
	s.mu.Lock()
	defer s.mu.Unlock()
	// A page still loading does not count: it may well come back empty.
	next, ok := s.pages[last]
	return evs, ok && isLoaded(next) && len(next.events) > 0 || last.Less(s.fed), nil
}

// page returns the events after the cursor, from the cache or the log.
func (s *source) page(ctx context.Context, after eventstore.Cursor) ([]Event, error) {
	s.mu.Lock()
	if p, ok := s.pages[after]; ok {
		s.mu.Unlock()
		select {
		case <-p.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if p.err == nil && len(p.events) > 0 {
			return p.events, nil
		}
		// An empty or failed load is not kept: read again below.
		s.mu.Lock()
		if s.pages[after] == p {
			delete(s.pages, after)
		}
	}
	p := &page{ready: make(chan struct{})}
	s.pages[after] = p
	s.mu.Unlock()

	recs, err := s.store.ReadAll(ctx, after, s.limit, eventstore.Filter{})
	p.events, p.err = decodeAll(s.store, recs), err
	close(p.ready)
	s.mu.Lock()
	if err != nil || len(recs) == 0 {
		if s.pages[after] == p {
			delete(s.pages, after)
		}
	} else {
		s.remember(after)
	}
	s.mu.Unlock()
	return p.events, err
}

// put caches a page the live feed read.
func (s *source) put(after eventstore.Cursor, recs []eventstore.RecordedEvent) {
	p := &page{ready: make(chan struct{}), events: decodeAll(s.store, recs)}
	close(p.ready)
	s.mu.Lock()
	if old, ok := s.pages[after]; !ok || isLoaded(old) && len(old.events) < len(p.events) {
		if !ok {
			s.remember(after)
		}
		s.pages[after] = p
	}
	s.mu.Unlock()
}

func isLoaded(p *page) bool {
	select {
	case <-p.ready:
		return true
	default:
		return false
	}
}

// remember records a new cache key and evicts the oldest beyond max. Callers
// hold mu.
func (s *source) remember(after eventstore.Cursor) {
	s.order = append(s.order, after)
	for len(s.order) > s.max {
		old := s.order[0]
		s.order = s.order[1:]
		if p, ok := s.pages[old]; ok && isLoaded(p) {
			delete(s.pages, old)
		}
	}
}

// feed follows the log from its head, caching each page and waking workers.
func (s *source) feed(ctx context.Context) error {
	head, err := s.store.Head(ctx)
	if err != nil {
		return err
	}
	s.advance(head)
	cursor := head
	return s.store.Subscribe(ctx, eventstore.SubscribeOptions{From: head, BatchSize: s.limit}, func(_ context.Context, b eventstore.Batch) error {
		s.put(cursor, b.Events)
		s.advance(b.Cursor)
		cursor = b.Cursor
		s.signal()
		return nil
	})
}

// advance records that the live feed has read up to c.
func (s *source) advance(c eventstore.Cursor) {
	s.mu.Lock()
	if s.fed.Less(c) {
		s.fed = c
	}
	s.mu.Unlock()
}

func decodeAll(store Log, recs []eventstore.RecordedEvent) []Event {
	if len(recs) == 0 {
		return nil
	}
	out := make([]Event, len(recs))
	for i := range recs {
		out[i].RecordedEvent = recs[i]
		out[i].Data, out[i].DecodeErr = store.Decode(recs[i])
	}
	return out
}
