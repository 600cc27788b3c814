package live

import (
	"context"
	"errors"
	"time"

	"cairn/eventstore"
)

// Log is the event log as a Hub's feed follows it. *eventstore.Store
// implements it.
type Log interface {
	Head(ctx context.Context) (eventstore.Cursor, error)
	Subscribe(ctx context.Context, opts eventstore.SubscribeOptions, handle func(context.Context, eventstore.Batch) error) error
}

// Feed runs the Hub's one store subscription: it starts the Hub at the head
// of the log and publishes every event that commits afterwards, until ctx
// ends. The store retries failed reads itself, so Feed returns only when ctx
// ends.
func Feed(ctx context.Context, store Log, h *Hub) error {
	head, err := store.Head(ctx)
	for err != nil {
		// The database may be restarting: the Hub waits for it, and so do
		// its subscribers.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		head, err = store.Head(ctx)
	}
	h.Start(head)
	err = store.Subscribe(ctx, eventstore.SubscribeOptions{From: head}, func(_ context.Context, b eventstore.Batch) error {
		evs := make([]Event, len(b.Events))
		for i := range b.Events {
			evs[i] = &b.Events[i]
		}
		h.Publish(evs)
		return nil
	})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// Gate waits until the read models have applied every event up to a cursor
// (the projections runner's WaitFor).
type Gate func(ctx context.Context, c eventstore.Cursor) error

// Follow publishes into to every event of from, each batch only once gate
// says the read models have applied it: subscribers of to that query the read
// models on an event see its effect. It runs until ctx ends. Falling behind
// from (while the read models lag) costs nothing but a catch-up from the log.
func Follow(ctx context.Context, from, to *Hub, gate Gate) error {
	select {
	case <-from.ready:
	case <-ctx.Done():
		return nil
	}
	start := from.Cursor()
	// After a restart the read models may still be behind the head the
	// source started at: to's position promises they have applied it.
	if err := gate(ctx, start); err != nil {
		return ignoreDone(ctx, err)
	}
	to.Start(start)
	after := start
	all := func(Event) bool { return true }
	for {
		sub, err := from.Subscribe(ctx, &after, all)
		if err != nil {
			return ignoreDone(ctx, err)
		}
		err = follow(ctx, sub, to, gate)
		sub.Close()
		after = sub.Last()
		var slow *SlowConsumerError
		if errors.As(err, &slow) {
			after = slow.Resume
			continue
		}
		return ignoreDone(ctx, err)
	}
}

// follow moves batches from sub to to: it takes what is queued (at least one
// event), waits for the gate at the last of them, then publishes them all.
func follow(ctx context.Context, sub *Sub, to *Hub, gate Gate) error {
	const maxBatch = 1000
	var pending []Event
	published := sub.Last()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			var slow *SlowConsumerError
			if errors.As(err, &slow) {
				// Resume after what was published, not what was read.
				return &SlowConsumerError{Resume: published, Queue: slow.Queue}
			}
			return err
		}
		pending = append(pending[:0], e)
		for len(pending) < maxBatch && sub.ready() {
			e, err := sub.Next(ctx)
			if err != nil {
				break
			}
			pending = append(pending, e)
		}
		last := pending[len(pending)-1].Cursor()
		if err := gate(ctx, last); err != nil {
			return err
		}
		to.Publish(pending)
		published = last
	}
}

// ready reports whether Next would return without waiting.
func (s *Sub) ready() bool {
	if s.catchingUp {
		return len(s.backlog) > 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) > 0
}

func ignoreDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
