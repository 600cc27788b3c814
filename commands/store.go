package commands

import (
	"context"

	"cairn/domain"
	"cairn/eventstore"
)

// Loader reads an aggregate's stream and decodes its events.
type Loader interface {
	ReadStream(ctx context.Context, streamID string, o eventstore.ReadStreamOptions) ([]eventstore.RecordedEvent, error)
	Decode(e eventstore.RecordedEvent) (domain.Event, error)
}

// Store is the event log as the write side uses it: load a stream, append
// with an expected version, and recognise a retried command.
// *eventstore.Store implements it.
type Store interface {
	Loader
	Append(ctx context.Context, req eventstore.AppendRequest) (eventstore.AppendResult, error)
	CommandResult(ctx context.Context, commandID string, fingerprint []byte) (eventstore.AppendResult, bool, error)
	CommandStream(ctx context.Context, commandID, streamType string) (string, bool, error)
	// ExistingStreams returns those of streamIDs that hold events.
	ExistingStreams(ctx context.Context, streamIDs []string) ([]string, error)
}

var _ Store = (*eventstore.Store)(nil)
