package eventbus_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/domain"
	"cairn/eventbus"
	"cairn/eventstore"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type ticked struct {
	N int `json:"n"`
}

func (ticked) EventType() string { return "test.ticked" }

// store is an event store and the pool it appends through (the bus parks
// poisoned messages in the same database).
type store struct {
	*eventstore.Store
	pool *pgxpool.Pool
}

func newStore(t *testing.T) (store, testdb.DB) {
	t.Helper()
	r := domain.NewRegistry()
	domain.Register[ticked](r, 1)
	db := testdb.New(t)
	pool := db.AppPool(t)
	s := eventstore.New(pool, r, eventstore.Options{})
	t.Cleanup(s.Close)
	return store{Store: s, pool: pool}, db
}

func appendTicks(t *testing.T, s store, from, to int, correlation string) {
	t.Helper()
	for i := from; i < to; i++ {
		_, err := s.Append(context.Background(), eventstore.AppendRequest{
			Metadata: eventstore.Metadata{CorrelationID: correlation, Actor: "tester"},
			Streams: []eventstore.StreamAppend{{StreamID: "clock", StreamType: "clock", Expected: eventstore.AnyVersion,
				Events: []domain.Event{ticked{N: i}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// run starts a router with one handler and returns a stop function.
func run(t *testing.T, s store, group string, h func(context.Context, *eventstore.RecordedEvent) error) func() {
	t.Helper()
	router, err := eventbus.NewRouter(zerolog.Nop(), s.pool, eventbus.RouterOptions{MaxRetries: 2, InitialInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sub := eventbus.NewSubscriber(s, eventbus.SubscriberOptions{})
	router.AddConsumer(group, group, sub, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = router.Run(ctx) }()
	<-router.Running()
	return func() {
		cancel()
		<-done
		_ = sub.Close()
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHandlersGetEventsInOrderAndResumeFromCheckpoint(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	appendTicks(t, s, 0, 50, "corr-1")

	var mu sync.Mutex
	var got []int
	var correlations []string
	handler := func(ctx context.Context, ev *eventstore.RecordedEvent) error {
		d, err := s.Decode(*ev)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, d.(ticked).N)
		return nil
	}
	stop := run(t, s, "counter", func(ctx context.Context, ev *eventstore.RecordedEvent) error {
		return handler(ctx, ev)
	})
	// Watch correlation ids through a second router reading the same log.
	stop2 := run(t, s, "correlations", func(ctx context.Context, ev *eventstore.RecordedEvent) error {
		mu.Lock()
		defer mu.Unlock()
		correlations = append(correlations, ev.Metadata.CorrelationID)
		return nil
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	counted := func() int { mu.Lock(); defer mu.Unlock(); return len(correlations) }
	waitFor(t, "first 50 events", func() bool { return count() == 50 })
	appendTicks(t, s, 50, 60, "corr-2")
	waitFor(t, "live events", func() bool { return count() == 60 && counted() == 60 })
	stop()
	stop2()
	for i, n := range got {
		if n != i {
			t.Fatalf("event %d delivered as %d: out of order", i, n)
		}
	}
	if correlations[0] != "corr-1" || correlations[59] != "corr-2" {
		t.Fatalf("correlation ids not carried: %v ... %v", correlations[0], correlations[59])
	}

	// A restart resumes after the checkpoint: nothing is redelivered but,
	// delivery being at least once, the last event, which the handler may
	// have been done with before its ack reached the subscriber when the
	// router stopped (more likely the slower the machine).
	appendTicks(t, s, 60, 65, "corr-3")
	got = nil
	stop = run(t, s, "counter", handler)
	waitFor(t, "events after restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(got, 64)
	})
	time.Sleep(100 * time.Millisecond) // room for anything delivered twice
	stop()
	after := got
	if len(after) > 0 && after[0] == 59 {
		after = after[1:]
	}
	if !slices.Equal(after, []int{60, 61, 62, 63, 64}) {
		t.Fatalf("after restart got %v, want 60..64", got)
	}
}

func TestPoisonEventIsParkedAndOthersContinue(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	appendTicks(t, s, 0, 10, "")
	var mu sync.Mutex
	attempts := map[int]int{}
	var done []int
	stop := run(t, s, "picky", func(ctx context.Context, ev *eventstore.RecordedEvent) error {
		d, _ := s.Decode(*ev)
		n := d.(ticked).N
		mu.Lock()
		defer mu.Unlock()
		attempts[n]++
		switch n {
		case 3:
			return errors.New("tick 3 cannot be handled")
		case 6:
			panic("tick 6 crashes the handler")
		}
		done = append(done, n)
		return nil
	})
	waitFor(t, "the other events", func() bool { mu.Lock(); defer mu.Unlock(); return len(done) == 8 })
	stop()
	if attempts[3] != 3 || attempts[6] != 3 {
		t.Fatalf("want 1 try + 2 retries for the bad events, got %v", attempts)
	}
	parked, err := eventbus.ListParked(context.Background(), s.pool, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(parked) != 2 {
		t.Fatalf("want 2 parked messages, got %+v", parked)
	}
	reasons := parked[0].Reason + " | " + parked[1].Reason
	for _, want := range []string{"tick 3 cannot be handled", "tick 6 crashes the handler"} {
		if !strings.Contains(reasons, want) {
			t.Errorf("parked reasons %q do not mention %q", reasons, want)
		}
	}
	if parked[0].Handler != "picky" || parked[0].Metadata[eventbus.MetaEventType] != "test.ticked" {
		t.Errorf("parked message lacks its handler or event type: %+v", parked[0])
	}
}

var _ message.Subscriber = (*eventbus.Subscriber)(nil)

// TestShutdownDuringRetriesParksNothing: a router stopped while a failed
// event waits for its retry does not park it; the next run delivers it
// again, and not the events before it, which the handler had finished.
func TestShutdownDuringRetriesParksNothing(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	appendTicks(t, s, 0, 10, "")
	router, err := eventbus.NewRouter(zerolog.Nop(), s.pool, eventbus.RouterOptions{MaxRetries: 1, InitialInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sub := eventbus.NewSubscriber(s, eventbus.SubscriberOptions{})
	failed := make(chan struct{}, 1)
	router.AddConsumer("stopping", "stopping", sub, func(_ context.Context, ev *eventstore.RecordedEvent) error {
		if d, _ := s.Decode(*ev); d.(ticked).N < 5 {
			return nil
		}
		select {
		case failed <- struct{}{}:
		default:
		}
		return errors.New("not now")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = router.Run(ctx) }()
	<-router.Running()
	<-failed // tick 5 failed once; its retry waits
	cancel()
	<-done
	_ = sub.Close()
	// Past the retry's wait: a retry that went on would have failed and
	// parked the event by now.
	time.Sleep(time.Second)
	parked, err := eventbus.ListParked(context.Background(), s.pool, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(parked) != 0 {
		t.Fatalf("a shutdown parked %+v", parked)
	}
	var mu sync.Mutex
	var got []int
	stop := run(t, s, "stopping", func(_ context.Context, ev *eventstore.RecordedEvent) error {
		d, _ := s.Decode(*ev)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, d.(ticked).N)
		return nil
	})
	waitFor(t, "the rest again", func() bool { mu.Lock(); defer mu.Unlock(); return slices.Contains(got, 9) })
	time.Sleep(100 * time.Millisecond) // room for anything delivered twice
	stop()
	if !slices.Equal(got, []int{5, 6, 7, 8, 9}) {
		t.Fatalf("after the restart got %v, want ticks 5 to 9: the first five were done", got)
	}
}

// TestEventThatCannotBeParkedIsDeliveredAgain: when parking fails (the
// poison table refuses the insert), the message is nacked and the events
// from the unparked one on come again; those before it are not repeated.
func TestEventThatCannotBeParkedIsDeliveredAgain(t *testing.T) {
	t.Parallel()
	s, db := newStore(t)
	appendTicks(t, s, 0, 10, "")
	admin := db.AdminPool(t)
	if _, err := admin.Exec(context.Background(), `REVOKE INSERT ON watermill_cairn_poison FROM cairn_app`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int]int{}
	granted := false
	stop := run(t, s, "stubborn", func(_ context.Context, ev *eventstore.RecordedEvent) error {
		d, _ := s.Decode(*ev)
		n := d.(ticked).N
		mu.Lock()
		defer mu.Unlock()
		seen[n]++
		if n == 3 {
			// 1 try and 2 retries, then parking fails; on the second
			// delivery, parking is allowed again.
			if seen[3] == 4 && !granted {
				granted = true
				if _, err := admin.Exec(context.Background(), `GRANT INSERT ON watermill_cairn_poison TO cairn_app`); err != nil {
					t.Error(err)
				}
			}
			return errors.New("tick 3 cannot be handled")
		}
		return nil
	})
	defer stop()
	waitFor(t, "the events after the stubborn one", func() bool { mu.Lock(); defer mu.Unlock(); return seen[9] > 0 })
	mu.Lock()
	defer mu.Unlock()
	for n := range 3 {
		if seen[n] != 1 {
			t.Errorf("tick %d handled %d times, want once: a failed park sent it again", n, seen[n])
		}
	}
	if seen[3] != 6 {
		t.Errorf("tick 3 tried %d times, want 6 (two deliveries of 1 try and 2 retries)", seen[3])
	}
	parked, err := eventbus.ListParked(context.Background(), s.pool, 10)
	if err != nil || len(parked) != 1 {
		t.Fatalf("want tick 3 parked once, got %+v %v", parked, err)
	}
}
