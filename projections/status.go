package projections

import (
	"container/heap"
	"context"
	"fmt"
	"time"

	"cairn/eventstore"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Status describes one build of a projection.
type Status struct {
	Name    string
	Version int
	Build   int
	// State is StateLive (reads use it) or StateBuilding (a rebuild).
	State string
	// Cursor: every event up to it is applied.
	Cursor eventstore.Cursor
	// LastEventAt is when the event at Cursor was recorded.
	LastEventAt time.Time
	// EventsBehind approximates the events between Cursor and the head of
	// the log (positions are numbered in commit order only roughly).
	EventsBehind int64
	// SecondsBehind is how old the event at Cursor is while the build is
	// behind; 0 when it has caught up.
	SecondsBehind float64
	CaughtUp      bool
	// Indexed: the build's tables have all their indexes (a build fills its
	// tables without them and indexes them once it has caught up).
	Indexed bool
	// Applied counts the events this build applied; Parked those it could
	// not apply (see Parked).
	Applied int64
	Parked  int64
	// Retrying: the build is failing and retrying now; LastError says why.
	Retrying    bool
	LastError   string
	LastErrorAt time.Time
	// RebuildRequested: a rebuild was asked for and has not started yet.
	RebuildRequested bool
	StartedAt        time.Time
	LiveAt           time.Time
	// Running: a worker of this process applies the build (false for the
	// old version's build while a new version rebuilds, and in the CLI).
	Running bool
}

// Status reports every live and building projection build, with its lag.
func (r *Runner) Status(ctx context.Context) ([]Status, error) {
	out, head, err := readStatus(ctx, r.store, r.pool)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	for i := range out {
		w := r.worker(out[i].Name, out[i].Build)
		if w == nil {
			continue
		}
		info := w.snapshot()
		s := &out[i]
		s.Running, s.Retrying, s.Indexed = true, info.retrying, s.Indexed || info.indexed
		if s.Cursor.Less(info.cursor) {
			s.Cursor, s.LastEventAt = info.cursor, info.cursorAt
		}
		if info.errorAt.After(s.LastErrorAt) {
			s.LastError, s.LastErrorAt = info.lastError, info.errorAt
		}
	}
	r.mu.Unlock()
	if err := fillLag(ctx, r.store, out, head); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadStatus reports every live and building projection build from the
// database alone, for processes that run no projections (the CLI).
func ReadStatus(ctx context.Context, store Log, pool *pgxpool.Pool) ([]Status, error) {
	out, head, err := readStatus(ctx, store, pool)
	if err != nil {
		return nil, err
	}
	if err := fillLag(ctx, store, out, head); err != nil {
		return nil, err
	}
	return out, nil
}

func readStatus(ctx context.Context, store Log, pool *pgxpool.Pool) ([]Status, eventstore.Cursor, error) {
	// The head first: a checkpoint read after it can only be further on.
	head, err := store.Head(ctx)
	if err != nil {
		return nil, head, err
	}
	rows, err := activeBuilds(ctx, pool, "", false)
	if err != nil {
		return nil, head, err
	}
	out := make([]Status, 0, len(rows))
	for _, b := range rows {
		out = append(out, Status{
			Name: b.Name, Version: b.Version, Build: b.Build, State: b.Status, Cursor: b.Cursor, LastEventAt: b.LastEventAt,
			Indexed: b.Indexed,
			Applied: b.Applied, Parked: b.Parked, LastError: b.LastError, LastErrorAt: b.LastErrorAt,
			RebuildRequested: b.RebuildRequested, StartedAt: b.StartedAt, LiveAt: b.LiveAt,
		})
	}
	return out, head, nil
}

func fillLag(ctx context.Context, store Log, out []Status, head eventstore.Cursor) error {
	now := time.Now()
	var first time.Time
	for i := range out {
		s := &out[i]
		if !s.Cursor.Less(head) {
			s.CaughtUp = true
			continue
		}
		s.EventsBehind = max(1, head.Position-s.Cursor.Position)
		at := s.LastEventAt
		if at.IsZero() {
			if first.IsZero() {
				evs, err := store.ReadAll(ctx, eventstore.Start, 1, eventstore.Filter{})
				if err != nil {
					return fmt.Errorf("projection lag: %w", err)
				}
				if len(evs) > 0 {
					first = evs[0].RecordedAt
				}
			}
			at = first
		}
		if !at.IsZero() {
			s.SecondsBehind = max(0, now.Sub(at).Seconds())
		}
	}
	return nil
}

// WaitFor blocks until every projection's live build has applied the event
// at cursor c (and everything before it), so that a read model reflects a
// write whose cursor the client holds. It fails with an
// *UnknownCursorError for a cursor that names no event (once the wait has
// lasted a moment: see cursorCheckAfter), and otherwise waits as long as ctx
// allows.
func (r *Runner) WaitFor(ctx context.Context, c eventstore.Cursor) error {
	if c.IsZero() {
		return nil
	}
	select {
	case <-r.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	if !r.frontier.Less(c) {
		r.mu.Unlock()
		return nil
	}
	w := r.waiting.wait(c)
	r.mu.Unlock()
	// A cursor that names no event would be waited for in vain. It is looked
	// up only when the wait lasts, by a few callers at a time: a client's own
	// write is usually applied sooner, and a lookup per call would take
	// connections the projections need exactly when they are behind.
	check := time.NewTimer(cursorCheckAfter)
	defer check.Stop()
	for {
		select {
		case <-w.done:
			return nil
		case <-ctx.Done():
			r.forget(w)
			return ctx.Err()
		case <-check.C:
			select {
			case r.checks <- struct{}{}:
			case <-w.done:
				return nil
			case <-ctx.Done():
				r.forget(w)
				return ctx.Err()
			}
			err := CheckCursor(ctx, r.store, c)
			<-r.checks
			if err != nil {
				r.forget(w)
				return err
			}
		}
	}
}

// cursorCheckAfter is how long WaitFor waits before it looks up its cursor.
const cursorCheckAfter = 250 * time.Millisecond

// forget drops a waiter that stopped waiting.
func (r *Runner) forget(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.waiting {
		if x == w {
			heap.Remove(&r.waiting, i)
			return
		}
	}
}

// appliedByAll is the cursor every projection's live worker here has
// reached (Start while one has none). Callers hold mu.
func (r *Runner) appliedByAll() eventstore.Cursor {
	var out eventstore.Cursor
	for i, p := range r.projs {
		var live *worker
		for _, w := range r.workers[p.Name()] {
			if info := w.snapshot(); info.state == StateLive && (live == nil || w.build > live.build) {
				live = w
			}
		}
		if live == nil {
			return eventstore.Start
		}
		if c := live.snapshot().cursor; i == 0 || c.Less(out) {
			out = c
		}
	}
	return out
}

// CheckCursor returns an *UnknownCursorError unless c is the start of the
// log or names an event of it.
func CheckCursor(ctx context.Context, store interface {
	Contains(ctx context.Context, c eventstore.Cursor) (bool, error)
}, c eventstore.Cursor) error {
	ok, err := store.Contains(ctx, c)
	if err != nil {
		return err
	}
	if !ok {
		return &UnknownCursorError{Cursor: c}
	}
	return nil
}
