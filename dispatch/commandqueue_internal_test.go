package dispatch

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Commands start in the order they were queued, never more than max at
// once, and every one runs.
func TestCommandQueueRunsInOrderBounded(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{1, 3, 64} {
		q := &commandQueue{max: limit}
		var running, most atomic.Int64
		var mu sync.Mutex
		var started []int
		var wg sync.WaitGroup
		const n = 500
		release := make(chan struct{})
		for i := range n {
			wg.Add(1)
			q.push(func() {
				defer wg.Done()
				now := running.Add(1)
				for {
					m := most.Load()
					if now <= m || most.CompareAndSwap(m, now) {
						break
					}
				}
				mu.Lock()
				started = append(started, i)
				mu.Unlock()
				<-release
				running.Add(-1)
			})
		}
		close(release)
		wg.Wait()
		if got := most.Load(); got > int64(limit) {
			t.Errorf("limit %d: %d commands ran at once", limit, got)
		}
		if len(started) != n {
			t.Fatalf("limit %d: %d of %d commands ran", limit, len(started), n)
		}
		if limit == 1 {
			for i, v := range started {
				if v != i {
					t.Fatalf("limit 1: command %d started %dth", v, i)
				}
			}
		}
		// The workers end once they find the queue empty.
		deadline := time.Now().Add(30 * time.Second)
		for {
			q.mu.Lock()
			left := q.running
			q.mu.Unlock()
			if left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("limit %d: %d workers still running with nothing queued", limit, left)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
