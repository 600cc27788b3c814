package commands

import (
	"slices"

	lru "github.com/hashicorp/golang-lru/v2"

	"cairn/domain"
)

// StreamCache is a Store that remembers the decoded events of the streams
// its commands last read or wrote, so that the next command on such a
// stream decides without reading and decoding it again: a job's lease,
// start and finish come within moments of each other, thousands at once in
// a fan-out.
//
// What it remembers may be behind the log: another replica, or a write not
// made through Execute, may have moved the stream on. That costs a retry,
// never a wrong answer: Execute appends only with the version it decided
// at, so the log refuses a decision made on a stale history, and a decision
// that appends nothing or refuses is made again from a fresh read before it
// is answered.
type StreamCache struct {
	Store
	recent *lru.Cache[string, history]
}

// history is a stream's events as decoded, its version and the tenant it
// was created in.
type history struct {
	events  []domain.Event
	version int64
	tenant  string
}

// NewStreamCache wraps store with a cache of the size most recent streams.
func NewStreamCache(store Store, size int) *StreamCache {
	recent, err := lru.New[string, history](max(size, 1))
	if err != nil {
		panic(err) // only for a size below one, which max rules out
	}
	return &StreamCache{Store: store, recent: recent}
}

// streamMemory is what Execute asks of a Store that remembers streams.
type streamMemory interface {
	recall(streamID string) (history, bool)
	remember(streamID string, h history)
	forget(streamID string)
}

func (c *StreamCache) recall(streamID string) (history, bool) { return c.recent.Get(streamID) }

func (c *StreamCache) remember(streamID string, h history) {
	// The slice is shared by every command that recalls it; each folds it
	// into a state of its own, and none appends to it in place.
	h.events = slices.Clip(h.events)
	c.recent.Add(streamID, h)
}

func (c *StreamCache) forget(streamID string) { c.recent.Remove(streamID) }

// Wrote tells the cache of events appended to a stream outside Execute, at
// the version after (0: they begin it), in the tenant given: the
// dispatcher spawns a fan-out's children and decides leases from its own
// state, and an agent's start and finish follow within moments. The events
// are remembered after the history held at that version, or as the whole
// history of a new stream; a stream held at another version is forgotten,
// and one not held stays so, as its history is not all here.
func (c *StreamCache) Wrote(streamID string, after int64, tenant string, events []domain.Event) {
	if after == 0 {
		c.remember(streamID, history{events: slices.Clone(events), version: int64(len(events)), tenant: tenant})
		return
	}
	h, ok := c.recall(streamID)
	switch {
	case !ok:
	case h.version == after:
		c.remember(streamID, history{events: slices.Concat(h.events, events), version: after + int64(len(events)), tenant: h.tenant})
	default:
		c.forget(streamID)
	}
}
