// Package commands is Cairn's write side: one small handler per command that
// loads an aggregate from its stream, lets the pure domain decide, and
// appends the decided events with the expected version. Long-running work
// (dispatching jobs, orchestrating services) lives in subpackages driven by
// events.
package commands

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"cairn/domain"
	"cairn/eventstore"
)

// Meta says who asks and how to trace the command through the log.
type Meta struct {
	// CommandID is an optional client-supplied id: a retry with the same id
	// and the same input returns the first result and appends nothing.
	CommandID     string
	CorrelationID string
	CausationID   string
	// Actor is the user id, token id or node id acting.
	Actor string
	// Tenant is the tenant the command acts within, if any.
	Tenant string
	// created is the stream of an entity whose id EntityID has just
	// generated: nothing can be in it yet, so Execute decides without
	// reading it first.
	created string
}

func (m Meta) metadata() eventstore.Metadata {
	return eventstore.Metadata{CorrelationID: m.CorrelationID, CausationID: m.CausationID, Actor: m.Actor, Tenant: m.Tenant}
}

// Result says where a command's events landed.
type Result struct {
	// Cursor of the command's last event; a client passes it as
	// consistentWith to read its own write. Zero when nothing changed.
	Cursor eventstore.Cursor
	// Version of the aggregate's stream after the command.
	Version int64
	// Duplicate is true when the command id had been seen before.
	Duplicate bool
}

// Aggregate is a domain state that evolves by applying events.
type Aggregate interface {
	Apply(domain.Event)
}

// conflictRetries bounds how often a command is re-decided after another
// writer changed its stream between load and append.
const conflictRetries = 3

// Load folds an aggregate's stream into a fresh state S and returns its version.
// A stream that does not exist yields the zero state and version 0.
func Load[S any, PS interface {
	*S
	Aggregate
}](ctx context.Context, store Loader, streamType, id string) (S, int64, error) {
	h, err := readHistory(ctx, store, streamType, id)
	if err != nil {
		var zero S
		return zero, 0, err
	}
	return fold[S, PS](h), h.version, nil
}

// readHistory reads and decodes a stream, with the tenant it was created in
// ("" for streams of no tenant, and for a stream that does not exist).
func readHistory(ctx context.Context, store Loader, streamType, id string) (history, error) {
	recs, err := store.ReadStream(ctx, domain.StreamID(streamType, id), eventstore.ReadStreamOptions{})
	var nf *eventstore.StreamNotFoundError
	if errors.As(err, &nf) {
		return history{}, nil
	}
	if err != nil {
		return history{}, err
	}
	h := history{events: make([]domain.Event, len(recs)), version: int64(len(recs)), tenant: recs[0].Metadata.Tenant}
	for i, rec := range recs {
		if h.events[i], err = store.Decode(rec); err != nil {
			return history{}, fmt.Errorf("load %s %q: %w", streamType, id, err)
		}
	}
	return h, nil
}

// fold applies a stream's events to a fresh state.
func fold[S any, PS interface {
	*S
	Aggregate
}](h history) S {
	var state S
	for _, ev := range h.events {
		PS(&state).Apply(ev)
	}
	return state
}

// Execute runs one command against one aggregate: load, decide, append with
// the expected version. input is the command as the caller gave it; its JSON
// fingerprints the command for idempotent retries. A concurrent change to the
// stream makes it load and decide again, a few times, before it reports the
// conflict.
func Execute[S any, PS interface {
	*S
	Aggregate
}](ctx context.Context, store Store, streamType, id string, meta Meta, input any,
	decide func(S) ([]domain.Event, error)) (Result, error) {
	fp, err := Fingerprint(streamType, id, input)
	if err != nil {
		return Result{}, err
	}
	stream := domain.StreamID(streamType, id)
	memory, remembers := store.(streamMemory)
	created := meta.created == stream
	for attempt := 0; ; attempt++ {
		h, recalled := history{}, false
		switch {
		case created:
			recalled = true // the empty history of a stream just named
		case remembers:
			h, recalled = memory.recall(stream)
		}
		if !recalled {
			if h, err = readHistory(ctx, store, streamType, id); err != nil {
				return Result{}, err
			}
		}
		state, version, tenant := fold[S, PS](h), h.version, h.tenant
		evs, err := decide(state)
		if recalled && (err != nil || len(evs) == 0) {
			// Refused, or nothing to do, on a remembered history: the
			// stream may have moved on since. Decide again on the log's.
			if memory != nil {
				memory.forget(stream)
			}
			created, remembers = false, false
			attempt--
			continue
		}
		if err != nil || len(evs) == 0 {
			// The state may refuse, or find nothing to do, because an
			// earlier run of this very command id changed it (a client
			// retrying after a timeout, perhaps racing the first run on
			// another replica): then that run's result is the answer. A
			// decision that appends needs no such look first: the log
			// refuses a command id twice, and the append answers with the
			// first run's result.
			res, found, ferr := ranBefore(ctx, store, meta, fp)
			if found {
				return fromAppend(res, stream), ferr
			}
			return Result{Version: version}, errors.Join(err, ferr)
		}
		md := meta.metadata()
		// An entity stays in the tenant it was made in: what an operator, an
		// agent or the system does to it is tagged with that tenant, so the
		// tenant sees its whole history.
		if md.Tenant == "" {
			md.Tenant = tenant
		}
		res, err := store.Append(ctx, eventstore.AppendRequest{
			CommandID:   meta.CommandID,
			Fingerprint: fp,
			Metadata:    md,
			Streams: []eventstore.StreamAppend{{
				StreamID: stream, StreamType: streamType,
				Expected: eventstore.Exactly(version), Events: evs,
			}},
		})
		var conflict *eventstore.VersionConflictError
		if memory != nil && (err != nil || res.Duplicate) {
			// Whatever the stream holds now, it is not known here.
			memory.forget(stream)
		}
		if errors.As(err, &conflict) && recalled {
			// The remembered history was stale: not a race lost.
			created, remembers = false, false
			attempt--
			continue
		}
		if errors.As(err, &conflict) && attempt < conflictRetries {
			continue
		}
		if err != nil {
			return Result{}, err
		}
		if memory != nil && !res.Duplicate {
			if version == 0 {
				tenant = md.Tenant
			}
			memory.remember(stream, history{events: append(slices.Clip(h.events), evs...), version: version + int64(len(evs)), tenant: tenant})
		}
		return fromAppend(res, stream), nil
	}
}

// ranBefore is what a command that appends nothing answers when its
// command id ran before (found): the first run's result, or the CONFLICT of
// an id used with another input. Otherwise the error is that of the look
// itself, if it failed.
func ranBefore(ctx context.Context, store Store, meta Meta, fp []byte) (eventstore.AppendResult, bool, error) {
	res, found, err := firstRun(ctx, store, meta, fp)
	var reused *eventstore.CommandReusedError
	if errors.As(err, &reused) {
		return eventstore.AppendResult{}, true, err
	}
	return res, found && err == nil, err
}

// firstRun returns the result of an earlier run of the command id, if it
// has one (never for a command without an id).
func firstRun(ctx context.Context, store Store, meta Meta, fp []byte) (eventstore.AppendResult, bool, error) {
	if meta.CommandID == "" {
		return eventstore.AppendResult{}, false, nil
	}
	return store.CommandResult(ctx, meta.CommandID, fp)
}

func fromAppend(res eventstore.AppendResult, stream string) Result {
	out := Result{Cursor: res.Cursor, Duplicate: res.Duplicate}
	for _, s := range res.Streams {
		if s.StreamID == stream {
			out.Version = s.Version
		}
	}
	return out
}

// Fingerprint identifies a command's input for idempotency checks.
func Fingerprint(streamType, id string, input any) ([]byte, error) {
	b, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("fingerprint command: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(streamType))
	h.Write([]byte{0})
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write(b)
	return h.Sum(nil), nil
}
