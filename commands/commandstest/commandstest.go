// Package commandstest helps test command handlers against a real event store:
// a store on a fresh database, a clock the test moves, sequential ids, and
// looks into the events table.
package commandstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/jointoken"
	"cairn/eventstore"
	"cairn/internal/seal"
	"cairn/internal/testdb"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Registry is every domain event type, enrollment included.
func Registry() *domain.Registry {
	r := events.Registry()
	// The shared registry may already hold the enrollment events; registering
	// them twice would panic.
	if !slices.Contains(r.Types(), (jointoken.Issued{}).EventType()) {
		jointoken.RegisterEvents(r)
	}
	return r
}

// NewStore returns an event store on a fresh migrated database. The package
// under test must run testdb.Main from its TestMain.
func NewStore(t *testing.T) *eventstore.Store {
	t.Helper()
	s, _ := NewStoreWithPool(t)
	return s
}

// NewStoreWithPool is NewStore that also returns the pool the store uses,
// acting as the application role, for tests that need the database's other
// tables (read models, the bus's poison queue).
func NewStoreWithPool(t *testing.T) (*eventstore.Store, *pgxpool.Pool) {
	t.Helper()
	db := testdb.New(t)
	pool := db.AppPool(t)
	s := eventstore.New(pool, Registry(), eventstore.Options{})
	t.Cleanup(s.Close)
	return s, pool
}

// Clock is a clock the test sets and moves; safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// IDs returns a generator of ids prefix-1, prefix-2, ...; safe for concurrent use.
func IDs(prefix string) func() string {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("%s-%d", prefix, n.Add(1)) }
}

// Stream returns a stream's recorded events (none when it does not exist).
func Stream(t *testing.T, s *eventstore.Store, streamID string) []eventstore.RecordedEvent {
	t.Helper()
	evs, err := s.ReadStream(context.Background(), streamID, eventstore.ReadStreamOptions{})
	if err != nil {
		var nf *eventstore.StreamNotFoundError
		if !errors.As(err, &nf) {
			t.Fatalf("read %s: %v", streamID, err)
		}
	}
	return evs
}

// Events are the stored events f matches, oldest first.
func Events(t *testing.T, s *eventstore.Store, f eventstore.Filter) []eventstore.RecordedEvent {
	t.Helper()
	ctx := context.Background()
	last, err := s.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []eventstore.RecordedEvent
	err = s.ReadRange(ctx, eventstore.Start, last, 1000, f, func(evs []eventstore.RecordedEvent) error {
		out = append(out, evs...)
		return nil
	})
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	return out
}

// CountContaining counts the stored events whose payload or metadata holds
// needle anywhere: the way to prove a secret never reached the log.
func CountContaining(t *testing.T, s *eventstore.Store, needle string) int {
	t.Helper()
	var n int
	for _, e := range Events(t, s, eventstore.Filter{}) {
		if strings.Contains(string(e.Payload), needle) || strings.Contains(string(e.RawMetadata), needle) {
			n++
		}
	}
	return n
}

// CountEvents counts every stored event.
func CountEvents(t *testing.T, s *eventstore.Store) int {
	t.Helper()
	return count(t, s, eventstore.Filter{})
}

// CountCorrelated counts the stored events of commands with a correlation
// id: how a test running beside others sees only its own commands' events.
func CountCorrelated(t *testing.T, s *eventstore.Store, correlationID string) int {
	t.Helper()
	return count(t, s, eventstore.Filter{CorrelationID: correlationID})
}

func count(t *testing.T, s *eventstore.Store, f eventstore.Filter) int {
	t.Helper()
	n, err := s.Count(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// Descriptor is a small valid service descriptor, kv-store 1.0.0: a size
// with a default and a choice, a required sensitive password, and three
// resources (db, web[0], web[1]) of a plugin the tests need not provide.
const Descriptor = `apiVersion: cairn/v1
metadata:
  name: kv-store
  version: 1.0.0
  vendor: Example
variables:
  size:
    type: string
    default: small
    validation:
      enum: [small, large]
  password:
    type: string
    required: true
    sensitive: true
flavors:
  big:
    variables:
      size: large
resources:
  - name: db
    plugin: noop
    type: thing
    properties:
      size: ${var.size}
      password: ${var.password}
  - name: web
    plugin: noop
    type: thing
    count: 2
    dependsOn: [db]
`

// Sealer seals secrets with a fixed test key.
func Sealer() *seal.Sealer {
	s, err := seal.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	return s
}
