// Package eventstore is Cairn's event log in PostgreSQL: atomic multi-stream
// appends with expected versions and idempotent command ids, per-stream hash
// chains, gap-safe reads in global order, and subscriptions woken by
// LISTEN/NOTIFY.
package eventstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/domain"
)

// NotifyChannel is the LISTEN/NOTIFY channel appends signal on.
const NotifyChannel = "cairn_events"

// Options tune a Store. The zero value is usable.
type Options struct {
	// Clock stamps recorded events; default time.Now.
	Clock func() time.Time
	Log   zerolog.Logger
	// AppendWorkers is how many batch transactions may be in flight at once.
	AppendWorkers int
	// MaxBatch caps the commands grouped into one transaction.
	MaxBatch int
	// SideBatchAfter is how long a batch must have been in flight before
	// fewer than a handful of pending requests start one beside it rather
	// than wait to join the next (see appender); default 2 ms.
	SideBatchAfter time.Duration
	// GatherFor is how long, at most, a batch waits for the writers seen
	// recently to join it when none is in flight; default 1 ms.
	GatherFor time.Duration
	// PollInterval is how often subscribers look for events when no
	// notification arrives (a fallback: notifications normally wake them).
	PollInterval time.Duration
	// HeadCacheSize bounds the cache of stream heads used to chain hashes
	// without a read before each append.
	HeadCacheSize int
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.AppendWorkers <= 0 {
		o.AppendWorkers = 2
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 512
	}
	if o.SideBatchAfter <= 0 {
		o.SideBatchAfter = 2 * time.Millisecond
	}
	if o.GatherFor <= 0 {
		o.GatherFor = time.Millisecond
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.HeadCacheSize <= 0 {
		o.HeadCacheSize = 100_000
	}
}

// Store is the event log. It is safe for concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	registry *domain.Registry
	opts     Options
	appender *appender
	notifier *notifier
	tail     *tailReads
	recent   *recentEvents
	// floor is the highest horizon this store has seen (see horizon).
	floor atomic.Uint64

	closeOnce sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// New starts a store over pool. Events are encoded and decoded with registry.
// Close stops its background work.
func New(pool *pgxpool.Pool, registry *domain.Registry, opts Options) *Store {
	opts.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{pool: pool, registry: registry, opts: opts, cancel: cancel}
	s.appender = newAppender(s)
	s.notifier = newNotifier(pool, opts.Log)
	s.tail = newTailReads()
	s.recent = newRecentEvents(recentEventsKept, recentBytesKept)
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.notifier.run(ctx) }()
	go func() { defer s.wg.Done(); s.notifier.notifyLoop(ctx) }()
	return s
}

// Registry is the event type registry the store decodes with.
func (s *Store) Registry() *domain.Registry { return s.registry }

// Close stops background work. Appends in flight finish or fail with ErrClosed.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		s.appender.close()
		s.cancel()
		s.wg.Wait()
	})
}

// Decode upcasts a recorded event's payload and returns its Go value.
func (s *Store) Decode(e RecordedEvent) (domain.Event, error) {
	return s.registry.Decode(e.Type, e.SchemaVersion, e.Payload)
}
