package eventstore

import (
	"bytes"
	"fmt"
	"testing"
)

func hashOf(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestHeadCache(t *testing.T) {
	t.Parallel()
	type step struct {
		op      string // put, get, forget
		stream  string
		version int64
		hash    []byte
		want    bool // get: found
	}
	tests := []struct {
		name  string
		size  int
		steps []step
	}{
		{"a head put is read back", 4, []step{
			{op: "put", stream: "a", version: 3, hash: hashOf(1)},
			{op: "get", stream: "a", version: 3, hash: hashOf(1), want: true},
			{op: "get", stream: "b", want: false},
		}},
		{"a later put replaces the head", 4, []step{
			{op: "put", stream: "a", version: 3, hash: hashOf(1)},
			{op: "put", stream: "a", version: 4, hash: hashOf(2)},
			{op: "get", stream: "a", version: 4, hash: hashOf(2), want: true},
		}},
		{"a forgotten head is gone and its slot reused", 2, []step{
			{op: "put", stream: "a", version: 1, hash: hashOf(1)},
			{op: "put", stream: "b", version: 1, hash: hashOf(2)},
			{op: "forget", stream: "a"},
			{op: "get", stream: "a", want: false},
			{op: "put", stream: "c", version: 5, hash: hashOf(3)},
			{op: "get", stream: "c", version: 5, hash: hashOf(3), want: true},
			{op: "get", stream: "b", version: 1, hash: hashOf(2), want: true},
		}},
		{"a hash of another length is not kept, and drops the head", 4, []step{
			{op: "put", stream: "a", version: 1, hash: hashOf(1)},
			{op: "put", stream: "a", version: 2, hash: []byte{1, 2}},
			{op: "get", stream: "a", want: false},
		}},
		{"when full, a head used since the hand passed stays", 3, []step{
			{op: "put", stream: "a", version: 1, hash: hashOf(1)},
			{op: "put", stream: "b", version: 1, hash: hashOf(2)},
			{op: "put", stream: "c", version: 1, hash: hashOf(3)},
			// The hand passes all three (used once put), clearing them,
			// and takes a's slot.
			{op: "put", stream: "d", version: 1, hash: hashOf(4)},
			{op: "get", stream: "a", want: false},
			// b is read, so the next new head takes c's slot.
			{op: "get", stream: "b", version: 1, hash: hashOf(2), want: true},
			{op: "put", stream: "e", version: 1, hash: hashOf(5)},
			{op: "get", stream: "c", want: false},
			{op: "get", stream: "b", version: 1, hash: hashOf(2), want: true},
			{op: "get", stream: "d", version: 1, hash: hashOf(4), want: true},
			{op: "get", stream: "e", version: 1, hash: hashOf(5), want: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newHeadCache(tt.size)
			for i, s := range tt.steps {
				switch s.op {
				case "put":
					c.put(s.stream, head{version: s.version, hash: s.hash})
				case "forget":
					c.forget(s.stream)
				case "get":
					h, ok := c.get(s.stream)
					if ok != s.want {
						t.Fatalf("step %d: get(%q) found %v, want %v", i, s.stream, ok, s.want)
					}
					if ok && (h.version != s.version || !bytes.Equal(h.hash, s.hash)) {
						t.Fatalf("step %d: get(%q) = %d %x, want %d %x", i, s.stream, h.version, h.hash, s.version, s.hash)
					}
				}
			}
		})
	}
}

// The hash get returns is the caller's: a later put does not change it, and
// changing it does not change the cache.
func TestHeadCacheHashIsTheCallers(t *testing.T) {
	t.Parallel()
	c := newHeadCache(2)
	c.put("a", head{version: 1, hash: hashOf(1)})
	h, _ := c.get("a")
	c.put("a", head{version: 2, hash: hashOf(2)})
	if !bytes.Equal(h.hash, hashOf(1)) {
		t.Fatalf("a head read before a put changed to %x", h.hash)
	}
	h, _ = c.get("a")
	h.hash[0] = 9
	if again, _ := c.get("a"); !bytes.Equal(again.hash, hashOf(2)) {
		t.Fatalf("changing a read head changed the cache: %x", again.hash)
	}
}

// A cache filled many times over holds its size, and every head it holds
// is the last one put for its stream.
func TestHeadCacheStaysBounded(t *testing.T) {
	t.Parallel()
	const size = 1000
	c := newHeadCache(size)
	last := map[string]int64{}
	for i := range 10 * size {
		stream := fmt.Sprintf("s-%d", i%(3*size))
		c.put(stream, head{version: int64(i), hash: hashOf(byte(i))})
		last[stream] = int64(i)
	}
	if len(c.slots) != size || len(c.heads) != size {
		t.Fatalf("cache of %d holds %d slots, %d heads", size, len(c.slots), len(c.heads))
	}
	for stream, i := range c.slots {
		h := c.heads[i]
		if h.stream != stream || h.version != last[stream] || h.hash[0] != byte(last[stream]) {
			t.Fatalf("slot %d of %q holds %q at %d, want %d", i, stream, h.stream, h.version, last[stream])
		}
	}
}

// A full cache's array holds its size (rounded up to the allocator's
// pages), not twice the last size it grew from.
func TestHeadCacheArrayStopsAtItsSize(t *testing.T) {
	t.Parallel()
	const size = 100_000 // plain appends would reach 111,872
	c := newHeadCache(size)
	for i := range size {
		c.put(fmt.Sprintf("s-%d", i), head{version: 1, hash: hashOf(1)})
	}
	if cap(c.heads) > size+size/20 {
		t.Fatalf("a cache of %d holds an array of %d", size, cap(c.heads))
	}
}
