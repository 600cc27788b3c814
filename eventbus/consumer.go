package eventbus

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/rs/zerolog"

	"cairn/eventstore"
)

// consumer runs one handler over the events of its group's messages.
type consumer struct {
	name, group string
	fn          HandlerFunc
	opts        RouterOptions
	poison      message.Publisher
	log         zerolog.Logger
}

// handle runs the handler for each event of a message not handled yet. It
// fails only when delivery stops, or when an event can be neither handled
// nor parked; the subscriber then sends the rest again.
func (c *consumer) handle(msg *message.Message) error {
	d := deliveryOf(msg)
	if d == nil {
		return fmt.Errorf("eventbus: message %s carries no events", msg.UUID)
	}
	ctx := msg.Context()
	for i := int(d.done.Load()); i < len(d.events); i++ {
		ev := &d.events[i]
		if err := c.call(ctx, ev); err != nil {
			if err := c.retry(ctx, ev, err); err != nil {
				return err
			}
		}
		d.done.Store(int32(i + 1))
	}
	return nil
}

// call runs the handler once; a panic is an error like any other.
func (c *consumer) call(ctx context.Context, ev *eventstore.RecordedEvent) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return c.fn(ctx, ev)
}

// retry runs a failed handler again up to opts.MaxRetries times, waiting
// opts.InitialInterval and then twice as long each time, up to
// opts.MaxInterval, and parks the event if it still fails.
func (c *consumer) retry(ctx context.Context, ev *eventstore.RecordedEvent, err error) error {
	wait := c.opts.InitialInterval
	for try := 1; try <= c.opts.MaxRetries; try++ {
		c.log.Error().Err(err).Str("event_type", ev.Type).Str("stream", ev.StreamID).Int64("position", ev.Position).
			Int("retry", try).Int("max_retries", c.opts.MaxRetries).Dur("wait", wait).Msg("handler failed; retrying")
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return &stoppedError{err: err}
		}
		if err = c.call(ctx, ev); err == nil {
			return nil
		}
		wait = min(2*wait, c.opts.MaxInterval)
	}
	return c.park(ev, err)
}

// park puts an event whose handler keeps failing in the poison queue,
// described for the person who will read it.
func (c *consumer) park(ev *eventstore.RecordedEvent, reason error) error {
	msg := message.NewMessage("event-"+strconv.FormatInt(ev.Position, 10), message.Payload(ev.Payload))
	describe(msg, ev)
	msg.Metadata.Set(middleware.ReasonForPoisonedKey, reason.Error())
	msg.Metadata.Set(middleware.PoisonedTopicKey, c.group)
	msg.Metadata.Set(middleware.PoisonedHandlerKey, c.name)
	msg.Metadata.Set(middleware.PoisonedSubscriberKey, c.group)
	if err := c.poison.Publish(PoisonTopic, msg); err != nil {
		return fmt.Errorf("eventbus: park event %d (%s) after %d retries: %w", ev.Position, ev.Type, c.opts.MaxRetries, err)
	}
	c.log.Error().Err(reason).Str("event_type", ev.Type).Str("stream", ev.StreamID).Int64("position", ev.Position).
		Msg("handler gave up on an event; it is parked in the poison queue")
	return nil
}

// stoppedError is a failure whose retries were cut short because delivery
// stopped (the router or the subscription is closing): the event is not
// poison and is not parked; it is delivered again from the checkpoint.
type stoppedError struct{ err error }

func (e *stoppedError) Error() string {
	return e.err.Error() + " (retries stopped: delivery is closing)"
}

func (e *stoppedError) Unwrap() error { return e.err }

// Is makes a stopped delivery read as a cancelled one, which watermill's
// router does not log as a handler failure.
func (e *stoppedError) Is(target error) bool { return target == context.Canceled }
