package eventstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReadStreamOptions select part of a stream. The zero value reads it all.
type ReadStreamOptions struct {
	// FromVersion: first version to return (default 1).
	FromVersion int64
	// AsOfVersion: last version to return (0: no limit).
	AsOfVersion int64
	// AsOf: only events at or before this cursor.
	AsOf Cursor
	// AsOfTime: only events recorded at or before this time.
	AsOfTime time.Time
}

// ReadStream returns a stream's events in version order. A stream with no
// events at the requested point is a *StreamNotFoundError.
func (s *Store) ReadStream(ctx context.Context, streamID string, o ReadStreamOptions) ([]RecordedEvent, error) {
	q := `SELECT ` + eventColumns + ` FROM events WHERE stream_id = $1 AND version >= $2`
	args := []any{streamID, max(o.FromVersion, 1)}
	if o.AsOfVersion > 0 {
		args = append(args, o.AsOfVersion)
		q += fmt.Sprintf(" AND version <= $%d", len(args))
	}
	if !o.AsOf.IsZero() {
		args = append(args, o.AsOf.TxID, o.AsOf.Position)
		q += fmt.Sprintf(" AND (tx_id, position) <= ($%d::xid8, $%d)", len(args)-1, len(args))
	}
	if !o.AsOfTime.IsZero() {
		args = append(args, o.AsOfTime)
		q += fmt.Sprintf(" AND recorded_at <= $%d", len(args))
	}
	q += " ORDER BY version"
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read stream %q: %w", streamID, err)
	}
	evs, err := scanEvents(rows, 16)
	if err != nil {
		return nil, fmt.Errorf("read stream %q: %w", streamID, err)
	}
	if len(evs) == 0 && o.FromVersion <= 1 {
		return nil, &StreamNotFoundError{StreamID: streamID}
	}
	return evs, nil
}

// StreamVersion returns a stream's current version (0: no events).
func (s *Store) StreamVersion(ctx context.Context, streamID string) (int64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM events WHERE stream_id = $1`, streamID).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read version of stream %q: %w", streamID, err)
	}
	return v, nil
}

// ExistingStreams returns those of streamIDs that hold at least one event,
// in the order given.
func (s *Store) ExistingStreams(ctx context.Context, streamIDs []string) ([]string, error) {
	if len(streamIDs) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM unnest($1::text[]) WITH ORDINALITY AS ids(id, n)
		WHERE EXISTS (SELECT 1 FROM events WHERE stream_id = ids.id) ORDER BY n`, streamIDs)
	if err != nil {
		return nil, fmt.Errorf("look up streams: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look up streams: %w", err)
	}
	return out, nil
}

// horizonSQL is the transaction id below which every transaction that could
// write events to this database has ended, as of the statement's snapshot:
// the oldest transaction the snapshot sees running, ignoring those of other
// databases of the cluster (they cannot write here, and a long one must not
// hold this database's readers back) and those of sessions named
// ReadModelAppName (they may not write events: a trigger refuses, so the
// read models' own transactions never hold back the log they follow). A
// transaction that ended after the snapshot was taken is not recognised and
// counts, which only makes the horizon lower: safe, but it means the horizon
// can dip for a moment below one computed before. Store.horizon keeps a
// store's own reads from seeing such a dip.
const horizonSQL = `(SELECT coalesce(min(x), pg_snapshot_xmax(pg_current_snapshot()))
	FROM pg_snapshot_xip(pg_current_snapshot()) AS x
	WHERE xid(x) NOT IN (SELECT backend_xid FROM pg_stat_activity
	                     WHERE backend_xid IS NOT NULL
	                       AND (datname IS DISTINCT FROM current_database() OR application_name = '` + ReadModelAppName + `')))`

// horizon returns the horizon as SQL, never below one this store has
// already seen (every transaction below a horizon once seen has ended, so
// it stays one): a caller that saw an event visible can read it again.
// It adds the floor to args.
func (s *Store) horizon(args *[]any) string {
	*args = append(*args, s.floor.Load())
	return fmt.Sprintf("greatest(%s, $%d::xid8)", horizonSQL, len(*args))
}

// saw raises the horizon's floor past tx, a transaction readers were shown
// to be below the horizon.
func (s *Store) saw(tx uint64) {
	for {
		cur := s.floor.Load()
		if tx < cur || s.floor.CompareAndSwap(cur, tx+1) {
			return
		}
	}
}

// sawAll raises the floor past the events read under the horizon.
func (s *Store) sawAll(evs []RecordedEvent) {
	var top uint64
	for i := range evs {
		top = max(top, evs[i].TxID)
	}
	if len(evs) > 0 {
		s.saw(top)
	}
}

// ReadModelAppName is the application_name of sessions that write read
// models and never events: readers of the log do not wait for their
// transactions. The name must be set when the session connects and never
// changed; the events table refuses inserts from such a session.
const ReadModelAppName = "cairn read models"

// ReadAll returns up to limit events after the cursor in global order. It
// only returns events of transactions older than every transaction still
// running (see horizonSQL), so an event that commits later can never land
// behind a cursor a reader has already passed.
func (s *Store) ReadAll(ctx context.Context, after Cursor, limit int, f Filter) ([]RecordedEvent, error) {
	q, args := s.readAllQuery(after, limit, f)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read log after %s: %w", after, err)
	}
	evs, err := scanEvents(rows, limit)
	s.sawAll(evs)
	return evs, err
}

// readAllQuery is ReadAll's statement. The horizon is applied to the page,
// not in it: events past the horizon all follow those before it in global
// order, so the result is the same prefix. Inside, the planner priced the
// horizon as a third of the rows, and with statistics a little behind a
// backlog it sometimes fetched every event after the cursor and sorted them,
// a hundred times slower than walking the index to the limit.
func (s *Store) readAllQuery(after Cursor, limit int, f Filter) (string, []any) {
	args := []any{after.TxID, after.Position, limit}
	page := `SELECT ` + eventColumns + ` FROM events
		WHERE (tx_id, position) > ($1::xid8, $2)` + f.sql(&args) + `
		ORDER BY tx_id, position
		LIMIT $3`
	return `SELECT * FROM (` + page + `) AS page
		WHERE tx_id < ` + s.horizon(&args) + `
		ORDER BY tx_id, position`, args
}

// Head returns the cursor of the last event readers can see now (Start when
// the log is empty).
func (s *Store) Head(ctx context.Context) (Cursor, error) {
	var c Cursor
	var args []any
	err := s.pool.QueryRow(ctx, `
		SELECT tx_id, position FROM events
		WHERE tx_id < `+s.horizon(&args)+`
		ORDER BY tx_id DESC, position DESC LIMIT 1`, args...).Scan(&c.TxID, &c.Position)
	if err == pgx.ErrNoRows {
		return Start, nil
	}
	if err != nil {
		return Start, fmt.Errorf("read head of log: %w", err)
	}
	s.saw(c.TxID)
	return c, nil
}

// WaitVisible waits until readers in global order can see the event at c:
// until every transaction that could still commit before it has ended.
func (s *Store) WaitVisible(ctx context.Context, c Cursor) error {
	wake, unregister := s.notifier.register()
	defer unregister()
	for {
		var visible bool
		args := []any{c.TxID}
		err := s.pool.QueryRow(ctx, `SELECT $1::xid8 < `+s.horizon(&args), args...).Scan(&visible)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", c, err)
		}
		if visible {
			s.saw(c.TxID)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-time.After(10 * time.Millisecond):
		}
	}
}
