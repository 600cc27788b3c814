package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/commands/commandstest"
	"cairn/commands/nodes"
	"cairn/domain"
	"cairn/domain/placement"
	"cairn/eventstore"
	"cairn/internal/testdb"
	"cairn/scheduler"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const gib = 1 << 30

type fixture struct {
	t     *testing.T
	store *eventstore.Store
	nodes *nodes.Handlers
	sched *scheduler.Scheduler
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store := commandstest.NewStore(t)
	f := &fixture{t: t, store: store, nodes: nodes.NewHandlers(store, time.Now, commandstest.IDs("n"))}
	return f
}

func (f *fixture) start(opts ...scheduler.Option) {
	f.t.Helper()
	f.sched = scheduler.New(f.store, time.Now, zerolog.Nop(), opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.sched.Run(ctx) }()
	f.t.Cleanup(func() { cancel(); <-done })
	select {
	case <-f.sched.Ready():
	case <-time.After(10 * time.Second):
		f.t.Fatal("the scheduler never read the log")
	}
}

// enroll makes an online node through the real commands, with facts.
func (f *fixture) enroll(host, location string, cpus int, mem int64, labels map[string]string) string {
	f.t.Helper()
	return commandstest.EnrollOnline(f.t, f.nodes, commandstest.OnlineNode{Hostname: host, LocationID: location, Labels: labels,
		CPUs: cpus, MemoryBytes: uint64(mem)})
}

// place reserves and appends as the orchestrator does, with the
// resource's stream made first.
func (f *fixture) place(ctx context.Context, resourceID string, req placement.Resources) (string, error) {
	r := scheduler.Request{Ask: placement.Ask{ResourceID: resourceID, Request: req}}
	// Two schedulers deciding at once (a race no owner makes alone) may
	// conflict many times over before one gives way.
	for range 100 {
		dec, err := f.sched.Reserve(ctx, r)
		if err != nil {
			return "", err
		}
		_, err = f.store.Append(ctx, eventstore.AppendRequest{Streams: []eventstore.StreamAppend{
			{StreamID: domain.StreamID(domain.ResourceStream, resourceID), StreamType: domain.ResourceStream, Expected: eventstore.NoStream, Events: dec.Resource},
			dec.Node,
		}})
		dec.Done(ctx, err)
		var conflict *eventstore.VersionConflictError
		if errors.As(err, &conflict) && conflict.StreamID == dec.Node.StreamID {
			continue
		}
		return dec.NodeID, err
	}
	return "", errors.New("no attempt succeeded")
}

func TestPlacesOnCapacityAndExplainsFailures(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	small := f.enroll("small-1", "", 2, 4*gib, nil)
	big := f.enroll("big-1", "", 16, 64*gib, nil)
	f.start()
	ctx := context.Background()

	// Bin-packing: the small node takes what fits it first.
	got, err := f.place(ctx, "r1", placement.Resources{CPUMillis: 1000, MemoryBytes: 2 * gib})
	if err != nil || got != small {
		t.Fatalf("first placement on %s (%v), want the small node %s", got, err, small)
	}
	// It has 2 GiB left: 3 GiB goes to the big one.
	if got, err = f.place(ctx, "r2", placement.Resources{MemoryBytes: 3 * gib}); err != nil || got != big {
		t.Fatalf("second placement on %s (%v), want %s", got, err, big)
	}
	_, err = f.place(ctx, "r3", placement.Resources{MemoryBytes: 100 * gib})
	var nf *placement.NoFitError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "0 of 2 nodes fit: 2 lacking 100 GiB of memory") {
		t.Fatalf("an oversized request: %v", err)
	}

	// The allocations are on the log: a scheduler started afresh sees them.
	again := scheduler.New(f.store, time.Now, zerolog.Nop())
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = again.Run(rctx) }()
	cands, err := again.Candidates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		want := placement.Resources{CPUMillis: 1000, MemoryBytes: 2 * gib}
		if c.ID == big {
			want = placement.Resources{MemoryBytes: 3 * gib}
		}
		if c.Allocated != want {
			t.Errorf("%s: allocated %v, want %v", c.Name, c.Allocated, want)
		}
	}

	// A drained node takes nothing, and says so.
	if _, err := f.nodes.Drain(ctx, commands.Meta{Actor: "test"}, nodes.Drain{NodeID: big, Reason: "maintenance"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err = f.place(ctx, "r4", placement.Resources{MemoryBytes: 3 * gib})
		if err != nil && strings.Contains(err.Error(), "1 draining or drained") || time.Now().After(deadline) {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "1 draining or drained, 1 lacking 3 GiB of memory") {
		t.Fatalf("with the big node drained: %v", err)
	}
}

// A node whose agent has connected but not yet reported its facts is
// waited for: a placement made in that moment lands once the facts come,
// and one that waits in vain says why.
func TestWaitsForANodesFirstFacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := placement.Resources{CPUMillis: 500, MemoryBytes: gib}
	t.Run("the facts come", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		fresh := commandstest.EnrollOnline(t, f.nodes, commandstest.OnlineNode{Hostname: "fresh-1", Unreported: true})
		f.start(scheduler.WithFactsWait(time.Minute))
		placed := make(chan error, 1)
		var got string
		go func() {
			var err error
			got, err = f.place(ctx, "r1", req)
			placed <- err
		}()
		select {
		case err := <-placed:
			t.Fatalf("placed on %q before the node reported what it offers (%v)", got, err)
		case <-time.After(300 * time.Millisecond):
		}
		commandstest.ReportFacts(t, f.nodes, fresh, 4, 8*gib)
		select {
		case err := <-placed:
			if err != nil || got != fresh {
				t.Fatalf("placed on %q (%v), want the node that reported, %s", got, err, fresh)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("still waiting 10 s after the node reported its facts")
		}
	})
	t.Run("they never do", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		commandstest.EnrollOnline(t, f.nodes, commandstest.OnlineNode{Hostname: "mute-1", Unreported: true})
		f.enroll("small-1", "", 1, gib/2, nil)
		const wait = 300 * time.Millisecond
		f.start(scheduler.WithFactsWait(wait))
		began := time.Now()
		_, err := f.place(ctx, "r1", req)
		var nf *placement.NoFitError
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), "0 of 2 nodes fit: 1 without reported facts, 1 lacking 1 GiB of memory") {
			t.Fatalf("with one node mute and one too small: %v", err)
		}
		if took := time.Since(began); took < wait {
			t.Errorf("said no after %s, before the %s wait for the facts was over", took, wait)
		}
	})
}

// Many deployments race for the last slots of a node: exactly as many as
// fit get one, through optimistic concurrency on the node's stream, and
// the rest are told why.
func TestRaceForTheLastSlot(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	only := f.enroll("only-1", "", 4, 8*gib, nil)
	f.start()
	ctx := context.Background()
	// A second scheduler (a deposed owner, say) decides on the same node.
	other := scheduler.New(f.store, time.Now, zerolog.Nop())
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = other.Run(octx) }()
	<-other.Ready()

	var wg sync.WaitGroup
	var mu sync.Mutex
	placed, refused := 0, 0
	for i := range 20 {
		wg.Go(func() {
			s := f.sched
			if i%2 == 1 {
				s = other
			}
			g := &fixture{t: t, store: f.store, sched: s}
			n, err := g.place(ctx, fmt.Sprintf("race-%d", i), placement.Resources{MemoryBytes: gib})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && n == only:
				placed++
			case errors.Is(err, placement.ErrNoFit):
				refused++
			default:
				t.Errorf("race-%d: %s, %v", i, n, err)
			}
		})
	}
	wg.Wait()
	if placed != 8 || refused != 12 {
		t.Fatalf("%d placed and %d refused, want 8 and 12 (8 GiB in 1 GiB slots)", placed, refused)
	}
	n, err := f.store.Count(ctx, eventstore.Filter{EventTypes: []string{"node.allocated"}})
	if err != nil || n != 8 {
		t.Fatalf("%d allocations recorded (%v), want 8", n, err)
	}
}
