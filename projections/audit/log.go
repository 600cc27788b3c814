package audit

import (
	"context"
	"time"

	"cairn/eventstore"
	"cairn/projections"
)

// Log is the event log as an auditor reads it: in global order, by stream,
// and by time. *eventstore.Store implements it.
type Log interface {
	projections.Log
	ReadStream(ctx context.Context, streamID string, o eventstore.ReadStreamOptions) ([]eventstore.RecordedEvent, error)
	LastBefore(ctx context.Context, t time.Time, inclusive bool) (eventstore.Cursor, error)
	LastCheckpoint(ctx context.Context, before eventstore.Cursor) (eventstore.ChainCheckpoint, error)
	CheckpointHeads(ctx context.Context, checkpointID int64, streamID string) (map[string]eventstore.StreamHead, error)
}

var _ Log = (*eventstore.Store)(nil)
