package eventstore

import (
	"crypto/sha256"
	"math"
	"slices"
	"sync"
)

// head is a stream's last committed version and hash.
type head struct {
	version int64
	hash    []byte
}

// headCache remembers stream heads this process committed or read, so an
// append can chain its hash without reading the stream first. It can only
// fall behind the database (versions only grow); a stale entry shows up as a
// unique violation and the append retries with fresh heads.
//
// The heads live in one array, each with its hash inline, and the only
// pointer in an entry is its stream's name: a full cache (100,000 heads)
// kept as a list of small objects was most of what a busy server's live
// heap grew by, and every garbage collection walked it, which took twice
// the collector's usual share of the server once the cache had filled.
// Which head goes when it is full is chosen by a clock, as an
// approximation of the least recently used: a head read or written since
// the hand last passed it is passed over once.
type headCache struct {
	mu    sync.Mutex
	max   int
	slots map[string]int32 // stream → index in heads
	heads []cachedHead
	hand  int // the next slot the clock looks at once the cache is full
}

// cachedHead is one slot; a slot whose stream is "" is free.
type cachedHead struct {
	stream  string
	version int64
	hash    [sha256.Size]byte
	used    bool // read or written since the hand last passed
}

// newHeadCache keeps up to size heads (at least one, at most what an int32
// counts).
func newHeadCache(size int) *headCache {
	return &headCache{max: min(max(size, 1), math.MaxInt32), slots: make(map[string]int32)}
}

// get returns the cached head of stream; its hash is the caller's.
func (c *headCache) get(stream string) (head, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.slots[stream]
	if !ok {
		return head{}, false
	}
	s := &c.heads[i]
	s.used = true
	return head{version: s.version, hash: append([]byte(nil), s.hash[:]...)}, true
}

// put remembers h as stream's head. A hash of another length than the
// log's is not remembered: the stream's head is then read when needed.
func (c *headCache) put(stream string, h head) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.slots[stream]
	if len(h.hash) != sha256.Size {
		if ok {
			c.free(i)
		}
		return
	}
	if !ok {
		i = c.slot()
		c.slots[stream] = i
	}
	s := &c.heads[i]
	s.stream, s.version, s.used = stream, h.version, true
	copy(s.hash[:], h.hash)
}

// slot returns a slot for a new head: a new one while the cache is not
// full, else the first the clock finds unused since it last passed, whose
// head is forgotten. Called with c.mu held.
func (c *headCache) slot() int32 {
	if len(c.heads) < c.max {
		if len(c.heads) == cap(c.heads) {
			// Grown to the size at most: appending past it would
			// double a full cache's array once more.
			c.heads = slices.Grow(c.heads, min(max(len(c.heads), 64), c.max-len(c.heads)))
		}
		c.heads = append(c.heads, cachedHead{})
		return int32(len(c.heads) - 1)
	}
	for {
		i := c.hand
		c.hand = (c.hand + 1) % len(c.heads)
		s := &c.heads[i]
		if s.used {
			s.used = false
			continue
		}
		if s.stream != "" {
			delete(c.slots, s.stream)
		}
		*s = cachedHead{}
		return int32(i)
	}
}

// free empties slot i, which the clock hands out when it next reaches it.
// Called with c.mu held.
func (c *headCache) free(i int32) {
	delete(c.slots, c.heads[i].stream)
	c.heads[i] = cachedHead{}
}

func (c *headCache) forget(stream string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.slots[stream]; ok {
		c.free(i)
	}
}
