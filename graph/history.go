package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"cairn/eventstore"
)

// eventFilter selects events of the history, in queries and subscriptions
// alike. Empty fields match everything.
type eventFilter struct {
	StreamIDs     []string
	StreamTypes   []string
	Types         []string
	Actor         string
	CorrelationID string
	Tenant        string
	From, To      time.Time
}

// match is the filter in Go, for events delivered live.
func (f eventFilter) match(e *eventstore.RecordedEvent) bool {
	return (len(f.StreamIDs) == 0 || slices.Contains(f.StreamIDs, e.StreamID)) &&
		(len(f.StreamTypes) == 0 || slices.Contains(f.StreamTypes, e.StreamType)) &&
		(len(f.Types) == 0 || slices.Contains(f.Types, e.Type)) &&
		(f.Actor == "" || e.Metadata.Actor == f.Actor) &&
		(f.CorrelationID == "" || e.Metadata.CorrelationID == f.CorrelationID) &&
		(f.Tenant == "" || e.Metadata.Tenant == f.Tenant) &&
		(f.From.IsZero() || !e.RecordedAt.Before(f.From)) &&
		(f.To.IsZero() || e.RecordedAt.Before(f.To))
}

// where is the filter in SQL, written so the indexes of migration 00030
// apply (the same expressions, the partial indexes' conditions implied).
func (f eventFilter) where(args *[]any) string {
	var b strings.Builder
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	if len(f.StreamIDs) > 0 {
		fmt.Fprintf(&b, " AND stream_id = ANY(%s)", arg(f.StreamIDs))
	}
	if len(f.StreamTypes) > 0 {
		fmt.Fprintf(&b, " AND stream_type = ANY(%s)", arg(f.StreamTypes))
	}
	if len(f.Types) > 0 {
		fmt.Fprintf(&b, " AND event_type = ANY(%s)", arg(f.Types))
	}
	if f.Actor != "" {
		fmt.Fprintf(&b, " AND actor = %s", arg(f.Actor))
	}
	if f.CorrelationID != "" {
		fmt.Fprintf(&b, " AND correlation_id = %s", arg(f.CorrelationID))
	}
	if f.Tenant != "" {
		fmt.Fprintf(&b, " AND tenant = %s", arg(f.Tenant))
	}
	if !f.From.IsZero() {
		fmt.Fprintf(&b, " AND recorded_at >= %s", arg(f.From))
	}
	if !f.To.IsZero() {
		fmt.Fprintf(&b, " AND recorded_at < %s", arg(f.To))
	}
	return b.String()
}

// history reads the event log with the filters of the API. It reads the log
// as the log, in global order, never replaying it into state; like
// eventstore.ReadAll it only returns events no running transaction can still
// precede, so a page boundary never skips a late commit.
type history struct {
	pool *pgxpool.Pool
}

const historyColumns = `position, tx_id, stream_id, stream_type, version, event_type, schema_version,
	payload, metadata, coalesce(command_id, ''), recorded_at, prev_hash, hash`

// read returns up to limit events after the cursor that match f.
func (h history) read(ctx context.Context, after eventstore.Cursor, limit int, f eventFilter) ([]eventstore.RecordedEvent, error) {
	args := []any{after.TxID, after.Position, limit}
	q := `SELECT ` + historyColumns + ` FROM events
		WHERE (tx_id, position) > ($1::xid8, $2)
		  AND tx_id < ` + eventstore.HorizonSQL + f.where(&args) + `
		ORDER BY tx_id, position
		LIMIT $3`
	rows, err := h.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read event history after %s: %w", after, err)
	}
	return scanHistory(rows, limit)
}

// get returns the event at a cursor, or nil.
func (h history) get(ctx context.Context, c eventstore.Cursor) (*eventstore.RecordedEvent, error) {
	rows, err := h.pool.Query(ctx, `SELECT `+historyColumns+` FROM events
		WHERE tx_id = $1::xid8 AND position = $2
		  AND tx_id < `+eventstore.HorizonSQL, c.TxID, c.Position)
	if err != nil {
		return nil, fmt.Errorf("read event %s: %w", c, err)
	}
	evs, err := scanHistory(rows, 1)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	return &evs[0], nil
}

func scanHistory(rows pgx.Rows, capacity int) ([]eventstore.RecordedEvent, error) {
	defer rows.Close()
	out := make([]eventstore.RecordedEvent, 0, min(capacity, 1000))
	for rows.Next() {
		var e eventstore.RecordedEvent
		var sv int32
		var payload, meta []byte
		if err := rows.Scan(&e.Position, &e.TxID, &e.StreamID, &e.StreamType, &e.Version, &e.Type, &sv,
			&payload, &meta, &e.CommandID, &e.RecordedAt, &e.PrevHash, &e.Hash); err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		e.SchemaVersion = int(sv)
		e.Payload, e.RawMetadata = payload, meta
		if err := json.Unmarshal(meta, &e.Metadata); err != nil {
			return nil, fmt.Errorf("event %d: metadata does not decode: %w", e.Position, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}
