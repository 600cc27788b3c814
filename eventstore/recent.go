package eventstore

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
)

// recentEvents keeps the last events the store's subscriptions read of the
// whole log, in global order, for the subscriptions a little behind. The
// readers of one process (the API's hub, the read models, the dispatcher,
// the scheduler and the others) each read every event, seldom at the same
// cursor: a fan-out to 10,000 agents read and decoded each of its events
// about nine times over, a fifth of all the process allocated.
//
// Only events at or below the horizon are ever read (readAllQuery), and no
// event can later appear between two of those: a run of them read together
// is a part of the log that never changes. The window holds one such run,
// from the cursor before its first event, and grows only by reads that begin
// at its end; a subscription woken by a commit still reads what follows the
// window from the database, so it never misses what it was woken for.
type recentEvents struct {
	// served counts the events handed out of the window instead of read,
	// read those the subscriptions read from the database.
	served, read atomic.Int64

	mu     sync.RWMutex
	max    int // events kept at most
	bytes  int // payload and metadata bytes kept at most
	from   Cursor
	events []RecordedEvent // after from, in order; never written where a reader may look
	size   int             // payload and metadata bytes of events
	// reading are the reads of the log under way that begin at the
	// window's end (or with the window empty), by their cursor: what they
	// read extends the window.
	reading map[Cursor]*extension
}

// extension is a read under way that will extend the window.
type extension struct {
	gen  uint64 // the notifier's generation when it began
	done chan struct{}
	head bool // set before done closes: it read to the head of the log
}

// The window's bounds. Until the array is replaced the events dropped from
// its front stay alive with it: the window holds up to twice its bytes.
const (
	recentEventsKept = 8192
	recentBytesKept  = 8 << 20
)

func newRecentEvents(maxEvents, maxBytes int) *recentEvents {
	return &recentEvents{max: maxEvents, bytes: maxBytes, reading: map[Cursor]*extension{}}
}

// after returns up to limit of the kept events after c, and whether the
// window holds c at all (a miss: c is before the window, past it, or
// between two of its events as no cursor of a reader can be).
func (w *recentEvents) after(c Cursor, limit int) ([]RecordedEvent, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if len(w.events) == 0 {
		return nil, false
	}
	i := 0
	if c != w.from {
		i = sort.Search(len(w.events), func(i int) bool { return !w.events[i].Cursor().Less(c) })
		if i == len(w.events) || w.events[i].Cursor() != c {
			return nil, false
		}
		i++
	}
	j := min(i+limit, len(w.events))
	w.served.Add(int64(j - i))
	return w.events[i:j:j], true
}

// add keeps evs, a read of up to limit events right after c. A read that
// begins at the window's end extends it. One that reached the head of the
// log starts it again when it is empty or behind (nobody read through it);
// a subscription catching up from far behind does not, or the window would
// move back and forth between it and those at the head.
func (w *recentEvents) add(c Cursor, evs []RecordedEvent, limit int) {
	if len(evs) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case len(w.events) > 0 && c == w.events[len(w.events)-1].Cursor():
	case len(evs) < limit && (len(w.events) == 0 || w.events[len(w.events)-1].Cursor().Less(c)):
		w.from, w.events, w.size = c, nil, 0
	default:
		return
	}
	added := 0
	for i := range evs {
		added += eventBytes(&evs[i])
	}
	// A read larger than the window keeps its last events only.
	for len(evs) > 1 && (len(evs) > w.max || added > w.bytes) {
		added -= eventBytes(&evs[0])
		w.from, w.events, w.size = evs[0].Cursor(), nil, 0
		evs = evs[1:]
	}
	// Then the oldest kept go, past either bound.
	drop := max(0, len(w.events)+len(evs)-w.max)
	dropped := 0
	for i := range drop {
		dropped += eventBytes(&w.events[i])
	}
	for drop < len(w.events) && w.size-dropped+added > w.bytes {
		dropped += eventBytes(&w.events[drop])
		drop++
	}
	w.size += added - dropped
	if drop > 0 {
		w.from = w.events[drop-1].Cursor()
		w.events = w.events[drop:]
	}
	if len(w.events)+len(evs) > cap(w.events) {
		// A new array: readers may hold the old one. Room for twice the
		// window once it is full makes the copying a single pass over
		// each event kept.
		n := len(w.events) + len(evs)
		next := make([]RecordedEvent, 0, max(n, min(2*w.max, max(2*n, 64))))
		w.events = append(next, w.events...)
	}
	// Only past what any reader was given: they hold w.events[i:j:j].
	w.events = append(w.events, evs...)
}

// errWindowMoved says a read was not made: the window holds events after
// its cursor now, read since its reader looked.
var errWindowMoved = errors.New("eventstore: the window of recent events moved on")

// extend registers a read of the log after c begun at generation gen, when
// it begins at the window's end (or the window is empty) and no other read
// from there is under way; call ended once what it read was added. It
// fails with errWindowMoved when the window holds c and events after it.
func (w *recentEvents) extend(c Cursor, gen uint64) (ended func(head bool), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.events); n > 0 && w.events[n-1].Cursor() != c {
		if c == w.from || w.holds(c) {
			return nil, errWindowMoved
		}
		return func(bool) {}, nil
	}
	if _, dup := w.reading[c]; dup {
		return func(bool) {}, nil
	}
	x := &extension{gen: gen, done: make(chan struct{})}
	w.reading[c] = x
	return func(head bool) {
		w.mu.Lock()
		delete(w.reading, c)
		w.mu.Unlock()
		x.head = head
		close(x.done)
	}, nil
}

// holds reports whether one of the kept events is at c. Called with w.mu
// held.
func (w *recentEvents) holds(c Cursor) bool {
	i := sort.Search(len(w.events), func(i int) bool { return !w.events[i].Cursor().Less(c) })
	return i < len(w.events) && w.events[i].Cursor() == c
}

// awaited says what a reader found under way where it was to read.
type awaited int

const (
	awaitedNone awaited = iota // nothing: it reads itself
	awaitedRead                // a read, now in the window: it looks there again
	awaitedHead                // a read that began since the reader's wake-up and reached the head
)

// await waits for the read under way from c that extends the window.
func (w *recentEvents) await(ctx context.Context, c Cursor, gen uint64) awaited {
	w.mu.RLock()
	x := w.reading[c]
	w.mu.RUnlock()
	if x == nil {
		return awaitedNone
	}
	select {
	case <-x.done:
	case <-ctx.Done():
		return awaitedNone // its own read fails at once
	}
	if x.head && x.gen >= gen {
		return awaitedHead
	}
	return awaitedRead
}

// forget drops every kept event: after a read failed, the database may not
// be the one the events were read from (a standby promoted after a
// failover may lack the last of them).
func (w *recentEvents) forget() {
	w.mu.Lock()
	w.from, w.events, w.size = Cursor{}, nil, 0
	w.mu.Unlock()
}

// eventBytes is what an event keeps of the heap beyond its fixed fields.
func eventBytes(e *RecordedEvent) int {
	return len(e.Payload) + len(e.RawMetadata) + len(e.StreamID) + len(e.Hash) + len(e.PrevHash)
}

// readLog reads the whole log after a cursor from the database, keeping
// what it read in the window of recent events where it fits.
func (s *Store) readLog(ctx context.Context, after Cursor, limit int) (evs []RecordedEvent, err error) {
	ended, err := s.recent.extend(after, s.notifier.generation())
	if err != nil {
		return nil, err
	}
	defer func() { ended(err == nil && len(evs) < limit) }()
	evs, err = s.ReadAll(ctx, after, limit, Filter{})
	if err != nil {
		if ctx.Err() == nil { // not just a subscription going away
			s.recent.forget()
		}
		return nil, err
	}
	s.recent.read.Add(int64(len(evs)))
	s.recent.add(after, evs, limit)
	return evs, nil
}

// readRecent serves a subscription's read from the window of recent events
// where it holds the cursor; what the window lacks to fill limit, or all
// of it when the window does not hold the cursor, comes from read: the
// shared read of the tail (readAfter) for a subscription at the head, or a
// read of its own (readLog) for one catching up, whose reads nobody else
// makes and which a shared read would keep until the next commit.
//
// Where a read of the log from the window's end is under way, the reader
// waits for it and takes what it read from the window instead of reading
// the same events again. A read that began since the reader's wake-up
// (gen: the notifier's generation when it was woken; none for a reader
// catching up) and reached the head holds every event the reader was told
// of. Subscriptions woken by the same commits with batches of different
// sizes, or at different wake-ups, each read them on their own before: of
// what a fan-out to 10,000 agents read of the log, half had been read
// already.
func (s *Store) readRecent(ctx context.Context, after Cursor, limit int, gen uint64,
	read func(context.Context, Cursor, int) ([]RecordedEvent, error)) ([]RecordedEvent, error) {
	for {
		kept, ok := s.recent.after(after, limit)
		if !ok {
			evs, err := read(ctx, after, limit)
			if errors.Is(err, errWindowMoved) {
				continue
			}
			return evs, err
		}
		if len(kept) == limit {
			return kept, nil
		}
		from := after
		if len(kept) > 0 {
			from = kept[len(kept)-1].Cursor()
		}
		switch s.recent.await(ctx, from, gen) {
		case awaitedRead:
			continue
		case awaitedHead:
			if kept, ok := s.recent.after(after, limit); ok {
				return kept, nil
			}
			continue
		}
		// The whole limit, not what is missing: the subscriptions served
		// from the window then ask the same of the log at its end, and
		// share one read.
		rest, err := read(ctx, from, limit)
		if errors.Is(err, errWindowMoved) {
			continue // another read the events since: they are in the window
		}
		if err != nil || len(rest) == 0 {
			return kept, err
		}
		if len(kept) == 0 {
			return rest, nil
		}
		rest = rest[:min(len(rest), limit-len(kept))]
		out := make([]RecordedEvent, 0, len(kept)+len(rest))
		return append(append(out, kept...), rest...), nil
	}
}
