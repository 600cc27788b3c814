package commands

import (
	"time"

	"cairn/domain"
	"cairn/eventstore"
)

// Clock tells handlers the time of a command; the domain never reads a clock.
type Clock func() time.Time

// IDGenerator makes a new entity id when the caller supplied none.
type IDGenerator func() string

// Outcome is what a handler returns: where its events landed and the id of
// the entity it created or changed, so a caller that let the server choose
// the id learns it.
type Outcome struct {
	Result
	ID string
}

// ResultFor turns an append's result into the Result of one of its streams.
func ResultFor(res eventstore.AppendResult, streamType, id string) Result {
	return fromAppend(res, domain.StreamID(streamType, id))
}

// IDIn returns the id of the first stream of streamType an append wrote to.
func IDIn(res eventstore.AppendResult, streamType string) (string, bool) {
	for _, s := range res.Streams {
		if id, ok := domain.EntityID(streamType, s.StreamID); ok {
			return id, true
		}
	}
	return "", false
}
