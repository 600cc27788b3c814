package eventstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Batch is what a subscriber receives: the events that passed its filter and
// the cursor after the last event read (matching or not), to checkpoint.
type Batch struct {
	Events []RecordedEvent
	Cursor Cursor
}

// SubscribeOptions configure Subscribe. The zero value reads everything from
// the start in batches of 1,000.
type SubscribeOptions struct {
	From      Cursor
	BatchSize int
	// Filter is applied after reading, so the cursor advances over events
	// that do not match and a checkpoint never rescans them.
	Filter Filter
}

// Subscribe delivers every event after opts.From in global order: first the
// backlog in batches, then new events as they commit, woken by LISTEN/NOTIFY
// and polling only as a fallback. Delivery is at least once: the subscriber
// owns its checkpoint (see SaveCheckpoint) and resumes from it.
//
// It returns when ctx ends or handle fails; read errors (a restarting
// database, say) are retried with backoff.
func (s *Store) Subscribe(ctx context.Context, opts SubscribeOptions, handle func(context.Context, Batch) error) error {
	size := opts.BatchSize
	if size <= 0 {
		size = 1000
	}
	wake, unregister := s.notifier.register()
	defer unregister()
	cursor := opts.From
	backoff := 10 * time.Millisecond
	// While a full read is handled the next one is read: a backlog is then
	// paced by the slower of reading and handling, not by their sum. Behind
	// the head, reads grow to several batches each (handed over a batch at
	// a time): each read is a round trip and a query the database plans.
	var ahead <-chan readResult
	read := size // how many events the last read asked for
	for {
		var evs []RecordedEvent
		var err error
		if ahead != nil {
			r := <-ahead
			evs, err, ahead = r.events, r.err, nil
		} else {
			read = size
			evs, err = s.readRecent(ctx, cursor, size, s.notifier.generation(), s.readAfter)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.opts.Log.Warn().Err(err).Str("cursor", cursor.String()).Msg("subscription read failed; retrying")
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		if len(evs) > 0 {
			full := len(evs) == read
			if full {
				// Never past the room a read makes at once (scanEvents).
				read = min(read*2, max(size, min(size*maxReadBatches, longRead)))
				ahead = s.readAhead(ctx, evs[len(evs)-1].Cursor(), read)
			}
			for part := range slices.Chunk(evs, size) {
				b := Batch{Cursor: part[len(part)-1].Cursor(), Events: part}
				if !opts.Filter.IsZero() {
					// The events may be shared with other subscriptions: the
					// matching ones go into an array of this one's own.
					// Counted first, so the array is made once at its size:
					// grown by appends, it cost twice the copies, for each
					// filtered subscription and every event of a fan-out.
					n := 0
					for i := range part {
						if opts.Filter.Match(&part[i]) {
							n++
						}
					}
					b.Events = nil
					if n > 0 {
						b.Events = make([]RecordedEvent, 0, n)
						for i := range part {
							if opts.Filter.Match(&part[i]) {
								b.Events = append(b.Events, part[i])
							}
						}
					}
				}
				if err := handle(ctx, b); err != nil {
					return err
				}
				cursor = b.Cursor
			}
			if full {
				continue
			}
		}
		// Committed events may be held back behind a transaction still open
		// (perhaps one that writes no events, so no notification will come
		// when it ends): look again soon instead of waiting for a poll.
		wait := s.opts.PollInterval
		if held, err := s.heldBackShared(ctx, cursor); err == nil && held {
			wait = min(wait, heldBackRetry)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-time.After(wait):
			// Nobody said anything committed: what changed (a transaction
			// that held events back ended, say) is not in the reads shared
			// since the last wake-up. Look afresh.
			s.notifier.advance()
		}
	}
}

const heldBackRetry = 10 * time.Millisecond

// maxReadBatches bounds how many batches a subscription behind the head
// reads at once.
const maxReadBatches = 4

type readResult struct {
	events []RecordedEvent
	err    error
}

// readAhead reads the batch after cursor on a goroutine of its own. The
// result waits in the channel, so the goroutine ends even if no one takes it.
func (s *Store) readAhead(ctx context.Context, cursor Cursor, size int) <-chan readResult {
	out := make(chan readResult, 1)
	go func() {
		// Behind the head, any read under way of the same events will do.
		evs, err := s.readRecent(ctx, cursor, size, math.MaxUint64, s.readLog)
		out <- readResult{evs, err}
	}()
	return out
}

// heldBack reports whether committed events after cursor exist that readers
// may not see yet.
func (s *Store) heldBack(ctx context.Context, cursor Cursor) (bool, error) {
	// Ordered and limited so that the plan walks the (tx_id, position) index
	// and stops at the first row: with EXISTS alone the planner may expect
	// many rows after the cursor and scan the whole table when none follow.
	var held bool
	err := s.pool.QueryRow(ctx, `SELECT count(*) > 0 FROM (
		SELECT 1 FROM events WHERE (tx_id, position) > ($1::xid8, $2) ORDER BY tx_id, position LIMIT 1) AS next`,
		cursor.TxID, cursor.Position).Scan(&held)
	return held, err
}

// LoadCheckpoint returns a subscriber's saved cursor (Start if none).
func (s *Store) LoadCheckpoint(ctx context.Context, name string) (Cursor, error) {
	var c Cursor
	err := s.pool.QueryRow(ctx, `SELECT tx_id, position FROM subscription_checkpoints WHERE name = $1`, name).Scan(&c.TxID, &c.Position)
	if err == pgx.ErrNoRows {
		return Start, nil
	}
	if err != nil {
		return Start, fmt.Errorf("load checkpoint %q: %w", name, err)
	}
	return c, nil
}

// SaveCheckpoint records a subscriber's cursor inside tx, atomically with the
// subscriber's own writes.
func SaveCheckpoint(ctx context.Context, db pgx.Tx, name string, c Cursor) error {
	_, err := db.Exec(ctx, `
		INSERT INTO subscription_checkpoints (name, tx_id, position, updated_at) VALUES ($1, $2, $3, now())
		ON CONFLICT (name) DO UPDATE SET tx_id = EXCLUDED.tx_id, position = EXCLUDED.position, updated_at = now()`,
		name, c.TxID, c.Position)
	if err != nil {
		return fmt.Errorf("save checkpoint %q: %w", name, err)
	}
	return nil
}

// SaveCheckpoint records a subscriber's cursor in its own transaction.
func (s *Store) SaveCheckpoint(ctx context.Context, name string, c Cursor) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return SaveCheckpoint(ctx, tx, name, c) })
}
