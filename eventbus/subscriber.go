package eventbus

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/rs/zerolog"

	"cairn/eventstore"
)

// Metadata keys set on a parked event's message.
const (
	MetaEventType  = "event_type"
	MetaStreamID   = "stream_id"
	MetaStreamType = "stream_type"
	MetaVersion    = "version"
	MetaCursor     = "cursor"
	MetaActor      = "actor"
	MetaTenant     = "tenant"
)

// SubscriberOptions configure a Subscriber.
type SubscriberOptions struct {
	BatchSize int
	Filter    eventstore.Filter
	// CheckpointEvery bounds how often the consumer group's cursor is saved;
	// after a crash at most this much work is delivered again.
	CheckpointEvery time.Duration
	// NackDelay is the pause before a nacked message is delivered again.
	NackDelay time.Duration
	Log       zerolog.Logger
}

// Log is the event log as the bus reads it: a subscription in global order
// and the consumer groups' checkpoints. *eventstore.Store implements it.
type Log interface {
	Subscribe(ctx context.Context, opts eventstore.SubscribeOptions, handle func(context.Context, eventstore.Batch) error) error
	LoadCheckpoint(ctx context.Context, name string) (eventstore.Cursor, error)
	SaveCheckpoint(ctx context.Context, name string, c eventstore.Cursor) error
}

// Subscriber is a watermill Subscriber over the event log. The topic is the
// consumer group: each topic keeps its own checkpoint, and every group
// receives every event (that passes the filter) in global order, at least once.
type Subscriber struct {
	store Log
	opts  SubscriberOptions

	mu      sync.Mutex
	closed  bool
	cancels []context.CancelFunc
	wg      sync.WaitGroup
}

// NewSubscriber returns a subscriber reading from store.
func NewSubscriber(store Log, opts SubscriberOptions) *Subscriber {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = 200 * time.Millisecond
	}
	if opts.NackDelay <= 0 {
		opts.NackDelay = 100 * time.Millisecond
	}
	return &Subscriber{store: store, opts: opts}
}

// CheckpointName is where a consumer group's cursor is kept.
func CheckpointName(group string) string { return "bus:" + group }

// Subscribe starts delivering from the group's checkpoint. A message carries
// the events of one read of the log that pass the filter (see Router); it
// must be acked before the next is sent, which keeps global order.
func (s *Subscriber) Subscribe(ctx context.Context, group string) (<-chan *message.Message, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("eventbus: subscriber is closed")
	}
	ctx, cancel := context.WithCancel(ctx)
	s.cancels = append(s.cancels, cancel)
	s.wg.Add(1)
	s.mu.Unlock()

	from, err := s.store.LoadCheckpoint(ctx, CheckpointName(group))
	if err != nil {
		cancel()
		s.wg.Done()
		return nil, err
	}
	out := make(chan *message.Message)
	go func() {
		defer s.wg.Done()
		defer close(out)
		g := &groupRun{s: s, group: group, out: out, acked: from, saved: from}
		err := s.store.Subscribe(ctx, eventstore.SubscribeOptions{From: from, BatchSize: s.opts.BatchSize, Filter: s.opts.Filter}, g.deliver)
		// Save progress on the way out so a restart does not redo it.
		if serr := g.save(context.WithoutCancel(ctx), true); serr != nil {
			s.opts.Log.Error().Err(serr).Str("group", group).Msg("could not save checkpoint on stop")
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			s.opts.Log.Error().Err(err).Str("group", group).Msg("event subscription stopped")
		}
	}()
	return out, nil
}

type groupRun struct {
	s        *Subscriber
	group    string
	out      chan<- *message.Message
	acked    eventstore.Cursor
	saved    eventstore.Cursor
	lastSave time.Time
}

func (g *groupRun) deliver(ctx context.Context, b eventstore.Batch) error {
	if len(b.Events) > 0 {
		if err := g.send(ctx, &delivery{events: b.Events}); err != nil {
			return err
		}
	}
	g.acked = b.Cursor // events filtered out are done too
	if err := g.save(ctx, false); err != nil && ctx.Err() == nil {
		// The checkpoint only spares a restart some redelivery: a database
		// away for a moment must not end the subscription (and with it the
		// consumer's router). It is saved again with the next batch.
		g.s.opts.Log.Warn().Err(err).Str("group", g.group).Msg("could not save the checkpoint; will try again")
	}
	return nil
}

func (g *groupRun) save(ctx context.Context, force bool) error {
	if g.acked == g.saved || (!force && time.Since(g.lastSave) < g.s.opts.CheckpointEvery) {
		return nil
	}
	if err := g.s.store.SaveCheckpoint(ctx, CheckpointName(g.group), g.acked); err != nil {
		return err
	}
	g.saved, g.lastSave = g.acked, time.Now()
	return nil
}

// send delivers a batch of events in one message and waits for its ack.
// After a nack it sends the events the handler had not finished, once
// NackDelay has passed. When delivery stops, the events the handler
// finished count as acked, so the checkpoint saved on the way out keeps them.
func (g *groupRun) send(ctx context.Context, d *delivery) error {
	for {
		msg := d.message(ctx)
		select {
		case g.out <- msg:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-msg.Acked():
			return nil
		case <-msg.Nacked():
			if done := int(d.done.Load()); done > 0 {
				g.acked = d.events[done-1].Cursor()
				d.events = d.events[done:]
				d.done.Store(0)
			}
			select {
			case <-time.After(g.s.opts.NackDelay):
			case <-ctx.Done():
				return ctx.Err()
			}
		case <-ctx.Done():
			if done := d.done.Load(); done > 0 {
				g.acked = d.events[done-1].Cursor()
			}
			return ctx.Err()
		}
	}
}

// Close stops every subscription and waits for them to save their checkpoints.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, c := range s.cancels {
		c()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// delivery is the events one message carries, in global order, and how
// many of them its handler is done with. The handler counts done up; the
// subscriber reads it after a nack, or while the handler may still run when
// delivery stops.
type delivery struct {
	events []eventstore.RecordedEvent
	done   atomic.Int32
}

type deliveryKey struct{}

// message wraps the events not yet handled as a watermill message. They
// ride in the message's context, shared with the batch they were read in;
// the message has no payload or metadata. Its id names its first event.
func (d *delivery) message(ctx context.Context) *message.Message {
	msg := message.NewMessage("events-from-"+strconv.FormatInt(d.events[0].Position, 10), nil)
	msg.SetContext(context.WithValue(ctx, deliveryKey{}, d))
	return msg
}

func deliveryOf(msg *message.Message) *delivery {
	d, _ := msg.Context().Value(deliveryKey{}).(*delivery)
	return d
}

// describe sets the metadata that says which event a message carries, for
// a message that is kept and read by a person (a parked one).
func describe(msg *message.Message, ev *eventstore.RecordedEvent) {
	msg.Metadata.Set(MetaEventType, ev.Type)
	msg.Metadata.Set(MetaStreamID, ev.StreamID)
	msg.Metadata.Set(MetaStreamType, ev.StreamType)
	msg.Metadata.Set(MetaVersion, strconv.FormatInt(ev.Version, 10))
	msg.Metadata.Set(MetaCursor, ev.Cursor().String())
	if ev.Metadata.Actor != "" {
		msg.Metadata.Set(MetaActor, ev.Metadata.Actor)
	}
	if ev.Metadata.Tenant != "" {
		msg.Metadata.Set(MetaTenant, ev.Metadata.Tenant)
	}
	if ev.Metadata.CorrelationID != "" {
		middleware.SetCorrelationID(ev.Metadata.CorrelationID, msg)
	}
}
