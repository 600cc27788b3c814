package dispatch

import (
	"context"

	"cairn/commands"
	"cairn/eventstore"
	"cairn/joblogs"
	"cairn/nodestats"
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

// Output stores the output agents send of their jobs (joblogs.Store).
type Output interface {
	Append(ctx context.Context, jobID string, attempt int, chunks []joblogs.Chunk) (joblogs.AppendResult, error)
	// JobChanged wakes live tails of the job's output.
	JobChanged(jobID string)
}

// Statistics stores the statistics agents send of their nodes
// (nodestats.Store).
type Statistics interface {
	Append(ctx context.Context, nodeID string, samples []nodestats.Sample) (int, error)
}
