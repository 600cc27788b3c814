package commands

import (
	"cairn/domain"
	"context"
	"errors"
)

// EntityID picks the id of the entity a creating command addresses: the one
// the caller gave, else the one an earlier run of the same command id chose,
// else a new one from gen. Reusing the earlier id is what lets a retried
// command be recognised: its fingerprint covers the stream, so a fresh id
// would make the retry look like a different command.
func EntityID(ctx context.Context, store Store, meta Meta, streamType, given string, gen IDGenerator) (string, error) {
	if given != "" {
		return given, nil
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
	return gen(), nil
}
