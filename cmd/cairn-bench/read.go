package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"cairn/eventstore"
)

const catchupMinEvents = 600_000

// benchCatchUp catches up with the whole log through the store, as a new
// subscriber does, and compares with a raw ordered scan of the same table
// and columns.
func benchCatchUp(ctx context.Context, e *env) (result, error) {
	if err := fill(ctx, e, catchupMinEvents); err != nil {
		return nil, err
	}
	var total int64
	if err := e.app.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&total); err != nil {
		return nil, err
	}
	// Warm the cache equally for both readers.
	if _, err := e.app.Exec(ctx, `SELECT count(*) FROM events`); err != nil {
		return nil, err
	}

	// Passes alternate, and each reader's median counts: a single pass of
	// each swung the ratio between 0.82 and 1.11 from run to run, mostly
	// with the raw scan's own rate.
	var raws, ours []float64
	var n, rawN int64
	for range catchupRounds {
		r, c, err := rawScan(ctx, e)
		if err != nil {
			return nil, err
		}
		raws, rawN = append(raws, r), c
		o, c, err := storeScan(ctx, e, total)
		if err != nil {
			return nil, err
		}
		ours, n = append(ours, o), c
	}
	if n != rawN {
		return nil, fmt.Errorf("store read %d events, raw scan %d", n, rawN)
	}
	raw, ourRate := median(raws), median(ours)
	return result{
		"catchup_events":        n,
		"catchup_events_per_s":  round(ourRate, 0),
		"raw_scan_events_per_s": round(raw, 0),
		"catchup_ratio":         round(ourRate/raw, 2),
	}, nil
}

// catchupRounds is how many passes each reader makes.
const catchupRounds = 3

// rawScan reads the log in one ordered query and returns events a second
// and how many it read.
func rawScan(ctx context.Context, e *env) (float64, int64, error) {
	start := time.Now()
	var n int64
	rows, err := e.app.Query(ctx, `SELECT position, tx_id, stream_id, stream_type, version, event_type, schema_version,
		payload, metadata, coalesce(command_id, ''), recorded_at, prev_hash, hash FROM events ORDER BY position`)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	var ev eventstore.RecordedEvent
	var sv int32
	var p, m []byte
	for rows.Next() {
		if err := rows.Scan(&ev.Position, &ev.TxID, &ev.StreamID, &ev.StreamType, &ev.Version, &ev.Type, &sv,
			&p, &m, &ev.CommandID, &ev.RecordedAt, &ev.PrevHash, &ev.Hash); err != nil {
			return 0, 0, err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	return float64(n) / time.Since(start).Seconds(), n, nil
}

// storeScan catches up with the log through the store as a subscriber
// does (Subscribe from the start, in batches of 5,000, each read while the
// one before is handled), up to the total events, and returns events a
// second and how many it read.
func storeScan(ctx context.Context, e *env, total int64) (float64, int64, error) {
	start := time.Now()
	var n int64
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	err := e.store.Subscribe(ctx, eventstore.SubscribeOptions{From: eventstore.Start, BatchSize: 5000},
		func(_ context.Context, b eventstore.Batch) error {
			n += int64(len(b.Events))
			if n >= total {
				stop()
			}
			return nil
		})
	if err != nil && n < total {
		return 0, 0, err
	}
	return float64(n) / time.Since(start).Seconds(), n, nil
}

// fill tops the log up to at least n events with batched appends.
func fill(ctx context.Context, e *env, n int64) error {
	var have int64
	if err := e.app.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&have); err != nil {
		return err
	}
	if have >= n {
		return nil
	}
	// COPY through the owner is the quickest way to a big log; the events are
	// chained properly so the log stays verifiable.
	rowsLeft := n - have
	const perStream = 100
	src := make([][]any, 0, rowsLeft)
	now := time.Now().UTC().Truncate(time.Microsecond)
	meta := []byte(`{"actor":"bench"}`)
	for s := int64(0); int64(len(src)) < rowsLeft; s++ {
		stream := fmt.Sprintf("fill-%d", s)
		prev := eventstore.ZeroHash
		for v := int64(1); v <= perStream && int64(len(src)) < rowsLeft; v++ {
			payload := []byte(fmt.Sprintf(`{"seq":%d,"node":"node-%d","status":"online"}`, v, s))
			h := eventstore.Hash(eventstore.HashInput{PrevHash: prev, StreamID: stream, StreamType: benchStreamType, Version: v,
				Type: "bench.node_reported", SchemaVersion: 1, Payload: payload, Metadata: meta, RecordedAt: now})
			src = append(src, []any{stream, benchStreamType, v, "bench.node_reported", 1, string(payload), string(meta), now, prev, h})
			prev = h
		}
	}
	_, err := e.app.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"stream_id", "stream_type", "version", "event_type", "schema_version", "payload", "metadata", "recorded_at", "prev_hash", "hash"},
		pgx.CopyFromRows(src))
	if err != nil {
		return fmt.Errorf("fill log: %w", err)
	}
	_, err = e.app.Exec(ctx, `ANALYZE events`)
	return err
}
