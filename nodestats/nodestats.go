// Package nodestats keeps the statistics agents report about their nodes: a
// time series outside the event log, downsampled on read and purged after
// its retention period.
package nodestats

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"cairn/domain"
	"cairn/internal/retention"
)

// DefaultRetention is how long statistics are kept unless configured.
const DefaultRetention = 14 * 24 * time.Hour

// Limits of statistics.
const (
	MaxSamplesPerReport = 1000
	// DefaultPoints is how many samples a query returns at most when the
	// caller names no number.
	DefaultPoints = 500
	MaxPoints     = 10_000
	// maxClockSkew bounds how far in the future an agent's sample may be.
	maxClockSkew = 5 * time.Minute
)

// Sample is one statistics sample of a node.
type Sample struct {
	Time                 time.Time         `json:"time"`
	CPUPercent           float64           `json:"cpuPercent"`
	MemoryUsedBytes      int64             `json:"memoryUsedBytes"`
	MemoryAvailableBytes int64             `json:"memoryAvailableBytes"`
	SwapUsedBytes        int64             `json:"swapUsedBytes"`
	Load1                float64           `json:"load1"`
	Load5                float64           `json:"load5"`
	Load15               float64           `json:"load15"`
	Disks                []DiskUsage       `json:"disks"`
	Network              []NetworkCounters `json:"network"`
}

// DiskUsage is one mount's usage.
type DiskUsage struct {
	Mountpoint string `json:"mountpoint"`
	UsedBytes  int64  `json:"usedBytes"`
	FreeBytes  int64  `json:"freeBytes"`
}

// NetworkCounters are an interface's counters since boot.
type NetworkCounters struct {
	Name            string `json:"name"`
	BytesReceived   int64  `json:"bytesReceived"`
	BytesSent       int64  `json:"bytesSent"`
	PacketsReceived int64  `json:"packetsReceived"`
	PacketsSent     int64  `json:"packetsSent"`
	ErrorsIn        int64  `json:"errorsIn"`
	ErrorsOut       int64  `json:"errorsOut"`
}

// Store stores node statistics in node_stats, a time series outside the
// event log. A sample for an instant already stored is ignored, so a batch
// sent again is harmless. It is safe for concurrent use.
type Store struct {
	pool  *pgxpool.Pool
	clock func() time.Time
}

// New returns the statistics store over pool.
func New(pool *pgxpool.Pool, clock func() time.Time) *Store {
	if clock == nil {
		clock = time.Now
	}
	return &Store{pool: pool, clock: clock}
}

// Append stores a node's samples and returns how many were new.
func (s *Store) Append(ctx context.Context, nodeID string, samples []Sample) (int, error) {
	if err := s.validate(samples); err != nil {
		return 0, err
	}
	n := len(samples)
	times := make([]time.Time, n)
	cpu, l1, l5, l15 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	used, avail, swap := make([]int64, n), make([]int64, n), make([]int64, n)
	disks, network := make([]string, n), make([]string, n)
	for i, x := range samples {
		times[i], cpu[i], l1[i], l5[i], l15[i] = x.Time.UTC(), x.CPUPercent, x.Load1, x.Load5, x.Load15
		used[i], avail[i], swap[i] = x.MemoryUsedBytes, x.MemoryAvailableBytes, x.SwapUsedBytes
		disks[i], network[i] = jsonList(x.Disks), jsonList(x.Network)
	}
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO node_stats (node_id, time, cpu_percent, memory_used_bytes, memory_available_bytes,
			swap_used_bytes, load1, load5, load15, disks, network)
		SELECT $1, t, c, u, a, s, l1, l5, l15, d::jsonb, nw::jsonb
		FROM unnest($2::timestamptz[], $3::float8[], $4::bigint[], $5::bigint[], $6::bigint[],
			$7::float8[], $8::float8[], $9::float8[], $10::text[], $11::text[]) AS x(t, c, u, a, s, l1, l5, l15, d, nw)
		ON CONFLICT (node_id, time) DO NOTHING`,
		nodeID, times, cpu, used, avail, swap, l1, l5, l15, disks, network)
	if err != nil {
		return 0, fmt.Errorf("store statistics of node %q: %w", nodeID, err)
	}
	return int(tag.RowsAffected()), nil
}

func (s *Store) validate(samples []Sample) error {
	if len(samples) > MaxSamplesPerReport {
		return &domain.ValidationError{Field: "samples", Reason: fmt.Sprintf("must hold at most %d samples; send the rest in another call", MaxSamplesPerReport)}
	}
	latest := s.clock().Add(maxClockSkew)
	for i, x := range samples {
		field := func(f string) string { return fmt.Sprintf("samples[%d].%s", i, f) }
		switch {
		case x.Time.IsZero():
			return &domain.ValidationError{Field: field("time"), Reason: "is required"}
		case x.Time.After(latest):
			return &domain.ValidationError{Field: field("time"), Reason: "is more than 5 minutes in the future; check the node's clock"}
		case bad(x.CPUPercent) || bad(x.Load1) || bad(x.Load5) || bad(x.Load15):
			return &domain.ValidationError{Field: field("cpuPercent"), Reason: "CPU and load figures must be finite and not negative"}
		case x.MemoryUsedBytes < 0 || x.MemoryAvailableBytes < 0 || x.SwapUsedBytes < 0:
			return &domain.ValidationError{Field: field("memoryUsedBytes"), Reason: "memory figures must not be negative"}
		}
	}
	return nil
}

func bad(f float64) bool { return f < 0 || math.IsNaN(f) || math.IsInf(f, 0) }

func jsonList[T any](v []T) string {
	if v == nil {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "[]"
	}
	return string(b)
}

// Query returns a node's samples in [from, to), oldest first. Zero from or
// to leave that end open. When more than maxPoints samples fall in the range
// it is cut into maxPoints equal buckets: each bucket's figures are the
// averages of its samples, at the time of its first sample, and its disks
// and network counters those of its last sample (counters are cumulative, so
// the last value is the meaningful one).
func (s *Store) Query(ctx context.Context, nodeID string, from, to time.Time, maxPoints int) ([]Sample, error) {
	if maxPoints <= 0 {
		maxPoints = DefaultPoints
	}
	if maxPoints > MaxPoints {
		return nil, &domain.ValidationError{Field: "maxPoints", Reason: fmt.Sprintf("must be at most %d", MaxPoints)}
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return nil, &domain.ValidationError{Field: "range", Reason: "its start must be before its end"}
	}
	var count int64
	var first, last *time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT count(*), min(time), max(time) FROM node_stats
		WHERE node_id = $1 AND ($2::timestamptz IS NULL OR time >= $2) AND ($3::timestamptz IS NULL OR time < $3)`,
		nodeID, nullTime(from), nullTime(to)).Scan(&count, &first, &last)
	if err != nil {
		return nil, fmt.Errorf("read statistics of node %q: %w", nodeID, err)
	}
	if count == 0 {
		return []Sample{}, nil
	}
	if from.IsZero() {
		from = *first
	}
	if to.IsZero() {
		to = last.Add(time.Microsecond)
	}
	var rows pgx.Rows
	if count <= int64(maxPoints) {
		rows, err = s.pool.Query(ctx, `
			SELECT time, cpu_percent, memory_used_bytes, memory_available_bytes, swap_used_bytes,
				load1, load5, load15, disks::text, network::text
			FROM node_stats WHERE node_id = $1 AND time >= $2 AND time < $3 ORDER BY time`, nodeID, from, to)
	} else {
		width := to.Sub(from).Seconds() / float64(maxPoints)
		rows, err = s.pool.Query(ctx, `
			SELECT min(time), avg(cpu_percent), avg(memory_used_bytes)::bigint, avg(memory_available_bytes)::bigint,
				avg(swap_used_bytes)::bigint, avg(load1), avg(load5), avg(load15),
				(array_agg(disks::text ORDER BY time DESC))[1], (array_agg(network::text ORDER BY time DESC))[1]
			FROM node_stats WHERE node_id = $1 AND time >= $2 AND time < $3
			GROUP BY floor(extract(epoch FROM time - $2::timestamptz) / $4)
			ORDER BY 1`, nodeID, from, to, width)
	}
	if err != nil {
		return nil, fmt.Errorf("read statistics of node %q: %w", nodeID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Sample, error) {
		var x Sample
		var disks, network string
		if err := r.Scan(&x.Time, &x.CPUPercent, &x.MemoryUsedBytes, &x.MemoryAvailableBytes, &x.SwapUsedBytes,
			&x.Load1, &x.Load5, &x.Load15, &disks, &network); err != nil {
			return x, err
		}
		x.Time = x.Time.UTC()
		if err := json.Unmarshal([]byte(disks), &x.Disks); err != nil {
			return x, fmt.Errorf("disks of sample at %s: %w", x.Time, err)
		}
		if err := json.Unmarshal([]byte(network), &x.Network); err != nil {
			return x, fmt.Errorf("network of sample at %s: %w", x.Time, err)
		}
		return x, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read statistics of node %q: %w", nodeID, err)
	}
	return out, nil
}

// Purge deletes samples stored before cutoff and returns how many went.
func (s *Store) Purge(ctx context.Context, cutoff time.Time) (int64, error) {
	return retention.PurgeOlder(ctx, s.pool, "node_stats", cutoff)
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
