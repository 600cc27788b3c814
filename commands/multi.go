package commands

import (
	"context"
	"errors"

	"cairn/domain"
	"cairn/eventstore"
)

// StreamChange is one aggregate's part of a command that changes several at
// once, decided at the aggregate's loaded version.
type StreamChange struct {
	StreamType string
	ID         string
	// Version is the stream's version the decision was made at (0: the
	// stream must not exist yet).
	Version int64
	Events  []domain.Event
}

// ExecuteMany runs a command whose events go to several streams, all or
// nothing: decide loads what it needs and returns each stream's events with
// the version it saw. When another writer changed one of those streams in the
// meantime decide runs again, a few times, before the conflict is reported.
// command names it ("node.decommission"); with input it fingerprints the
// command for idempotent retries by command id, so input must identify every
// entity the command addresses, and must hold no secret.
func ExecuteMany(ctx context.Context, store Store, meta Meta, command string, input any,
	decide func(ctx context.Context) ([]StreamChange, error)) (eventstore.AppendResult, error) {
	fp, err := Fingerprint(command, "", input)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	for attempt := 0; ; attempt++ {
		// As in Execute: a racing retry of the command id is answered with
		// the first run's result, before deciding, after a conflict, and
		// when the changed state refuses the command.
		if res, found, err := firstRun(ctx, store, meta, fp); err != nil || found {
			return res, err
		}
		changes, err := decide(ctx)
		if err != nil {
			if res, found, ferr := firstRun(ctx, store, meta, fp); ferr == nil && found {
				return res, nil
			}
			return eventstore.AppendResult{}, err
		}
		req := eventstore.AppendRequest{CommandID: meta.CommandID, Fingerprint: fp, Metadata: meta.metadata()}
		for _, c := range changes {
			if len(c.Events) == 0 {
				continue
			}
			req.Streams = append(req.Streams, eventstore.StreamAppend{
				StreamID: domain.StreamID(c.StreamType, c.ID), StreamType: c.StreamType,
				Expected: eventstore.Exactly(c.Version), Events: c.Events,
			})
		}
		if len(req.Streams) == 0 {
			if res, found, err := firstRun(ctx, store, meta, fp); err != nil || found {
				return res, err
			}
			return eventstore.AppendResult{}, nil
		}
		res, err := store.Append(ctx, req)
		var conflict *eventstore.VersionConflictError
		if errors.As(err, &conflict) && attempt < conflictRetries {
			continue
		}
		return res, err
	}
}
