package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReadBefore returns up to limit events before the cursor (before the head
// for a zero cursor), newest first: a history read backwards. Like ReadAll
// it only returns events no running transaction can still precede.
func (s *Store) ReadBefore(ctx context.Context, before Cursor, limit int, f Filter) ([]RecordedEvent, error) {
	args := []any{limit}
	where := ""
	if !before.IsZero() {
		args = append(args, before.TxID, before.Position)
		where = " AND (tx_id, position) < ($2::xid8, $3)"
	}
	q := `SELECT ` + eventColumns + ` FROM events
		WHERE true` + where + ` AND tx_id < ` + s.horizon(&args) + f.sql(&args) + `
		ORDER BY tx_id DESC, position DESC
		LIMIT $1`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read log before %s: %w", before, err)
	}
	evs, err := scanEvents(rows, limit)
	s.sawAll(evs)
	return evs, err
}

// Event returns the event at a cursor, or nil when there is none that
// readers may see yet.
func (s *Store) Event(ctx context.Context, c Cursor) (*RecordedEvent, error) {
	args := []any{c.TxID, c.Position}
	rows, err := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM events
		WHERE tx_id = $1::xid8 AND position = $2
		  AND tx_id < `+s.horizon(&args), args...)
	if err != nil {
		return nil, fmt.Errorf("read event %s: %w", c, err)
	}
	evs, err := scanEvents(rows, 1)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	return &evs[0], nil
}

// Contains reports whether c is the start of the log or names one of its
// events (committed, whether or not readers may see it yet).
func (s *Store) Contains(ctx context.Context, c Cursor) (bool, error) {
	if c.IsZero() {
		return true, nil
	}
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE tx_id = $1::xid8 AND position = $2)`,
		c.TxID, c.Position).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up cursor %s: %w", c, err)
	}
	return ok, nil
}

// LastBefore returns the cursor of the last event, in global order,
// recorded before t (Start when there is none). With inclusive, an event
// recorded at t counts too.
func (s *Store) LastBefore(ctx context.Context, t time.Time, inclusive bool) (Cursor, error) {
	op := "<"
	if inclusive {
		op = "<="
	}
	var c Cursor
	err := s.pool.QueryRow(ctx, `SELECT tx_id, position FROM events WHERE recorded_at `+op+` $1
		ORDER BY tx_id DESC, position DESC LIMIT 1`, t).Scan(&c.TxID, &c.Position)
	if errors.Is(err, pgx.ErrNoRows) {
		return Start, nil
	}
	if err != nil {
		return Start, fmt.Errorf("find the last event before %s: %w", t.Format(time.RFC3339Nano), err)
	}
	return c, nil
}

// ReadRange calls handle with every event after from up to and including
// to, in global order, in pages of at most pageSize events that match f. It
// first waits until every transaction that could still commit at or before
// to has ended, so the pages that follow are the whole range: unlike a run
// of ReadAll calls, whose horizon may dip for a moment (a transaction of
// another database that ends while a statement runs is counted as still
// running), an empty page here always means the range is done.
func (s *Store) ReadRange(ctx context.Context, from, to Cursor, pageSize int, f Filter, handle func([]RecordedEvent) error) error {
	if !from.Less(to) {
		return nil
	}
	if pageSize <= 0 {
		pageSize = 1000
	}
	if err := s.WaitVisible(ctx, to); err != nil {
		return err
	}
	cur := from
	for {
		args := []any{cur.TxID, cur.Position, to.TxID, to.Position, pageSize}
		q := `SELECT ` + eventColumns + ` FROM events
			WHERE (tx_id, position) > ($1::xid8, $2)
			  AND (tx_id, position) <= ($3::xid8, $4)` + f.sql(&args) + `
			ORDER BY tx_id, position
			LIMIT $5`
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("read log from %s to %s: %w", cur, to, err)
		}
		evs, err := scanEvents(rows, pageSize)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		if err := handle(evs); err != nil {
			return err
		}
		if len(evs) < pageSize {
			return nil
		}
		cur = evs[len(evs)-1].Cursor()
	}
}

// CommandStream returns the id of the first stream of streamType that the
// command with this id wrote, if it wrote one: a creating command retried
// without an id of its own finds the entity its first run created.
func (s *Store) CommandStream(ctx context.Context, commandID, streamType string) (string, bool, error) {
	var stream string
	err := s.pool.QueryRow(ctx,
		`SELECT stream_id FROM events WHERE command_id = $1 AND stream_type = $2 ORDER BY position LIMIT 1`,
		commandID, streamType).Scan(&stream)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("look up command %q: %w", commandID, err)
	}
	return stream, true, nil
}

// StreamsEndingWith lists the streams of a type whose last event is one of
// eventTypes: for a process manager, the entities left in the middle of a
// step.
func (s *Store) StreamsEndingWith(ctx context.Context, streamType string, eventTypes []string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT stream_id FROM (
			SELECT DISTINCT ON (stream_id) stream_id, event_type
			FROM events WHERE stream_type = $1
			ORDER BY stream_id, version DESC
		) last WHERE event_type = ANY($2)`, streamType, eventTypes)
	if err != nil {
		return nil, fmt.Errorf("find %s streams ending with %s: %w", streamType, strings.Join(eventTypes, ", "), err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find %s streams ending with %s: %w", streamType, strings.Join(eventTypes, ", "), err)
	}
	return ids, nil
}

// Last returns the cursor of the last event committed so far (Start when the
// log is empty). Readers in global order may not see it yet: ReadRange up to
// it waits until they can, and then reads every event committed before it.
func (s *Store) Last(ctx context.Context) (Cursor, error) {
	var c Cursor
	err := s.pool.QueryRow(ctx, `SELECT tx_id, position FROM events ORDER BY tx_id DESC, position DESC LIMIT 1`).
		Scan(&c.TxID, &c.Position)
	if errors.Is(err, pgx.ErrNoRows) {
		return Start, nil
	}
	if err != nil {
		return Start, fmt.Errorf("read the last event: %w", err)
	}
	return c, nil
}

// Count counts the committed events that match f, whether or not readers in
// global order may see them yet.
func (s *Store) Count(ctx context.Context, f Filter) (int64, error) {
	var args []any
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE true`+f.sql(&args), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count events: %w", err)
	}
	return n, nil
}
