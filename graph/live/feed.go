package live

import (
	"context"
	"errors"
	"slices"
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
	var published time.Time // the last publish
	err = store.Subscribe(ctx, eventstore.SubscribeOptions{From: head}, func(ctx context.Context, b eventstore.Batch) error {
		// The ring keeps thousands of events: they are copied out of the
		// batch, which may be a part of the store's window of recent
		// events, whose arrays (room for 16,384 events each) the ring then
		// kept alive after the window moved on, 20 MB after a flood.
		own := slices.Clone(b.Events)
		evs := make([]Event, len(own))
		for i := range own {
			evs[i] = &own[i]
		}
		h.Publish(evs)
		now := time.Now()
		d := pace(h.Subscribers(), len(evs), now.Sub(published))
		published = now
		if d > 0 {
			// The commits of the next moment are read together.
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
		return nil
	})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// Every publish wakes each subscriber, and each wake-up costs the
// subscriber's connection a write and its client a read, whatever it
// carries. Under a steady flow of small commits with two hundred
// subscribers following, those wake-ups were most of what the subscribers
// cost. So while commits flow, Feed lets those of the next moment gather
// after it published a small batch, longer the more subscribers there are:
// an event that follows a quiet moment still goes out at once, a large
// batch (the log moving fast, or a backlog) is never held back, and no
// event waits more than maxPace for its turn.
const (
	pacePerSubscriber = 250 * time.Microsecond
	maxPace           = 50 * time.Millisecond
	// paceBelow is the batch from which Feed reads on at once: at maxPace,
	// a paced hub follows a log growing by 5,000 events a second, and a
	// faster one comes in batches that are not paced.
	paceBelow = 256
)

// pace is how long Feed waits after publishing a batch of n events to
// subscribers subscribers, since the publish before. Commits flow when that
// one came less than twice the pace before: after a wait, the next publish
// comes a read later. A publish after a longer quiet is not followed by a
// wait, so an event or two now and then never wait for a gathering.
func pace(subscribers, n int, sincePrevious time.Duration) time.Duration {
	d := min(maxPace, time.Duration(subscribers)*pacePerSubscriber)
	if n >= paceBelow || sincePrevious >= 2*d {
		return 0
	}
	return d
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
