package live

import (
	"context"
	"errors"
	"testing"
	"time"

	"cairn/eventstore"
)

// The projected hub starts only once the read models have reached the head
// its source started at: its position promises they applied everything up
// to it, which a restart with read models behind would otherwise break.
func TestFollowStartsOnceTheReadModelsReachTheHead(t *testing.T) {
	t.Parallel()
	none := func(context.Context, eventstore.Cursor, int) ([]eventstore.RecordedEvent, error) { return nil, nil }
	from, to := New(none, Options{}), New(none, Options{})
	head := eventstore.Cursor{TxID: 7, Position: 42}
	from.Start(head)

	reached := make(chan struct{})
	gated := make(chan eventstore.Cursor, 1)
	gate := func(ctx context.Context, c eventstore.Cursor) error {
		gated <- c
		select {
		case <-reached:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, from, to, gate) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Follow: %v", err)
		}
	})

	select {
	case c := <-gated:
		if c != head {
			t.Fatalf("Follow waited for %v, want the head %v", c, head)
		}
	case <-to.ready:
		t.Fatal("the hub started without waiting for the read models")
	case <-time.After(30 * time.Second):
		t.Fatal("Follow neither waited for the read models nor started the hub")
	}
	short, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer stop()
	if c, err := to.Position(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the hub started at %v (%v) before the read models reached the head", c, err)
	}
	close(reached)
	wait, stopWait := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopWait()
	c, err := to.Position(wait)
	if err != nil || c != head {
		t.Fatalf("position %v, %v; want %v", c, err, head)
	}
}

func TestPace(t *testing.T) {
	t.Parallel()
	const flowing = 100 * time.Microsecond
	for _, c := range []struct {
		subscribers, batch int
		since              time.Duration
		want               time.Duration
	}{
		{0, 1, flowing, 0},
		{1, 1, flowing, pacePerSubscriber},
		{40, 10, flowing, 40 * pacePerSubscriber},
		{200, 10, flowing, maxPace},
		{5000, 1, flowing, maxPace},
		{200, paceBelow - 1, flowing, maxPace},
		{200, paceBelow, flowing, 0},                   // the log moves fast: read on at once
		{200, 10, maxPace + time.Millisecond, maxPace}, // a read after a wait
		{200, 1, 2 * maxPace, 0},                       // after a quiet moment
		{200, 1, time.Hour, 0},
		{4, 1, 2 * time.Millisecond, 0}, // quiet for as many subscribers
		{4, 1, time.Millisecond, 4 * pacePerSubscriber},
	} {
		if got := pace(c.subscribers, c.batch, c.since); got != c.want {
			t.Errorf("pace(%d subscribers, %d events, %v since the last) = %v, want %v", c.subscribers, c.batch, c.since, got, c.want)
		}
	}
}

// batchLog hands Feed one batch, a part of a larger array (as the store's
// window of recent events hands them out), then waits.
type batchLog struct{ batch []eventstore.RecordedEvent }

func (l batchLog) Head(context.Context) (eventstore.Cursor, error) { return eventstore.Start, nil }

func (l batchLog) Subscribe(ctx context.Context, _ eventstore.SubscribeOptions, handle func(context.Context, eventstore.Batch) error) error {
	if err := handle(ctx, eventstore.Batch{Events: l.batch, Cursor: l.batch[len(l.batch)-1].Cursor()}); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

// The hub keeps its events in arrays of its own: the batches it is handed
// may be parts of the store's window, whose large arrays its ring would
// otherwise keep alive after the window moved on.
func TestFeedKeepsNoPartOfTheStoresArrays(t *testing.T) {
	t.Parallel()
	window := make([]eventstore.RecordedEvent, 100)
	for i := range window {
		window[i].TxID, window[i].Position = 1, int64(i+1)
	}
	none := func(context.Context, eventstore.Cursor, int) ([]eventstore.RecordedEvent, error) { return nil, nil }
	h := New(none, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Feed(ctx, batchLog{batch: window[10:12:12]}, h) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Feed: %v", err)
		}
	}()
	from := eventstore.Start
	sub, err := h.Subscribe(ctx, &from, func(Event) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for range 2 {
		wait, stop := context.WithTimeout(ctx, 30*time.Second)
		e, err := sub.Next(wait)
		stop()
		if err != nil {
			t.Fatal(err)
		}
		for i := range window {
			if e == &window[i] {
				t.Fatalf("the hub handed out event %s inside the store's array", e.Cursor())
			}
		}
	}
}
