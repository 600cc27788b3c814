package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// A ChainCheckpoint remembers the log's extent and its streams' heads at a
// moment (migration 00070). The hash chains catch an event altered, added or
// removed between two others; removing a stream's last events, or the tail
// of the whole log, leaves no broken link behind, and a checkpoint is what
// then remembers they were there.
type ChainCheckpoint struct {
	ID      int64
	TakenAt time.Time
	// Through is the last event the checkpoint covers; Events and Streams
	// count the events and streams up to it.
	Through Cursor
	Events  int64
	Streams int64
}

// StreamHead is a stream's last version and hash, as a checkpoint recorded
// it.
type StreamHead struct {
	Version int64
	Hash    []byte
}

// checkpointLock serialises checkpointers of one database (an advisory lock
// key: "cairn chain checkpoints").
const checkpointLock = 0x63616972_6e636b70

// TakeCheckpoint records a checkpoint of every event readers can see now,
// when there are events since the last one; it reports whether it took one.
// Checkpoints of several processes take turns.
func (s *Store) TakeCheckpoint(ctx context.Context) (ChainCheckpoint, bool, error) {
	var cp ChainCheckpoint
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return cp, false, fmt.Errorf("take a chain checkpoint: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(checkpointLock)); err != nil {
		return cp, false, fmt.Errorf("take a chain checkpoint: %w", err)
	}
	last, err := lastCheckpoint(ctx, tx, Cursor{})
	if err != nil {
		return cp, false, err
	}
	head, err := s.Head(ctx)
	if err != nil {
		return cp, false, err
	}
	if !last.Through.Less(head) {
		return last, false, nil
	}
	heads := map[string]StreamHead{}
	cp = ChainCheckpoint{Through: head, Events: last.Events, Streams: last.Streams}
	err = s.readLinks(ctx, last.Through, head, 5000, func(stream string, version int64, hash []byte) {
		heads[stream] = StreamHead{Version: version, Hash: hash}
		cp.Events++
		if version == 1 {
			cp.Streams++
		}
	})
	if err != nil {
		return cp, false, fmt.Errorf("take a chain checkpoint: %w", err)
	}
	err = tx.QueryRow(ctx, `INSERT INTO chain_checkpoints (through_tx, through_position, events, streams)
		VALUES ($1, $2, $3, $4) RETURNING id, taken_at`, cp.Through.TxID, cp.Through.Position, cp.Events, cp.Streams).
		Scan(&cp.ID, &cp.TakenAt)
	if err != nil {
		return cp, false, fmt.Errorf("take a chain checkpoint: %w", err)
	}
	ids := make([]string, 0, len(heads))
	versions := make([]int64, 0, len(heads))
	hashes := make([][]byte, 0, len(heads))
	for id, h := range heads {
		ids, versions, hashes = append(ids, id), append(versions, h.Version), append(hashes, h.Hash)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO chain_checkpoint_heads (checkpoint_id, stream_id, version, hash)
		SELECT $1, s, v, h FROM unnest($2::text[], $3::int[], $4::bytea[]) AS u(s, v, h)`, cp.ID, ids, versions, hashes); err != nil {
		return cp, false, fmt.Errorf("take a chain checkpoint: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return cp, false, fmt.Errorf("take a chain checkpoint: %w", err)
	}
	return cp, true, nil
}

// readLinks calls link with the stream, version and hash of every event
// after from up to to (a cursor readers can see), in global order, a page
// at a time. A checkpoint needs nothing else of an event: read whole, the
// payloads and metadata were most of what its reads cost, in the database
// and in decoding, during a fan-out to 10,000 agents.
func (s *Store) readLinks(ctx context.Context, from, to Cursor, pageSize int, link func(stream string, version int64, hash []byte)) error {
	for cur := from; cur.Less(to); {
		rows, err := s.pool.Query(ctx, `SELECT tx_id, position, stream_id, version, hash FROM events
			WHERE (tx_id, position) > ($1::xid8, $2) AND (tx_id, position) <= ($3::xid8, $4)
			ORDER BY tx_id, position
			LIMIT $5`, cur.TxID, cur.Position, to.TxID, to.Position, pageSize)
		if err != nil {
			return fmt.Errorf("read the log's links from %s to %s: %w", cur, to, err)
		}
		var (
			n       int
			stream  string
			version int64
			hash    []byte
		)
		_, err = pgx.ForEachRow(rows, []any{&cur.TxID, &cur.Position, &stream, &version, &hash}, func() error {
			n++
			link(stream, version, hash)
			hash = nil // the next row's hash goes to a slice of its own
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the log's links from %s to %s: %w", from, to, err)
		}
		if n < pageSize {
			return nil
		}
	}
	return nil
}

// RunCheckpoints takes a checkpoint every interval until ctx ends. A failed
// one is logged and tried again at the next.
func (s *Store) RunCheckpoints(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = 10 * time.Second
	}
	for {
		if _, _, err := s.TakeCheckpoint(ctx); err != nil && ctx.Err() == nil {
			s.opts.Log.Warn().Err(err).Msg("could not take a chain checkpoint; trying again later")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// LastCheckpoint is the latest checkpoint that covers no event after
// before (the latest of all for a zero cursor); a zero checkpoint (ID 0)
// when there is none.
func (s *Store) LastCheckpoint(ctx context.Context, before Cursor) (ChainCheckpoint, error) {
	return lastCheckpoint(ctx, s.pool, before)
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func lastCheckpoint(ctx context.Context, q querier, before Cursor) (ChainCheckpoint, error) {
	var cp ChainCheckpoint
	where := ""
	var args []any
	if !before.IsZero() {
		where = ` WHERE (through_tx, through_position) <= ($1::xid8, $2)`
		args = append(args, before.TxID, before.Position)
	}
	err := q.QueryRow(ctx, `SELECT id, taken_at, through_tx, through_position, events, streams
		FROM chain_checkpoints`+where+` ORDER BY id DESC LIMIT 1`, args...).
		Scan(&cp.ID, &cp.TakenAt, &cp.Through.TxID, &cp.Through.Position, &cp.Events, &cp.Streams)
	if errors.Is(err, pgx.ErrNoRows) {
		return ChainCheckpoint{}, nil
	}
	if err != nil {
		return cp, fmt.Errorf("read the last chain checkpoint: %w", err)
	}
	return cp, nil
}

// CheckpointHeads returns every stream's head as of a checkpoint (one
// stream's, when streamID is set).
func (s *Store) CheckpointHeads(ctx context.Context, checkpointID int64, streamID string) (map[string]StreamHead, error) {
	args := []any{checkpointID}
	where := ""
	if streamID != "" {
		args = append(args, streamID)
		where = " AND stream_id = $2"
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (stream_id) stream_id, version, hash
		FROM chain_checkpoint_heads WHERE checkpoint_id <= $1`+where+`
		ORDER BY stream_id, checkpoint_id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("read the chain checkpoint's heads: %w", err)
	}
	defer rows.Close()
	out := map[string]StreamHead{}
	for rows.Next() {
		var id string
		var h StreamHead
		if err := rows.Scan(&id, &h.Version, &h.Hash); err != nil {
			return nil, fmt.Errorf("read the chain checkpoint's heads: %w", err)
		}
		out[id] = h
	}
	return out, rows.Err()
}

// checkRemovals compares the log with the last checkpoint: every head it
// recorded must still be in its stream with its hash, and the log must hold
// as many events up to it as it counted. Each difference is a break.
func (s *Store) checkRemovals(ctx context.Context, streamID string, rep *VerifyReport) ([]ChainBreak, error) {
	cp, err := s.LastCheckpoint(ctx, Cursor{})
	if err != nil || cp.ID == 0 {
		return nil, err
	}
	var out []ChainBreak
	rep.Checkpoint = &cp
	args := []any{cp.ID}
	where := ""
	if streamID != "" {
		args = append(args, streamID)
		where = " AND stream_id = $2"
	}
	rows, err := s.pool.Query(ctx, `
		SELECT h.stream_id, h.version, h.checkpoint_id, e.position, e.hash = h.hash,
		       coalesce((SELECT max(version) FROM events m WHERE m.stream_id = h.stream_id), 0)
		FROM (SELECT DISTINCT ON (stream_id) stream_id, version, hash, checkpoint_id
		      FROM chain_checkpoint_heads WHERE checkpoint_id <= $1`+where+`
		      ORDER BY stream_id, checkpoint_id DESC) h
		LEFT JOIN events e ON e.stream_id = h.stream_id AND e.version = h.version
		WHERE e.hash IS DISTINCT FROM h.hash`, args...)
	if err != nil {
		return nil, fmt.Errorf("verify against the chain checkpoints: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var stream string
		var version, checkpoint, have int64
		var position *int64
		var same *bool
		if err := rows.Scan(&stream, &version, &checkpoint, &position, &same, &have); err != nil {
			return nil, fmt.Errorf("verify against the chain checkpoints: %w", err)
		}
		b := ChainBreak{StreamID: stream, Version: version}
		switch {
		case position == nil && have == 0:
			b.Reason = fmt.Sprintf("the whole stream is missing: chain checkpoint %d recorded it up to version %d", checkpoint, version)
		case position == nil:
			b.Reason = fmt.Sprintf("versions %d to %d are missing: chain checkpoint %d recorded them, so the stream's last events were removed", have+1, version, checkpoint)
		default:
			b.Position = *position
			b.Reason = fmt.Sprintf("its hash differs from the one chain checkpoint %d recorded: the event was replaced", checkpoint)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("verify against the chain checkpoints: %w", err)
	}
	if streamID != "" {
		return out, nil
	}
	var held int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE (tx_id, position) <= ($1::xid8, $2)`,
		cp.Through.TxID, cp.Through.Position).Scan(&held); err != nil {
		return nil, fmt.Errorf("verify against the chain checkpoints: %w", err)
	}
	if held < cp.Events {
		out = append(out, ChainBreak{Position: cp.Through.Position, Reason: fmt.Sprintf(
			"the log held %d events up to cursor %s when chain checkpoint %d was taken (%s); %d remain: %d events were removed",
			cp.Events, cp.Through, cp.ID, cp.TakenAt.UTC().Format(time.RFC3339), held, cp.Events-held)})
	}
	return out, nil
}
