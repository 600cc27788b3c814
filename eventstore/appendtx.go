package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// AppendInTx appends inside the caller's transaction, so events commit or
// roll back together with the caller's other writes. It reads stream heads in
// the transaction instead of using the batcher, so it is slower than Append;
// use it only when that atomicity is needed.
func (s *Store) AppendInTx(ctx context.Context, tx pgx.Tx, req AppendRequest) (AppendResult, error) {
	op, err := s.prepare(ctx, req)
	if err != nil {
		return AppendResult{}, err
	}
	if req.CommandID != "" {
		res, found, err := s.CommandResult(ctx, req.CommandID, op.fingerprint)
		if err != nil || found {
			return res, err
		}
	}
	res := AppendResult{}
	now := s.opts.Clock().UTC().Truncate(time.Microsecond)
	heads := map[string]head{}
	for _, st := range req.Streams {
		var h head
		err := tx.QueryRow(ctx, `SELECT version, hash FROM events WHERE stream_id = $1 ORDER BY version DESC LIMIT 1`, st.StreamID).Scan(&h.version, &h.hash)
		if errors.Is(err, pgx.ErrNoRows) {
			h = head{hash: ZeroHash}
		} else if err != nil {
			return AppendResult{}, fmt.Errorf("append: read head of %q: %w", st.StreamID, err)
		}
		heads[st.StreamID] = h
	}
	if err := checkExpected(op, heads); err != nil {
		return AppendResult{}, err
	}
	for i, e := range op.events {
		st := req.Streams[e.stream]
		h := heads[st.StreamID]
		in := HashInput{
			PrevHash: h.hash, StreamID: st.StreamID, StreamType: st.StreamType, Version: h.version + 1,
			Type: e.typ, SchemaVersion: e.schemaVersion, Payload: e.payload, Metadata: op.metadata,
			CommandID: req.CommandID, RecordedAt: now,
		}
		sum := Hash(in)
		var c Cursor
		err := tx.QueryRow(ctx, `
			INSERT INTO events (stream_id, stream_type, version, event_type, schema_version, payload, metadata,
			                    command_id, command_seq, recorded_at, prev_hash, hash, actor, tenant, correlation_id)
			VALUES ($1, $2, $3, $4, $5, $6::text::json, $7::text::json,
			        NULLIF($8, ''), CASE WHEN $8 = '' THEN NULL ELSE $9::int END, $10, $11, $12,
			        NULLIF($13, ''), NULLIF($14, ''), NULLIF($15, ''))
			RETURNING tx_id, position`,
			st.StreamID, st.StreamType, in.Version, e.typ, e.schemaVersion, string(e.payload), string(op.metadata),
			req.CommandID, i, now, in.PrevHash, sum, req.Metadata.Actor, req.Metadata.Tenant, req.Metadata.CorrelationID).Scan(&c.TxID, &c.Position)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "events_command" {
			// The same command committed concurrently in another transaction.
			return AppendResult{}, &CommandReusedError{CommandID: req.CommandID}
		}
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return AppendResult{}, &VersionConflictError{StreamID: st.StreamID, Expected: st.Expected, Actual: in.Version}
		}
		if err != nil {
			return AppendResult{}, fmt.Errorf("append to %q: %w", st.StreamID, err)
		}
		heads[st.StreamID] = head{version: in.Version, hash: sum}
		res.Cursor = c
	}
	for _, st := range req.Streams {
		res.Streams = append(res.Streams, StreamVersion{StreamID: st.StreamID, Version: heads[st.StreamID].version})
		// The batcher's cached head may now be behind; it re-reads on conflict.
		s.appender.heads.forget(st.StreamID)
	}
	if len(op.events) > 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, NotifyChannel); err != nil {
			return AppendResult{}, fmt.Errorf("append: notify: %w", err)
		}
	}
	return res, nil
}
