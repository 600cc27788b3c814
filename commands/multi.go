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
		// As in Execute: an earlier run of the command id answers a
		// decision that appends nothing; one that appends is answered by
		// the log, which refuses the id twice.
		changes, err := decide(ctx)
		if err != nil {
			res, found, ferr := ranBefore(ctx, store, meta, fp)
			if found {
				return res, ferr
			}
			return eventstore.AppendResult{}, errors.Join(err, ferr)
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
			res, _, ferr := ranBefore(ctx, store, meta, fp)
			return res, ferr
		}
		res, err := store.Append(ctx, req)
		var conflict *eventstore.VersionConflictError
		if errors.As(err, &conflict) && attempt < conflictRetries {
			continue
		}
		return res, err
	}
}
