package eventgen

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"cairn/domain"
	"cairn/eventstore"
)

// Append writes items through the store, one command each, in order.
func Append(ctx context.Context, store *eventstore.Store, items []Item) (eventstore.Cursor, error) {
	var last eventstore.Cursor
	for _, it := range items {
		res, err := store.Append(ctx, eventstore.AppendRequest{Metadata: it.Metadata, Streams: []eventstore.StreamAppend{{
			StreamID: it.StreamID, StreamType: it.StreamType, Expected: eventstore.AnyVersion, Events: it.Events}}})
		if err != nil {
			return last, fmt.Errorf("append to %s: %w", it.StreamID, err)
		}
		last = res.Cursor
	}
	return last, nil
}

// Copier bulk-loads items with COPY, chaining each stream's hashes as the
// store would, so the log stays verifiable. It is for benchmarks: it keeps
// stream heads in memory and so needs streams no one else writes to.
type Copier struct {
	pool     *pgxpool.Pool
	registry *domain.Registry
	heads    map[string]head
}

type head struct {
	version int64
	hash    []byte
}

// NewCopier returns a copier into pool's events table.
func NewCopier(pool *pgxpool.Pool, registry *domain.Registry) *Copier {
	return &Copier{pool: pool, registry: registry, heads: map[string]head{}}
}

// Prepared is a batch of items encoded and hashed, ready to write.
type Prepared struct {
	rows   [][]any
	Events int
}

// Prepare encodes items and chains their hashes after the batches prepared
// before. Batches are to be written in the order they were prepared; the
// next may be prepared while one is written.
func (c *Copier) Prepare(items []Item, at time.Time) (Prepared, error) {
	var rows [][]any
	recorded := at.UTC().Truncate(time.Microsecond)
	for _, it := range items {
		meta, err := json.Marshal(it.Metadata)
		if err != nil {
			return Prepared{}, err
		}
		h, ok := c.heads[it.StreamID]
		if !ok {
			h.hash = eventstore.ZeroHash
		}
		for _, e := range it.Events {
			typ, sv, payload, err := c.registry.Encode(e)
			if err != nil {
				return Prepared{}, err
			}
			h.version++
			sum := eventstore.Hash(eventstore.HashInput{PrevHash: h.hash, StreamID: it.StreamID, StreamType: it.StreamType,
				Version: h.version, Type: typ, SchemaVersion: sv, Payload: payload, Metadata: meta, RecordedAt: recorded})
			rows = append(rows, []any{it.StreamID, it.StreamType, h.version, typ, sv, string(payload), string(meta), recorded, h.hash, sum})
			h.hash = sum
		}
		c.heads[it.StreamID] = h
	}
	return Prepared{rows: rows, Events: len(rows)}, nil
}

// Write writes a prepared batch in one COPY (one transaction).
func (c *Copier) Write(ctx context.Context, p Prepared) error {
	_, err := c.pool.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"stream_id", "stream_type", "version", "event_type", "schema_version", "payload", "metadata", "recorded_at", "prev_hash", "hash"},
		pgx.CopyFromRows(p.rows))
	if err != nil {
		return fmt.Errorf("copy events: %w", err)
	}
	return nil
}
