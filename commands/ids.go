package commands

import (
	"context"
	"errors"
	"strings"

	"cairn/domain"
)

// EntityID picks the id of the entity a creating command addresses: the one
// the caller gave, else the one an earlier run of the same command id chose,
// else a new one from gen. Reusing the earlier id is what lets a retried
// command be recognised: its fingerprint covers the stream, so a fresh id
// would make the retry look like a different command. A new id's stream is
// noted in meta: Execute then decides on it as empty without reading it
// (and reads it after all if the log says otherwise).
func EntityID(ctx context.Context, store Store, meta *Meta, streamType, given string, gen IDGenerator) (string, error) {
	if given != "" {
		return given, IDFree(ctx, store, streamType, given)
	}
	if meta.CommandID != "" {
		stream, found, err := store.CommandStream(ctx, meta.CommandID, streamType)
		if err != nil {
			return "", err
		}
		if found {
			return domain.EntityIDOf(streamType, stream), nil
		}
	}
	if gen == nil {
		return "", errors.New("no id was given and the handler has no id generator")
	}
	id := gen()
	meta.created = domain.StreamID(streamType, id)
	return id, nil
}

// IDFree refuses a caller-chosen id that an object of another kind already
// has (domain.ObjectStreamTypes): ids are unique across kinds, so the API's
// node(id:) finds one object for any id. Generated ids are random and need
// no check.
func IDFree(ctx context.Context, store Store, streamType, id string) error {
	if id == "" {
		return nil
	}
	var others []string
	for _, t := range domain.ObjectStreamTypes() {
		if t != streamType {
			others = append(others, domain.StreamID(t, id))
		}
	}
	taken, err := store.ExistingStreams(ctx, others)
	if err != nil {
		return err
	}
	if len(taken) > 0 {
		return &domain.IDTakenError{Entity: streamType, ID: id, TakenBy: strings.TrimSuffix(taken[0], "-"+id)}
	}
	return nil
}
