package live_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/domain"
	"cairn/eventstore"
	"cairn/graph/live"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type pinged struct {
	N int `json:"n"`
}

func (pinged) EventType() string { return "test.pinged" }

// With a crowd following, a flow of small commits reaches each subscriber
// in a few wake-ups rather than one per commit, and every event still
// arrives, once and in order.
func TestFeedGathersSmallCommitsForACrowd(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	reg := domain.NewRegistry()
	domain.Register[pinged](reg, 1)
	store := eventstore.New(db.AppPool(t), reg, eventstore.Options{Log: zerolog.Nop()})
	t.Cleanup(store.Close)
	read := func(ctx context.Context, after eventstore.Cursor, limit int) ([]eventstore.RecordedEvent, error) {
		return store.ReadAll(ctx, after, limit, eventstore.Filter{})
	}
	hub := live.New(read, live.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fed := make(chan error, 1)
	go func() { fed <- live.Feed(ctx, store, hub) }()
	t.Cleanup(func() {
		cancel()
		if err := <-fed; err != nil {
			t.Errorf("Feed: %v", err)
		}
	})
	if _, err := hub.Position(ctx); err != nil {
		t.Fatal(err)
	}

	const crowd, commits = 200, 60
	all := func(live.Event) bool { return true }
	for range crowd - 1 {
		if _, err := hub.Subscribe(ctx, nil, all); err != nil {
			t.Fatal(err)
		}
	}
	watched, err := hub.Subscribe(ctx, nil, all)
	if err != nil {
		t.Fatal(err)
	}
	var wakeUps atomic.Int64
	watched.Notify(func() { wakeUps.Add(1) })
	wakeUps.Store(0)

	for i := range commits {
		if _, err := store.Append(ctx, eventstore.AppendRequest{Streams: []eventstore.StreamAppend{{
			StreamID: "ping-" + strconv.Itoa(i), StreamType: "ping", Expected: eventstore.NoStream,
			Events: []domain.Event{pinged{N: i}},
		}}}); err != nil {
			t.Fatal(err)
		}
		// A flow rather than a burst: commits a little apart.
		time.Sleep(2 * time.Millisecond)
	}
	for i := range commits {
		e, err := watched.Next(ctx)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if want := "ping-" + strconv.Itoa(i); e.StreamID != want {
			t.Fatalf("event %d is of stream %s, want %s", i, e.StreamID, want)
		}
	}
	if n := wakeUps.Load(); n > commits/4 {
		t.Fatalf("%d commits woke the subscriber %d times; with %d subscribers they should gather", commits, n, crowd)
	}
}
