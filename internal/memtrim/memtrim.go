// Package memtrim gives memory back after a burst of work. The Go runtime
// frees garbage when it collects, collects when the program allocates, and
// returns free memory to the system only down to what its last collection
// set as the heap's goal: a server that goes quiet after a flood keeps the
// flood's heap resident until allocations bring the next collection, which
// for a quiet server can be minutes away. Run looks every interval and,
// when the server is quiet (no collection and little allocated since the
// last look) while the heap holds much more than its live objects, collects
// and returns the free memory once.
package memtrim

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// DefaultInterval is how often Run looks.
const DefaultInterval = 10 * time.Second

const (
	// minExcess is the memory beyond the live heap worth giving back.
	minExcess = 16 << 20
	// quietAllocs is the most a quiet server allocates between two looks:
	// a busy one collects on its own soon enough.
	quietAllocs = 4 << 20
)

// Sample is what a look at the runtime reads.
type Sample struct {
	Collections uint64 // completed since the program started
	Allocated   uint64 // bytes allocated since the program started
	Held        uint64 // bytes of heap memory held from the system: objects, unused room in spans, free pages not yet returned
	Live        uint64 // bytes of the heap found live by the last collection
}

// Due says whether to collect and return memory now: no collection and
// under quietAllocs allocated since the last sample, and the heap holding
// more than its live objects by half of them and by at least minExcess.
func Due(last, now Sample) bool {
	if now.Collections != last.Collections || now.Allocated-last.Allocated >= quietAllocs {
		return false
	}
	excess := int64(now.Held) - int64(now.Live)
	return excess >= minExcess && excess >= int64(now.Live/2)
}

// Read samples the runtime.
func Read() Sample {
	s := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() == metrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	return Sample{Collections: v(0), Allocated: v(1), Held: v(2) + v(3) + v(4), Live: v(5)}
}

// Run looks every interval until ctx ends.
func Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last := Read()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := Read()
		if Due(last, now) {
			debug.FreeOSMemory()
			now = Read()
		}
		last = now
	}
}
