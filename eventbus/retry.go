package eventbus

import (
	"errors"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// retry runs a failed handler again up to opts.MaxRetries times, waiting
// opts.InitialInterval and then twice as long each time, up to
// opts.MaxInterval; it gives up early when the message's context ends.
//
// Every event the bus delivers passes through it, so a handler that
// succeeds costs one call and nothing else. Watermill's Retry middleware,
// which it replaces, built a backoff, its options and two closures for each
// message: two thirds of a consumer group's delivery cost.
func retry(opts RouterOptions, log watermill.LoggerAdapter) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, err := h(msg)
			if err == nil {
				return produced, nil
			}
			return retryFailed(opts, log, h, msg, produced, err)
		}
	}
}

// retryFailed is retry's loop, kept out of the path every message takes:
// a message's goroutine starts with a small stack, and a larger frame on
// the way to every handler made each of them grow it.
//
//go:noinline
func retryFailed(opts RouterOptions, log watermill.LoggerAdapter, h message.HandlerFunc, msg *message.Message,
	produced []*message.Message, err error) ([]*message.Message, error) {
	wait := opts.InitialInterval
	for try := 1; err != nil && try <= opts.MaxRetries; try++ {
		log.Error("Handler failed, retrying", err, watermill.LogFields{
			"retry_no": try, "max_retries": opts.MaxRetries, "wait_time": wait,
		})
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-msg.Context().Done():
			t.Stop()
			return produced, &stoppedError{err: err}
		}
		produced, err = h(msg)
		wait = min(2*wait, opts.MaxInterval)
	}
	return produced, err
}

// stoppedError is a failure whose retries were cut short because delivery
// stopped (the router or the subscription is closing): the message is not
// poison and must not be parked; it is delivered again from the checkpoint.
type stoppedError struct{ err error }

func (e *stoppedError) Error() string {
	return e.err.Error() + " (retries stopped: delivery is closing)"
}

func (e *stoppedError) Unwrap() error { return e.err }

// poisonous reports whether a handler's failure parks its message.
func poisonous(err error) bool {
	var stopped *stoppedError
	return !errors.As(err, &stopped)
}
