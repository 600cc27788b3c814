package memtrim

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestDue(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, c := range []struct {
		name      string
		last, now Sample
		want      bool
	}{
		{"a collection came: the runtime is at work", Sample{Collections: 1}, Sample{Collections: 2, Held: 200 * mib, Live: 50 * mib}, false},
		{"busy: allocating", Sample{Collections: 2}, Sample{Collections: 2, Allocated: 40 * mib, Held: 200 * mib, Live: 50 * mib}, false},
		{"quiet after a flood, its heap still held", Sample{Collections: 2, Allocated: 900 * mib}, Sample{Collections: 2, Allocated: 901 * mib, Held: 200 * mib, Live: 50 * mib}, true},
		{"quiet, little held beyond the live heap", Sample{Collections: 2}, Sample{Collections: 2, Held: 60 * mib, Live: 50 * mib}, false},
		{"quiet, the excess small beside a big live heap", Sample{Collections: 2}, Sample{Collections: 2, Held: 600 * mib, Live: 500 * mib}, false},
		{"quiet, under the floor", Sample{Collections: 2}, Sample{Collections: 2, Held: 12 * mib, Live: 2 * mib}, false},
	} {
		if got := Due(c.last, c.now); got != c.want {
			t.Errorf("%s: Due = %v, want %v", c.name, got, c.want)
		}
	}
}

// After a burst of garbage and quiet, Run collects. Automatic collections
// are off here, so the collection is Run's.
func TestRunCollectsAfterABurst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	done := make(chan struct{})
	go func() { defer close(done); Run(ctx, 50*time.Millisecond) }()
	time.Sleep(20 * time.Millisecond) // Run takes its first sample
	before := Read().Collections
	for range 64 {
		sink = make([]byte, 1<<20)
	}
	sink = nil
	deadline := time.Now().Add(5 * time.Second)
	for Read().Collections == before {
		if time.Now().After(deadline) {
			t.Fatal("no collection within 5 s of 64 MiB of garbage")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// sink keeps the burst's allocations from being optimised away.
var sink []byte
