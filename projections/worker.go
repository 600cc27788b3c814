package projections

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"cairn/eventstore"
)

// worker applies one build of one projection: it reads the log after its
// checkpoint, keeps the events its projection wants, and applies them in
// batches, each in one transaction with the checkpoint.
type worker struct {
	r      *Runner
	p      Projection
	filter Filter
	name   string
	build  int
	target Target

	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// state is live or building.
	state string
	// indexed: the tables have their secondary indexes (see Projection.Index).
	indexed bool
	// cursor: every event up to here is applied (or of no concern to the
	// projection). It runs ahead of saved when only such events were read:
	// saving those is deferred, since replaying them after a crash is free.
	cursor    eventstore.Cursor
	cursorAt  time.Time
	saved     eventstore.Cursor
	savedAt   time.Time // when saved was written
	applied   int64
	parked    int64
	retrying  bool
	lastError string
	errorAt   time.Time
	// busySwitches counts the switches in a row that gave way to readers
	// (errViewsBusy); only the worker's own loop touches it.
	busySwitches int
}

func newWorker(r *Runner, p Projection, b buildRow) *worker {
	return &worker{
		r: r, p: p, filter: p.Filter(), name: b.Name, build: b.Build, target: b.target(),
		done: make(chan struct{}), state: b.Status, indexed: b.Indexed, cursor: b.Cursor, cursorAt: b.LastEventAt,
		saved: b.Cursor, savedAt: time.Now(), applied: b.Applied, parked: b.Parked,
		lastError: b.LastError, errorAt: b.LastErrorAt,
	}
}

func (w *worker) snapshot() workerInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	return workerInfo{state: w.state, indexed: w.indexed, cursor: w.cursor, cursorAt: w.cursorAt, applied: w.applied,
		parked: w.parked, retrying: w.retrying, lastError: w.lastError, errorAt: w.errorAt}
}

type workerInfo struct {
	state     string
	indexed   bool
	cursor    eventstore.Cursor
	cursorAt  time.Time
	applied   int64
	parked    int64
	retrying  bool
	lastError string
	errorAt   time.Time
}

// run works until ctx ends or the build is retired.
func (w *worker) run(ctx context.Context) error {
	opts := w.r.opts
	read := w.snapshot().cursor
	var readAt time.Time
	var pending []Event
	for {
		wake := w.r.src.wake()
		evs, more, err := w.r.src.read(ctx, read)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			w.noteError(fmt.Errorf("read the log: %w", err))
			if err := sleep(ctx, opts.MaxBackoff); err != nil {
				return err
			}
			continue
		}
		for i := range evs {
			if w.filter.match(&evs[i]) {
				pending = append(pending, evs[i])
			}
		}
		if len(evs) > 0 {
			read, readAt = evs[len(evs)-1].Cursor(), evs[len(evs)-1].RecordedAt
		}
		atHead := !more
		// While catching up, reads gather into big transactions; a sparse
		// projection still saves its place every SaveInterval.
		if len(pending) >= opts.MaxBatch || atHead || time.Since(w.savedTime()) >= opts.SaveInterval {
			var err error
			if atHead && !w.isIndexed() {
				// Caught up for the first time: apply what is pending, then
				// make the indexes the tables were filled without.
				if err = w.flush(ctx, pending, read, readAt, false); err == nil {
					err = w.index(ctx)
				}
				pending = pending[:0]
			}
			if err == nil {
				err = w.flush(ctx, pending, read, readAt, atHead)
			}
			pending = pending[:0]
			if c := w.snapshot().cursor; err == nil && read.Less(c) {
				// A switch caught up with the old build beyond what was
				// read here: go on from there, or those events would apply
				// twice.
				read = c
			}
			switch {
			case errors.Is(err, errMoved):
				// Another process applied events meanwhile: go on from its
				// checkpoint.
				read = w.snapshot().cursor
				continue
			case err != nil:
				return err
			}
		}
		if !atHead {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-time.After(opts.PollInterval):
		}
	}
}

// flush applies pending events and moves the checkpoint to end. Events
// whose payload does not decode are parked at once (retrying cannot change
// them); the others go through apply's retries. A building build at the
// head also tries to switch the stable views to itself.
func (w *worker) flush(ctx context.Context, evs []Event, end eventstore.Cursor, endAt time.Time, atHead bool) error {
	handover := atHead && w.snapshot().state == StateBuilding && w.isIndexed()
	if len(evs) == 0 && !handover {
		// Only events of no concern were read: the read model is already
		// right up to end. Saving that is deferred; replaying them after a
		// crash costs nothing.
		w.mu.Lock()
		moved := w.cursor.Less(end)
		if moved {
			w.cursor, w.cursorAt = end, endAt
		}
		w.mu.Unlock()
		if moved {
			w.r.progressed(false)
		}
		return w.maybeSave(ctx)
	}
	if !w.filter.Undecoded {
		for i := range evs {
			if evs[i].DecodeErr == nil {
				continue
			}
			if i > 0 {
				if err := w.apply(ctx, evs[:i], evs[i-1].Cursor(), evs[i-1].RecordedAt); err != nil {
					return err
				}
			}
			bad := evs[i]
			if err := w.park(ctx, bad, 1, bad.DecodeErr, bad.Cursor(), bad.RecordedAt); err != nil {
				return err
			}
			return w.flush(ctx, evs[i+1:], end, endAt, atHead)
		}
	}
	if handover {
		err := w.commit(ctx, evs, end, endAt, true)
		if err == nil || isStop(err) || ctx.Err() != nil {
			return err
		}
		// The switch failed: apply the batch on its own and try the switch
		// again when the build is next at the head.
		ev := w.r.log.Warn()
		if errors.Is(err, errViewsBusy) {
			w.busySwitches++
			ev = w.r.log.Debug()
		}
		ev.Err(err).Str("projection", w.name).Int("build", w.build).Msg("switch to rebuilt projection failed; will retry")
	}
	if len(evs) == 0 {
		return nil
	}
	return w.apply(ctx, evs, end, endAt)
}

func (w *worker) isIndexed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.indexed
}

// index creates the secondary indexes of the build's tables, retrying
// until it can.
func (w *worker) index(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		start := time.Now()
		err := pgx.BeginFunc(ctx, w.r.pool, func(tx pgx.Tx) error {
			if err := w.p.Index(ctx, tx, w.target); err != nil {
				return fmt.Errorf("index the tables: %w", err)
			}
			return markIndexed(ctx, tx, w.name, w.build)
		})
		if errors.Is(err, errSuperseded) {
			return w.superseded(ctx)
		}
		if err == nil {
			w.mu.Lock()
			w.indexed = true
			w.mu.Unlock()
			w.r.log.Info().Str("projection", w.name).Int("build", w.build).Dur("took", time.Since(start)).
				Msg("projection caught up with the log; its tables are indexed")
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.noteError(err)
		if err := sleep(ctx, backoff(w.r.opts, attempt)); err != nil {
			return err
		}
	}
}

func (w *worker) savedTime() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.savedAt
}

func isStop(err error) bool { return errors.Is(err, errSuperseded) || errors.Is(err, errMoved) }

// maybeSave writes a checkpoint that only moved over events of no concern,
// at most once per SaveInterval.
func (w *worker) maybeSave(ctx context.Context) error {
	w.mu.Lock()
	due := w.cursor != w.saved && time.Since(w.savedAt) >= w.r.opts.SaveInterval
	cursor, at := w.cursor, w.cursorAt
	w.mu.Unlock()
	if !due {
		return nil
	}
	return w.apply(ctx, nil, cursor, at)
}

// apply commits events with the checkpoint at end, retrying with backoff.
// Errors of the database's availability are retried for as long as it takes;
// other errors split the batch until the event that fails is alone, and that
// event is parked after MaxAttempts.
func (w *worker) apply(ctx context.Context, evs []Event, end eventstore.Cursor, endAt time.Time) error {
	opts := w.r.opts
	for attempt := 1; ; attempt++ {
		err := w.commit(ctx, evs, end, endAt, false)
		if err == nil || isStop(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if transient(err) || len(evs) == 0 {
			w.noteError(err)
			if err := sleep(ctx, backoff(opts, attempt)); err != nil {
				return err
			}
			continue
		}
		if len(evs) > 1 {
			mid := len(evs) / 2
			if err := w.apply(ctx, evs[:mid], evs[mid-1].Cursor(), evs[mid-1].RecordedAt); err != nil {
				return err
			}
			return w.apply(ctx, evs[mid:], end, endAt)
		}
		w.noteError(fmt.Errorf("event at position %d (%s, stream %q): %w", evs[0].Position, evs[0].Type, evs[0].StreamID, err))
		if attempt >= opts.MaxAttempts {
			return w.park(ctx, evs[0], attempt, err, end, endAt)
		}
		if err := sleep(ctx, backoff(opts, attempt)); err != nil {
			return err
		}
	}
}

// commit applies events and moves the checkpoint in one transaction; with
// handover it also switches the stable views to this build.
func (w *worker) commit(ctx context.Context, evs []Event, end eventstore.Cursor, endAt time.Time, handover bool) error {
	w.mu.Lock()
	from := w.saved
	w.mu.Unlock()
	var sw *switchover
	err := pgx.BeginTxFunc(ctx, w.r.pool, batchTx, func(tx pgx.Tx) error {
		if len(evs) > 0 {
			if err := w.p.Apply(ctx, tx, w.target, evs); err != nil {
				return err
			}
		}
		if err := advance(ctx, tx, w.name, w.build, from, end, endAt, int64(len(evs)), 0); err != nil {
			return err
		}
		if handover {
			var err error
			sw, err = w.handover(ctx, tx, end, endAt)
			return err
		}
		return nil
	})
	if errors.Is(err, errSuperseded) {
		return w.superseded(ctx)
	}
	if err != nil {
		return err
	}
	if sw != nil {
		end, endAt = sw.cursor, sw.cursorAt
	}
	w.mu.Lock()
	w.saved, w.savedAt = end, time.Now()
	if w.cursor.Less(end) {
		w.cursor, w.cursorAt = end, endAt
	}
	w.applied += int64(len(evs))
	w.retrying = false
	if sw != nil {
		w.applied += sw.extra
		w.state = StateLive
	}
	w.mu.Unlock()
	if sw != nil {
		w.r.switched(w, sw.old)
	}
	w.r.progressed(len(evs) > 0 || sw != nil)
	if w.r.afterCommit != nil {
		w.r.afterCommit(w.name, end)
	}
	return nil
}

// batchTx begins a batch's transaction. It commits without waiting for the
// disk flush: a crash may lose the last batches, read model and checkpoint
// together, and they are applied again on restart; each batch saves a disk
// write. Setting it in the same round trip as BEGIN keeps the transaction
// short.
var batchTx = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL synchronous_commit TO off"}

// switchover is the outcome of a successful handover.
type switchover struct {
	old      *buildRow // the build that was live, if any
	cursor   eventstore.Cursor
	cursorAt time.Time
	extra    int64 // events applied to catch up with the old build
}

// handover switches the stable views to this build inside tx. The build must
// be at least as far as the live one: if the live build is ahead, the events
// in between are applied here first, under a lock that keeps it from moving.
func (w *worker) handover(ctx context.Context, tx pgx.Tx, end eventstore.Cursor, endAt time.Time) (*switchover, error) {
	if err := lockProjection(ctx, tx, w.name); err != nil {
		return nil, err
	}
	rows, err := activeBuilds(ctx, tx, w.name, true)
	if err != nil {
		return nil, err
	}
	var live, self *buildRow
	for i := range rows {
		switch {
		case rows[i].Build == w.build:
			self = &rows[i]
		case rows[i].Status == StateLive:
			live = &rows[i]
		}
	}
	if self == nil || self.Status != StateBuilding {
		return nil, errSuperseded
	}
	sw := &switchover{old: live, cursor: end, cursorAt: endAt}
	if live != nil && end.Less(live.Cursor) {
		evs, last, lastAt, err := w.eventsBetween(ctx, end, live.Cursor)
		if err != nil {
			return nil, err
		}
		if len(evs) > 0 {
			if err := w.p.Apply(ctx, tx, w.target, evs); err != nil {
				return nil, fmt.Errorf("catch up with the live build: %w", err)
			}
		}
		if err := advance(ctx, tx, w.name, w.build, end, last, lastAt, int64(len(evs)), 0); err != nil {
			return nil, err
		}
		sw.cursor, sw.cursorAt, sw.extra = last, lastAt, int64(len(evs))
	}
	if err := lockViews(ctx, tx, *self, live, w.r.opts.Views, switchWait(w.busySwitches)); err != nil {
		return nil, err
	}
	recreated, err := pointViews(ctx, tx, *self, live)
	if err != nil {
		return nil, err
	}
	if recreated {
		have, err := readViews(ctx, tx, ReadSchema)
		if err != nil {
			return nil, err
		}
		if err := createViews(ctx, tx, w.r.opts.Views, ReadSchema, "", have); err != nil {
			return nil, err
		}
	}
	if live != nil {
		if _, err := tx.Exec(ctx, `UPDATE projection_checkpoints SET status = 'retired', retired_at = now(), updated_at = now(),
			rebuild_requested_at = NULL WHERE name = $1 AND build = $2`, w.name, live.Build); err != nil {
			return nil, fmt.Errorf("retire build %d of %q: %w", live.Build, w.name, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE projection_checkpoints SET status = 'live', live_at = now(), updated_at = now()
		WHERE name = $1 AND build = $2`, w.name, w.build); err != nil {
		return nil, fmt.Errorf("make build %d of %q live: %w", w.build, w.name, err)
	}
	return sw, nil
}

// eventsBetween reads the events after from up to and including to that the
// projection wants; they are committed, since the live build applied them.
func (w *worker) eventsBetween(ctx context.Context, from, to eventstore.Cursor) ([]Event, eventstore.Cursor, time.Time, error) {
	var out []Event
	cur, at := from, time.Time{}
	for cur.Less(to) {
		evs, _, err := w.r.src.read(ctx, cur)
		if err != nil {
			return nil, cur, at, err
		}
		if len(evs) == 0 {
			return nil, cur, at, fmt.Errorf("events up to %s are not readable", to)
		}
		for i := range evs {
			if to.Less(evs[i].Cursor()) {
				return out, cur, at, nil
			}
			if w.filter.match(&evs[i]) {
				if evs[i].DecodeErr != nil && !w.filter.Undecoded {
					return nil, cur, at, fmt.Errorf("event at position %d does not decode", evs[i].Position)
				}
				out = append(out, evs[i])
			}
			cur, at = evs[i].Cursor(), evs[i].RecordedAt
		}
	}
	return out, cur, at, nil
}

// superseded decides what a failed checkpoint move means: the build was
// retired (stop), or another process applied events meanwhile (continue from
// its checkpoint; with single-writer runners this does not happen).
func (w *worker) superseded(ctx context.Context) error {
	rows, err := activeBuilds(ctx, w.r.pool, w.name, false)
	if err != nil {
		return err
	}
	for _, b := range rows {
		if b.Build != w.build {
			continue
		}
		w.mu.Lock()
		w.state, w.saved, w.savedAt, w.indexed = b.Status, b.Cursor, time.Now(), b.Indexed
		if w.cursor.Less(b.Cursor) {
			w.cursor, w.cursorAt = b.Cursor, b.LastEventAt
		}
		w.mu.Unlock()
		// The other process changed the read model: answers computed
		// before are stale here too.
		w.r.progressed(true)
		return errMoved
	}
	return errSuperseded
}

// errMoved: another process moved the checkpoint; read again from it.
var errMoved = errors.New("projection checkpoint moved by another process")

// park records an event the projection could not apply and moves the
// checkpoint past it, in one transaction, so it is neither lost from view
// nor applied later by surprise.
func (w *worker) park(ctx context.Context, e Event, attempts int, cause error, end eventstore.Cursor, endAt time.Time) error {
	for attempt := 1; ; attempt++ {
		w.mu.Lock()
		from := w.saved
		w.mu.Unlock()
		err := pgx.BeginFunc(ctx, w.r.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `
				INSERT INTO projection_parked (projection, build, tx_id, position, stream_id, event_type, attempts, error)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
				w.name, w.build, e.TxID, e.Position, e.StreamID, e.Type, attempts, cause.Error()); err != nil {
				return fmt.Errorf("park event at position %d: %w", e.Position, err)
			}
			return advance(ctx, tx, w.name, w.build, from, end, endAt, 0, 1)
		})
		if errors.Is(err, errSuperseded) {
			return w.superseded(ctx)
		}
		if err == nil {
			w.mu.Lock()
			w.saved, w.savedAt, w.parked, w.retrying = end, time.Now(), w.parked+1, false
			if w.cursor.Less(end) {
				w.cursor, w.cursorAt = end, endAt
			}
			w.mu.Unlock()
			w.r.log.Error().Str("projection", w.name).Int64("position", e.Position).Str("stream", e.StreamID).
				Str("type", e.Type).Err(cause).Msg("event parked: the projection could not apply it and moved on")
			w.r.progressed(false)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.noteError(err)
		if err := sleep(ctx, backoff(w.r.opts, attempt)); err != nil {
			return err
		}
	}
}

func (w *worker) noteError(err error) {
	w.mu.Lock()
	w.retrying, w.lastError, w.errorAt = true, err.Error(), time.Now()
	w.mu.Unlock()
	w.r.log.Warn().Err(err).Str("projection", w.name).Int("build", w.build).Msg("projection failed; retrying")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = recordError(ctx, w.r.pool, w.name, w.build, err.Error())
}

func backoff(o Options, attempt int) time.Duration {
	d := o.Backoff
	for i := 1; i < attempt && d < o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.MaxBackoff)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
