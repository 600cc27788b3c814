package eventstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// notifyInterval is the least time between two NOTIFYs of one store. Every
// NOTIFY wakes every listening session of every replica and takes a lock
// all committing notifiers share, so under a flood of small commits one per
// burst would cost more than the appends themselves; other processes learn
// of new events at most this much later (this process's own subscribers
// are woken at once).
const notifyInterval = 10 * time.Millisecond

// notifier holds one LISTEN connection and wakes every subscriber of this
// process when an append commits. While the connection is down subscribers
// fall back to polling.
type notifier struct {
	pool *pgxpool.Pool
	log  zerolog.Logger
	// self is the payload of this store's NOTIFYs, so that its own listener
	// skips what its subscribers were already told.
	self string
	// kick asks notifyLoop to tell other processes that events committed.
	kick chan struct{}

	// gen counts the wake-ups given (and the subscriptions that looked
	// without one): a read that began at generation g sees every commit
	// woken for up to g, and reads are shared only within a generation.
	gen atomic.Uint64

	mu      sync.Mutex
	waiters map[chan struct{}]struct{}
}

func newNotifier(pool *pgxpool.Pool, log zerolog.Logger) *notifier {
	return &notifier{pool: pool, log: log, self: randomToken(), kick: make(chan struct{}, 1), waiters: map[chan struct{}]struct{}{}}
}

func randomToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return short)
	return hex.EncodeToString(b)
}

// committed wakes this process's subscribers at once and has other
// processes notified. Notifications are coalesced: one NOTIFY may stand for
// many commits, which is all a wake-up needs.
func (n *notifier) committed() {
	n.broadcast()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// notifyLoop sends one NOTIFY per burst of commits, outside any append
// transaction, and at most one per notifyInterval.
func (n *notifier) notifyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		if _, err := n.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, n.self); err != nil && ctx.Err() == nil {
			// Other processes fall back to polling until the next notify.
			n.log.Warn().Err(err).Msg("could not notify other processes of new events")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(notifyInterval):
		}
	}
}

// register returns a channel that receives a wake-up (coalesced) after each
// notification, and a function to unregister it.
func (n *notifier) register() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	n.waiters[ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.waiters, ch)
		n.mu.Unlock()
	}
}

// generation is gen now.
func (n *notifier) generation() uint64 { return n.gen.Load() }

// advance starts a generation: reads shared before it are not joined
// after it.
func (n *notifier) advance() { n.gen.Add(1) }

func (n *notifier) broadcast() {
	n.advance()
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (n *notifier) run(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := n.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		n.log.Warn().Err(err).Dur("retry_in", backoff).Msg("event notifications lost; subscribers poll until they are back")
		// Events may have committed while we were not listening.
		n.broadcast()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (n *notifier) listen(ctx context.Context) error {
	pc, err := n.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection has session state (LISTEN): never hand it back to the pool.
	conn := pc.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{NotifyChannel}.Sanitize()); err != nil {
		return err
	}
	// Anything that committed before LISTEN took effect must be read too.
	n.broadcast()
	for {
		note, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if note.Payload != n.self {
			n.broadcast()
		}
	}
}
