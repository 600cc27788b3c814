package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"cairn/eventstore"
)

// EntityID picks the id of the entity a creating command addresses: the one
// the caller gave, else the one an earlier run of the same command id chose,
// else a new one from gen. Reusing the earlier id is what lets a retried
// command be recognised: its fingerprint covers the stream, so a fresh id
// would make the retry look like a different command.
func EntityID(ctx context.Context, store *eventstore.Store, meta Meta, streamType, given string, gen IDGenerator) (string, error) {
	if given != "" {
		return given, nil
	}
	if meta.CommandID != "" {
		var stream string
		err := store.Pool().QueryRow(ctx,
			`SELECT stream_id FROM events WHERE command_id = $1 AND stream_type = $2 ORDER BY position LIMIT 1`,
			meta.CommandID, streamType).Scan(&stream)
		switch {
		case err == nil:
			return strings.TrimPrefix(stream, streamType+"-"), nil
		case !errors.Is(err, pgx.ErrNoRows):
			return "", fmt.Errorf("look up command %q: %w", meta.CommandID, err)
		}
	}
	if gen == nil {
		return "", errors.New("no id was given and the handler has no id generator")
	}
	return gen(), nil
}
