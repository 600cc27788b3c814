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
}

var _ Log = (*eventstore.Store)(nil)
