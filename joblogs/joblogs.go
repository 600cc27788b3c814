// Package joblogs keeps the output of jobs: chunks an agent streams while a
// job runs, in their own table outside the event log (output is a
// measurement, not a state change), paged, tailed live and purged after
// their retention period.
package joblogs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"cairn/domain"
	"cairn/internal/retention"
)

// Stream names where a chunk of job output came from.
type Stream string

const (
	StreamStdout Stream = "stdout"
	StreamStderr Stream = "stderr"
	// StreamSystem holds lines the agent adds itself (a kill, a timeout).
	StreamSystem Stream = "system"
)

// DefaultRetention is how long job output is kept unless configured.
const DefaultRetention = 30 * 24 * time.Hour

// Limits of one appendJobLog call.
const (
	MaxChunksPerAppend = 1000
	MaxChunkBytes      = 64 << 10
	// DefaultPage is the page size of JobLog when the caller names none.
	DefaultPage = 500
	MaxPage     = 5000
)

// Chunk is a piece of a job's output. Seq numbers a job's chunks from 1
// without gaps.
type Chunk struct {
	JobID  string
	Seq    int64
	Stream Stream
	Data   string
	Time   time.Time
}

// JobEnds tells the log whether a job has ended for good, so a live tail
// knows when to complete.
type JobEnds interface {
	// JobEnded reports whether the job is in a terminal state; a job that
	// does not exist is a *domain.NotFoundError.
	JobEnded(ctx context.Context, jobID string) (bool, error)
}

// Store stores job output in job_logs, outside the event log: output is a
// measurement, not a state change. Chunks are deduplicated by (job, seq), so
// an agent that resends after a lost reply stores nothing twice. It is safe
// for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	ends    JobEnds
	signals *signals
	// idle is how long a live tail waits for a wake-up before it looks
	// again anyway (chunks another process stored wake nobody here).
	idle time.Duration
}

// New returns the job log store over pool; ends says when a tail is over.
func New(pool *pgxpool.Pool, ends JobEnds) *Store {
	return &Store{pool: pool, ends: ends, signals: newSignals(), idle: time.Second}
}

// AppendResult is what an append stored.
type AppendResult struct {
	// Accepted counts the chunks stored by this call; resent ones are not.
	Accepted int
	// LastSeq is the highest seq stored for the attempt, numbered like the
	// chunks the agent sent.
	LastSeq int64
}

// Append stores chunks of one attempt of a job's output. The agent numbers
// each attempt's chunks from 1; attempt n's chunk s is stored as seq
// base(n)+s, base(n) being the job's highest seq when the attempt's first
// chunk arrived, so a retried job's log continues without gaps. Chunks whose
// seq is stored already are ignored.
func (l *Store) Append(ctx context.Context, jobID string, attempt int, chunks []Chunk) (AppendResult, error) {
	if err := validateChunks(chunks); err != nil {
		return AppendResult{}, err
	}
	base, err := l.base(ctx, jobID, attempt)
	if err != nil {
		return AppendResult{}, err
	}
	seqs := make([]int64, len(chunks))
	streams := make([]string, len(chunks))
	data := make([]string, len(chunks))
	times := make([]time.Time, len(chunks))
	for i, c := range chunks {
		seqs[i], streams[i], data[i], times[i] = base+c.Seq, string(c.Stream), c.Data, c.Time.UTC()
	}
	// The outer SELECT does not see the CTE's rows (one snapshot), so the
	// highest seq is the greater of what was there and what was added.
	var res AppendResult
	var last *int64
	err = l.pool.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO job_logs (job_id, seq, stream, data, time)
			SELECT $1, s, st, d, t FROM unnest($2::bigint[], $3::text[], $4::text[], $5::timestamptz[]) AS u(s, st, d, t)
			ON CONFLICT (job_id, seq) DO NOTHING
			RETURNING seq)
		SELECT (SELECT count(*) FROM ins),
		       greatest((SELECT max(seq) FROM ins), (SELECT max(seq) FROM job_logs WHERE job_id = $1))`,
		jobID, seqs, streams, data, times).Scan(&res.Accepted, &last)
	if err != nil {
		return AppendResult{}, fmt.Errorf("store output of job %q: %w", jobID, err)
	}
	if last != nil && *last > base {
		res.LastSeq = *last - base
	}
	if res.Accepted > 0 {
		l.signals.fire(jobID)
	}
	return res, nil
}

// base returns the offset of an attempt's chunks, fixing it at its first
// append.
func (l *Store) base(ctx context.Context, jobID string, attempt int) (int64, error) {
	if attempt <= 1 {
		return 0, nil
	}
	var base int64
	err := l.pool.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO job_log_attempts (job_id, attempt, base)
			SELECT $1, $2, coalesce(max(seq), 0) FROM job_logs WHERE job_id = $1
			ON CONFLICT (job_id, attempt) DO NOTHING
			RETURNING base)
		SELECT base FROM ins UNION ALL SELECT base FROM job_log_attempts WHERE job_id = $1 AND attempt = $2`,
		jobID, attempt).Scan(&base)
	if err != nil {
		return 0, fmt.Errorf("number output of job %q attempt %d: %w", jobID, attempt, err)
	}
	return base, nil
}

func validateChunks(chunks []Chunk) error {
	if len(chunks) == 0 {
		return &domain.ValidationError{Field: "chunks", Reason: "must hold at least one chunk"}
	}
	if len(chunks) > MaxChunksPerAppend {
		return &domain.ValidationError{Field: "chunks", Reason: fmt.Sprintf("must hold at most %d chunks; send the rest in another call", MaxChunksPerAppend)}
	}
	for i, c := range chunks {
		field := func(f string) string { return fmt.Sprintf("chunks[%d].%s", i, f) }
		switch {
		case c.Seq < 1:
			return &domain.ValidationError{Field: field("seq"), Reason: "must be 1 or more: a job's chunks are numbered from 1"}
		case c.Stream != StreamStdout && c.Stream != StreamStderr && c.Stream != StreamSystem:
			return &domain.ValidationError{Field: field("stream"), Reason: fmt.Sprintf("%q must be stdout, stderr or system", c.Stream)}
		case len(c.Data) > MaxChunkBytes:
			return &domain.ValidationError{Field: field("data"), Reason: fmt.Sprintf("must be at most %d bytes; split the chunk", MaxChunkBytes)}
		case !utf8.ValidString(c.Data) || strings.ContainsRune(c.Data, 0):
			return &domain.ValidationError{Field: field("data"), Reason: "must be UTF-8 without NUL characters"}
		case c.Time.IsZero():
			return &domain.ValidationError{Field: field("time"), Reason: "is required"}
		}
	}
	return nil
}

// Page returns up to limit chunks of a job after seq afterSeq, in order, and
// whether more follow.
func (l *Store) Page(ctx context.Context, jobID string, afterSeq int64, limit int) ([]Chunk, bool, error) {
	if limit <= 0 {
		limit = DefaultPage
	}
	if limit > MaxPage {
		return nil, false, &domain.ValidationError{Field: "first", Reason: fmt.Sprintf("must be at most %d", MaxPage)}
	}
	rows, err := l.pool.Query(ctx, `
		SELECT seq, stream, data, time FROM job_logs
		WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, jobID, afterSeq, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("read output of job %q: %w", jobID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Chunk, error) {
		c := Chunk{JobID: jobID}
		err := r.Scan(&c.Seq, &c.Stream, &c.Data, &c.Time)
		c.Time = c.Time.UTC()
		return c, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("read output of job %q: %w", jobID, err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// Tail sends the job's chunks after afterSeq, in order, as they arrive, and
// closes the channel once the job has ended and everything stored was sent,
// or when ctx ends. Err on the returned tail says why it stopped early.
func (l *Store) Tail(ctx context.Context, jobID string, afterSeq int64) (*Tail, error) {
	if _, err := l.ends.JobEnded(ctx, jobID); err != nil {
		return nil, err
	}
	ch := make(chan Chunk, 64)
	t := &Tail{C: ch, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer close(ch)
		t.err = l.tail(ctx, jobID, afterSeq, ch)
	}()
	return t, nil
}

// Tail is a running Tail.
type Tail struct {
	// C delivers the chunks; it is closed at the end.
	C    <-chan Chunk
	done chan struct{}
	err  error
}

// Err says why the tail stopped: nil once the job ended and its output was
// all sent, else the context's or a read's error. Call it after C closed.
func (t *Tail) Err() error {
	<-t.done
	return t.err
}

func (l *Store) tail(ctx context.Context, jobID string, after int64, out chan<- Chunk) error {
	ended := false
	for {
		// Take the wake-up before reading, so an append between the read
		// and the wait is not missed.
		wake := l.signals.wait(jobID)
		page, more, err := l.Page(ctx, jobID, after, DefaultPage)
		if err != nil {
			return err
		}
		for _, c := range page {
			select {
			case out <- c:
				after = c.Seq
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if more {
			continue
		}
		if ended {
			// The job had ended before this read: nothing more will come.
			return nil
		}
		if ended, err = l.ends.JobEnded(ctx, jobID); err != nil {
			return err
		}
		if ended {
			continue // one more read catches chunks stored just before the end
		}
		timer := time.NewTimer(l.idle)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// JobChanged wakes the tails of a job, so they notice that it ended.
func (l *Store) JobChanged(jobID string) { l.signals.fire(jobID) }

// Purge deletes chunks stored before cutoff, in batches so that no single
// statement holds locks for long, and returns how many went.
func (l *Store) Purge(ctx context.Context, cutoff time.Time) (int64, error) {
	n, err := retention.PurgeOlder(ctx, l.pool, "job_logs", cutoff)
	if err != nil {
		return n, err
	}
	// Attempts whose output is all gone need no offset any more.
	if _, err := l.pool.Exec(ctx, `DELETE FROM job_log_attempts a
		WHERE NOT EXISTS (SELECT 1 FROM job_logs l WHERE l.job_id = a.job_id)`); err != nil {
		return n, fmt.Errorf("purge job_log_attempts: %w", err)
	}
	return n, nil
}

// signals wakes waiters per key: wait returns a channel that fire closes.
type signals struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func newSignals() *signals { return &signals{m: map[string]chan struct{}{}} }

func (s *signals) wait(key string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.m[key]
	if !ok {
		ch = make(chan struct{})
		s.m[key] = ch
	}
	return ch
}

func (s *signals) fire(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.m[key]; ok {
		close(ch)
		delete(s.m, key)
	}
}
