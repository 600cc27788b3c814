package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"cairn/domain"
	"cairn/eventstore"
)

// benchAppend compares single-event command appends with 16 writers to raw
// single-row INSERTs into a plain table with the same columns and indexes,
// and to Message DB's write_message (a peer, installed in the same database)
// with the same writers.
func benchAppend(ctx context.Context, e *env) (result, error) {
	out := result{}
	mdb, err := messageDB(ctx, e)
	switch {
	case errors.Is(err, errNoMessageDB):
		out["append_vs_message_db_not_measured"] = err.Error()
	case err != nil:
		return nil, err
	default:
		defer mdb.Close()
	}
	if _, err := e.admin.Exec(ctx, `
		CREATE TABLE bench_raw (LIKE events INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING INDEXES INCLUDING CONSTRAINTS);
		GRANT SELECT, INSERT ON bench_raw TO cairn_app`); err != nil {
		return nil, fmt.Errorf("create baseline table: %w", err)
	}
	payload, _ := json.Marshal(benchEvent{Seq: 1, Node: "node-1", Status: "online"})
	meta := []byte(`{"commandId":"x","actor":"bench"}`)
	hash := eventstore.ZeroHash
	var seq atomic.Int64
	rawOp := func(ctx context.Context, w int) (int, error) {
		n := seq.Add(1)
		_, err := e.app.Exec(ctx, `INSERT INTO bench_raw (stream_id, stream_type, version, event_type, schema_version, payload, metadata, command_id, command_seq, recorded_at, prev_hash, hash, actor)
			VALUES ($1, 'node', $2, 'bench.node_reported', 1, $3, $4, $5, 0, now(), $6, $7, 'bench')`,
			"raw-"+strconv.Itoa(w), n, string(payload), string(meta), "raw-cmd-"+strconv.FormatInt(n, 10), hash, hash)
		return 1, err
	}
	storeOp := func(ctx context.Context, w int) (int, error) {
		n := seq.Add(1)
		_, err := e.store.Append(ctx, eventstore.AppendRequest{
			CommandID: "cmd-" + strconv.FormatInt(n, 10),
			Metadata:  eventstore.Metadata{Actor: "bench"},
			Streams: []eventstore.StreamAppend{{
				// Each writer keeps a few aggregates busy, as node heartbeats
				// and job transitions do.
				StreamID: "node-" + strconv.Itoa(w) + "-" + strconv.FormatInt(n%4, 10), StreamType: benchStreamType,
				Expected: eventstore.AnyVersion, Events: []domain.Event{benchEvent{Seq: n, Node: "node-1", Status: "online"}},
			}},
		})
		return 1, err
	}
	mdbOp := func(ctx context.Context, w int) (int, error) {
		n := seq.Add(1)
		return 1, writeMessage(ctx, mdb, "node-"+strconv.Itoa(w)+"-"+strconv.FormatInt(n%4, 10), n)
	}
	// Alternate short rounds so that load from elsewhere on the machine
	// falls on every side alike.
	rounds := 5
	slice := config{duration: e.cfg.duration / time.Duration(rounds), writers: e.cfg.writers}
	var raw, ours, peer float64
	before := e.store.Stats()
	for range rounds {
		r, err := throughput(ctx, slice, rawOp)
		if err != nil {
			return nil, err
		}
		o, err := throughput(ctx, slice, storeOp)
		if err != nil {
			return nil, err
		}
		raw, ours = raw+r/float64(rounds), ours+o/float64(rounds)
		if mdb != nil {
			p, err := throughput(ctx, slice, mdbOp)
			if err != nil {
				return nil, fmt.Errorf("write_message of Message DB: %w", err)
			}
			peer += p / float64(rounds)
		}
	}
	after := e.store.Stats()
	out["append_commands_per_batch"] = round(float64(after.Appends-before.Appends)/float64(max(1, after.Batches-before.Batches)), 1)
	out["append_events_per_s"] = round(ours, 0)
	out["raw_insert_rows_per_s"] = round(raw, 0)
	out["append_ratio"] = round(ours/raw, 2)
	out["append_writers"] = e.cfg.writers
	out["append_includes_command_id"] = true
	out["append_phase_seconds_per_run"] = e.cfg.duration.Seconds()
	if mdb != nil {
		out["message_db_write_message_per_s"] = round(peer, 0)
		out["append_vs_message_db_ratio"] = round(ours/peer, 2)
	}
	return out, nil
}

// benchAppend10 appends commands of ten events each.
func benchAppend10(ctx context.Context, e *env) (result, error) {
	var seq atomic.Int64
	rate, err := throughput(ctx, e.cfg, func(ctx context.Context, w int) (int, error) {
		n := seq.Add(1)
		evs := make([]domain.Event, 10)
		for i := range evs {
			evs[i] = benchEvent{Seq: n*10 + int64(i), Node: "node-2", Status: "busy"}
		}
		_, err := e.store.Append(ctx, eventstore.AppendRequest{
			CommandID: "cmd10-" + strconv.FormatInt(n, 10),
			Streams: []eventstore.StreamAppend{{
				StreamID: "job-" + strconv.Itoa(w) + "-" + strconv.FormatInt(n%4, 10), StreamType: "job",
				Expected: eventstore.AnyVersion, Events: evs,
			}},
		})
		return 10, err
	})
	if err != nil {
		return nil, err
	}
	return result{"append10_events_per_s": round(rate, 0)}, nil
}

// throughput runs op from cfg.writers goroutines for cfg.duration and returns
// units per second.
func throughput(ctx context.Context, cfg config, op func(ctx context.Context, writer int) (int, error)) (float64, error) {
	var total atomic.Int64
	var firstErr error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(cfg.duration)
	for w := 0; w < cfg.writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				n, err := op(ctx, w)
				if err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				total.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}
