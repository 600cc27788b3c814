package graph

import (
	"sync/atomic"
	"testing"
	"time"
)

type countedGeneration struct{ n atomic.Uint64 }

func (c *countedGeneration) Generation() uint64 { return c.n.Load() }

// With a standby answering queries, the answer cache's generation moves
// every second as well as with the projections, and when queries move
// between the standby and the primary; with it down, only with the
// projections.
func TestStandbyGeneration(t *testing.T) {
	t.Parallel()
	projections := &countedGeneration{}
	var up atomic.Bool
	now := time.Unix(1_000_000, 0)
	g := &standbyGeneration{projections: projections, standbyUp: &up, now: func() time.Time { return now }}
	if got := g.Generation(); got != 0 {
		t.Fatalf("before the projections are ready: %d, want 0 (nothing kept)", got)
	}
	projections.n.Store(5)
	first := g.Generation()
	now = now.Add(3 * time.Second)
	if got := g.Generation(); got != first {
		t.Errorf("standby down, seconds later: %d, want %d", got, first)
	}
	projections.n.Add(1)
	second := g.Generation()
	if second == first {
		t.Errorf("standby down, projections moved: still %d", second)
	}
	up.Store(true)
	third := g.Generation()
	if third == second {
		t.Errorf("standby came up: still %d", third)
	}
	if got := g.Generation(); got != third {
		t.Errorf("standby up, same second: %d, want %d", got, third)
	}
	now = now.Add(time.Second)
	fourth := g.Generation()
	if fourth == third {
		t.Errorf("standby up, a second later: still %d", fourth)
	}
	up.Store(false)
	if got := g.Generation(); got == fourth {
		t.Errorf("standby went down: still %d", got)
	}
}
