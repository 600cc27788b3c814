package projections

import (
	"context"

	"cairn/domain"
	"cairn/eventstore"
)

// Log is the event log as the projections read it: in global order, live
// and in ranges, and decoded. *eventstore.Store implements it.
type Log interface {
	Head(ctx context.Context) (eventstore.Cursor, error)
	ReadAll(ctx context.Context, after eventstore.Cursor, limit int, f eventstore.Filter) ([]eventstore.RecordedEvent, error)
	ReadRange(ctx context.Context, from, to eventstore.Cursor, pageSize int, f eventstore.Filter, handle func([]eventstore.RecordedEvent) error) error
	Subscribe(ctx context.Context, opts eventstore.SubscribeOptions, handle func(context.Context, eventstore.Batch) error) error
	WaitVisible(ctx context.Context, c eventstore.Cursor) error
	Contains(ctx context.Context, c eventstore.Cursor) (bool, error)
	Decode(e eventstore.RecordedEvent) (domain.Event, error)
}

var _ Log = (*eventstore.Store)(nil)
