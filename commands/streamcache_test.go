package commands_test

import (
	"context"
	"sync/atomic"
	"testing"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/node"
	"cairn/eventstore"
)

// countingStore counts the stream reads that reach the log.
type countingStore struct {
	*eventstore.Store
	reads atomic.Int64
}

func (c *countingStore) ReadStream(ctx context.Context, id string, o eventstore.ReadStreamOptions) ([]eventstore.RecordedEvent, error) {
	c.reads.Add(1)
	return c.Store.ReadStream(ctx, id, o)
}

func drain(ctx context.Context, s commands.Store, id string) (commands.Result, error) {
	in := node.Drain{NodeID: id, Reason: "maintenance", At: at}
	return commands.Execute[node.Node](ctx, s, domain.NodeStream, id, commands.Meta{}, in, func(n node.Node) ([]domain.Event, error) {
		return n.Drain(in)
	})
}

func undrain(ctx context.Context, s commands.Store, id string) (commands.Result, error) {
	in := node.Undrain{NodeID: id, At: at}
	return commands.Execute[node.Node](ctx, s, domain.NodeStream, id, commands.Meta{}, in, func(n node.Node) ([]domain.Event, error) {
		return n.Undrain(in)
	})
}

// A stream the cache remembers is decided on without a read; one another
// writer moved on meanwhile (another replica, say) is decided again on the
// log's history, whether the stale decision appended or decided nothing.
func TestStreamCacheDecidesOnTheLogWhenBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &countingStore{Store: newStore(t)}
	cached := commands.NewStreamCache(store, 16)

	if _, err := enroll(ctx, cached, commands.Meta{}, "n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := drain(ctx, cached, "n1"); err != nil {
		t.Fatal(err)
	}
	if n := store.reads.Load(); n != 1 {
		t.Fatalf("the drain after the enrolment read the stream: %d reads, want 1 (the enrolment's)", n)
	}

	// Another writer lifts the drain; the cache still remembers it drained.
	if _, err := undrain(ctx, store.Store, "n1"); err != nil {
		t.Fatal(err)
	}
	// Draining again on the remembered history would decide nothing (it
	// looks drained already); on the log's it drains.
	res, err := drain(ctx, cached, "n1")
	if err != nil || res.Version != 4 {
		t.Fatalf("drain on a stale history: %+v %v, want version 4", res, err)
	}

	// Another writer lifts it again; undraining on the remembered history
	// (drained) would append at a version the log has passed: refused, and
	// decided again on the log's, where there is nothing left to do.
	if _, err := undrain(ctx, store.Store, "n1"); err != nil {
		t.Fatal(err)
	}
	res, err = undrain(ctx, cached, "n1")
	if err != nil || res.Version != 5 {
		t.Fatalf("undrain on a stale history: %+v %v, want nothing appended at version 5", res, err)
	}
	evs, err := store.Store.ReadStream(ctx, domain.StreamID(domain.NodeStream, "n1"), eventstore.ReadStreamOptions{})
	if err != nil || len(evs) != 5 {
		t.Fatalf("the stream holds %d events (%v), want 5: %+v", len(evs), err, evs)
	}
}

// Writes made outside Execute (the dispatcher spawns children and decides
// leases itself) are remembered when the cache holds all the history
// before them, so the commands that follow decide without a read; one it
// cannot place after what it holds makes it forget the stream.
func TestStreamCacheRemembersWritesMadeOutsideExecute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &countingStore{Store: newStore(t)}
	cached := commands.NewStreamCache(store, 16)
	sid := domain.StreamID(domain.NodeStream, "n1")
	write := func(after int64, evs []domain.Event) {
		t.Helper()
		expected := eventstore.Exactly(after)
		if after == 0 {
			expected = eventstore.NoStream
		}
		if _, err := store.Store.Append(ctx, eventstore.AppendRequest{Streams: []eventstore.StreamAppend{{
			StreamID: sid, StreamType: domain.NodeStream, Expected: expected, Events: evs,
		}}}); err != nil {
			t.Fatal(err)
		}
		cached.Wrote(sid, after, "", evs)
	}

	var n node.Node
	enrolled, err := n.Enroll(node.Enroll{NodeID: "n1", Hostname: "host-n1", At: at})
	if err != nil {
		t.Fatal(err)
	}
	write(0, enrolled)
	for _, e := range enrolled {
		n.Apply(e)
	}
	drained, err := n.Drain(node.Drain{NodeID: "n1", Reason: "maintenance", At: at})
	if err != nil {
		t.Fatal(err)
	}
	write(1, drained)
	// Undraining decides on the history written: drained, at version 2.
	res, err := undrain(ctx, cached, "n1")
	if err != nil || res.Version != 3 {
		t.Fatalf("undrain after the writes: %+v %v, want version 3", res, err)
	}
	if r := store.reads.Load(); r != 0 {
		t.Fatalf("the undrain read the stream %d times; the writes were all it needed", r)
	}

	// A write after a version the cache does not hold (it holds 3) makes it
	// forget: the next command reads the log.
	cached.Wrote(sid, 7, "", drained)
	res, err = drain(ctx, cached, "n1")
	if err != nil || res.Version != 4 {
		t.Fatalf("drain after a write the cache could not place: %+v %v, want version 4", res, err)
	}
	if r := store.reads.Load(); r != 1 {
		t.Fatalf("the drain read the stream %d times, want 1", r)
	}
}
