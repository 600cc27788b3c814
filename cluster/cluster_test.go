package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/commands/nodes"
	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// A replica that paused past its lease (SIGSTOP, a long GC, a lost network)
// finds, when it resumes, that another took over, and its decisions made
// under the old epoch append nothing; the new owner's do.
func TestLeaseFencesADeposedOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	pool := db.AppPool(t)
	store := eventstore.New(pool, events.Registry(), eventstore.Options{})
	t.Cleanup(store.Close)
	// Each try gives up after RenewEvery: at a tenth of a second the first
	// claim, connecting on a loaded machine, did.
	opts := LeaseOptions{TTL: 1500 * time.Millisecond, RenewEvery: 500 * time.Millisecond, Log: zerolog.Nop()}
	a, b := NewLease(pool, "dispatch", "replica-a", opts), NewLease(pool, "dispatch", "replica-b", opts)

	if err := a.tryOnce(ctx); err != nil || !a.Owns() || a.Epoch() != 1 {
		t.Fatalf("first claim: owns %v, epoch %d, %v", a.Owns(), a.Epoch(), err)
	}
	if err := b.tryOnce(ctx); err != nil || b.Owns() {
		t.Fatalf("a second replica took a held lease: owns %v, %v", b.Owns(), err)
	}
	fenceA := a.Fence()
	enroll := func(ctx context.Context, host string) (commands.Outcome, error) {
		return nodes.NewHandlers(store, time.Now, func() string { return host }).Enroll(ctx, commands.Meta{Actor: "dispatcher"}, nodes.Enroll{Hostname: host})
	}
	if _, err := enroll(eventstore.WithFence(ctx, fenceA), "while-a-owns"); err != nil {
		t.Fatalf("the owner's fenced append: %v", err)
	}

	// A pauses: no renewal for longer than the lease lives.
	time.Sleep(opts.TTL + 100*time.Millisecond)
	if a.Owns() {
		t.Fatal("a replica whose renewal is overdue still says it owns the work")
	}
	if err := b.tryOnce(ctx); err != nil || !b.Owns() || b.Epoch() != 2 {
		t.Fatalf("takeover after expiry: owns %v, epoch %d, %v", b.Owns(), b.Epoch(), err)
	}

	// A resumes and acts on what it decided before the pause.
	_, err := enroll(eventstore.WithFence(ctx, fenceA), "stale-decision")
	var fenced *eventstore.FencedError
	if !errors.As(err, &fenced) {
		t.Fatalf("the deposed owner's append: got %v, want a FencedError", err)
	}
	if v, _ := store.StreamVersion(ctx, "node-stale-decision"); v != 0 {
		t.Fatalf("the deposed owner appended %d events", v)
	}
	if _, err := enroll(eventstore.WithFence(ctx, b.Fence()), "while-b-owns"); err != nil {
		t.Fatalf("the new owner's fenced append: %v", err)
	}
	if err := a.tryOnce(ctx); err != nil || a.Owns() {
		t.Fatalf("the deposed replica took the lease back from a live owner: owns %v, %v", a.Owns(), err)
	}

	// A clean stop hands over at once, under a new epoch.
	b.release()
	if err := a.tryOnce(ctx); err != nil || !a.Owns() || a.Epoch() != 3 {
		t.Fatalf("claim after release: owns %v, epoch %d, %v", a.Owns(), a.Epoch(), err)
	}
	if a.Handovers() != 2 {
		t.Fatalf("replica a gained the lease %d times, want 2", a.Handovers())
	}
}

// An owner renews its lease while its own appends are in flight (each
// holds the lease row until it commits), however busy it is; a takeover
// after it stopped renewing waits for them.
func TestLeaseRenewsWhileItsAppendsAreInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	pool := db.AppPool(t)
	opts := LeaseOptions{TTL: 1500 * time.Millisecond, RenewEvery: 500 * time.Millisecond, Log: zerolog.Nop()}
	a, b := NewLease(pool, "dispatch", "replica-a", opts), NewLease(pool, "dispatch", "replica-b", opts)
	if err := a.tryOnce(ctx); err != nil || !a.Owns() {
		t.Fatalf("first claim: owns %v, %v", a.Owns(), err)
	}

	inFlight, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inFlight.Rollback(context.Background()) })
	if err := a.Fence().Check(ctx, inFlight); err != nil {
		t.Fatalf("the owner's fence: %v", err)
	}
	// Each try gives up after RenewEvery: one that waited for the append
	// would fail.
	for i := range 3 {
		if err := a.tryOnce(ctx); err != nil || !a.Owns() || a.Epoch() != 1 {
			t.Fatalf("renewal %d with an append in flight: owns %v, epoch %d, %v", i+1, a.Owns(), a.Epoch(), err)
		}
	}

	// A stops renewing, its append still in flight: its lease expires, but
	// B may not act before the append is in the log.
	time.Sleep(opts.TTL + 100*time.Millisecond)
	if err := b.tryOnce(ctx); b.Owns() {
		t.Fatalf("replica b took over while an append under epoch 1 was in flight (%v)", err)
	}
	if err := inFlight.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.tryOnce(ctx); err != nil || !b.Owns() || b.Epoch() != 2 {
		t.Fatalf("takeover once the append committed: owns %v, epoch %d, %v", b.Owns(), b.Epoch(), err)
	}
	if err := a.tryOnce(ctx); err != nil || a.Owns() {
		t.Fatalf("the deposed replica renewed a lease another holds: owns %v, %v", a.Owns(), err)
	}
}

func TestRegistryAndPresence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t).AppPool(t)
	r1 := NewRegistry(pool, "r1", "10.0.0.1:8080", "v1", "key-1", zerolog.Nop())
	r2 := NewRegistry(pool, "r2", "10.0.0.2:8080", "v1", "key-1", zerolog.Nop())
	for _, r := range []*Registry{r1, r2} {
		if err := r.announce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lease := NewLease(pool, "dispatch", "r2", LeaseOptions{Log: zerolog.Nop()})
	if err := lease.tryOnce(ctx); err != nil {
		t.Fatal(err)
	}
	reps, now, err := r1.Replicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || reps[0].ID != "r1" || reps[1].ID != "r2" || !slices.Equal(reps[1].Owns, []string{"dispatch"}) || len(reps[0].Owns) != 0 {
		t.Fatalf("replicas %+v", reps)
	}
	if reps[0].Gone(now, 6*time.Second) || !reps[0].Gone(now.Add(time.Minute), 6*time.Second) {
		t.Fatal("a replica announced just now is gone, or one silent for a minute is not")
	}
	// A replica with another secrets key may not join: what one sealed,
	// the other could not open.
	if err := r2.CheckKey(ctx); err != nil {
		t.Fatalf("a replica with the cluster's key: %v", err)
	}
	var mismatch *KeyMismatchError
	if err := NewRegistry(pool, "r3", "10.0.0.3:8080", "v1", "key-2", zerolog.Nop()).CheckKey(ctx); !errors.As(err, &mismatch) {
		t.Fatalf("a replica with another key: got %v, want a KeyMismatchError", err)
	}

	p1, p2 := NewPresence(pool, "r1"), NewPresence(pool, "r2")
	if err := p1.Publish(ctx, []string{"n1", "n2"}); err != nil {
		t.Fatal(err)
	}
	if err := p2.Publish(ctx, []string{"n3"}); err != nil {
		t.Fatal(err)
	}
	seen, err := p2.Elsewhere(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := seen["n1"]; !ok || len(seen) != 2 {
		t.Fatalf("r2 sees elsewhere %v, want n1 and n2", seen)
	}
	// An agent that moves to r2 is no longer elsewhere for it.
	if err := p2.Publish(ctx, []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	if seen, _ := p2.Elsewhere(ctx, time.Minute); len(seen) != 1 {
		t.Fatalf("after n1 moved to r2, r2 sees elsewhere %v", seen)
	}
}

// A replica refreshes the presence of every agent it holds every few
// seconds: each refresh must stay on its row's page (a heap-only update),
// or 10,000 agents add 10,000 entries to every index of the table, and
// 10,000 dead rows, each time.
func TestPresenceRefreshesInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t).AppPool(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	nodes := make([]string, 2000)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%04d", i)
	}
	if err := NewPresence(tx, "r1").Publish(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	// Refreshed by the same replica, and half of them moved to another.
	if err := NewPresence(tx, "r1").Publish(ctx, nodes[:1000]); err != nil {
		t.Fatal(err)
	}
	if err := NewPresence(tx, "r2").Publish(ctx, nodes[1000:]); err != nil {
		t.Fatal(err)
	}
	var updated, inPlace int64
	if err := tx.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables
		WHERE relname = 'agent_presence'`).Scan(&updated, &inPlace); err != nil {
		t.Fatal(err)
	}
	if updated != int64(len(nodes)) || inPlace != updated {
		t.Fatalf("%d presence rows refreshed, %d of them in place; want all %d in place", updated, inPlace, len(nodes))
	}
}
