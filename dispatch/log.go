package dispatch

import (
	"context"

	"cairn/commands"
	"cairn/eventstore"
)

// Log is the event log as the dispatcher follows and writes it: the job,
// node and schedule streams in global order, whole streams for the one job
// or node it reloads, and its own decisions. *eventstore.Store implements
// it.
type Log interface {
	commands.Loader
	Head(ctx context.Context) (eventstore.Cursor, error)
	ReadRange(ctx context.Context, from, to eventstore.Cursor, pageSize int, f eventstore.Filter, handle func([]eventstore.RecordedEvent) error) error
	Subscribe(ctx context.Context, opts eventstore.SubscribeOptions, handle func(context.Context, eventstore.Batch) error) error
	Append(ctx context.Context, req eventstore.AppendRequest) (eventstore.AppendResult, error)
}

var _ Log = (*eventstore.Store)(nil)
