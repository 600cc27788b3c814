// Package eventbus carries events from the event store to handlers through a
// watermill router: the store is the message source (one watermill
// Subscriber reading the log in batches, woken by NOTIFY, one message per
// batch), each consumer handles the events of a message one by one with
// retries, panic recovery and a poison queue per event, and watermill-sql
// parks poisoned events in PostgreSQL. ARCHITECTURE.md
// explains why the stock watermill-sql subscriber is not used for events.
package eventbus

import (
	"github.com/ThreeDotsLabs/watermill"
	"github.com/rs/zerolog"
)

// Logger adapts zerolog to watermill's logger interface.
type Logger struct{ log zerolog.Logger }

// NewLogger wraps a zerolog logger for watermill.
func NewLogger(log zerolog.Logger) Logger { return Logger{log: log} }

func fields(e *zerolog.Event, f watermill.LogFields) *zerolog.Event {
	for k, v := range f {
		e = e.Interface(k, v)
	}
	return e
}

// Error logs at error level.
func (l Logger) Error(msg string, err error, f watermill.LogFields) {
	fields(l.log.Error().Err(err), f).Msg(msg)
}

// Info logs at info level.
func (l Logger) Info(msg string, f watermill.LogFields) { fields(l.log.Info(), f).Msg(msg) }

// Debug logs at debug level.
func (l Logger) Debug(msg string, f watermill.LogFields) { fields(l.log.Debug(), f).Msg(msg) }

// Trace logs at trace level.
func (l Logger) Trace(msg string, f watermill.LogFields) { fields(l.log.Trace(), f).Msg(msg) }

// With returns a logger that adds fields to every line.
func (l Logger) With(f watermill.LogFields) watermill.LoggerAdapter {
	ctx := l.log.With()
	for k, v := range f {
		ctx = ctx.Interface(k, v)
	}
	return Logger{log: ctx.Logger()}
}
