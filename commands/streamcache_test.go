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
