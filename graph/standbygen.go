package graph

import (
	"sync"
	"sync/atomic"
	"time"

	"cairn/graph/transport"
)

// standbyGeneration keys the answer cache when queries may read a standby.
// An answer read there shows the read models as far as the standby has
// replayed them, which the projections' generation says nothing about: the
// generation can hold still while the standby catches up, and an answer it
// gave before would be served on. While the standby answers queries, the
// generation here also moves every second, so such an answer is kept for a
// second at most, beyond the standby's own lag; it moves too when queries
// go from one database to the other.
type standbyGeneration struct {
	projections transport.Generationer
	standbyUp   *atomic.Bool
	now         func() time.Time

	mu         sync.Mutex
	projected  uint64 // the projections' generation last seen
	up         bool   // whether the standby was answering queries then
	second     int64  // the second last seen while the standby was up
	generation uint64
}

func (g *standbyGeneration) Generation() uint64 {
	p := g.projections.Generation()
	if p == 0 {
		return 0 // not ready: nothing is kept
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	up := g.standbyUp.Load()
	moved := p != g.projected || up != g.up
	if up {
		if s := g.now().Unix(); s != g.second {
			g.second, moved = s, true
		}
	}
	if moved || g.generation == 0 {
		g.projected, g.up = p, up
		g.generation++
	}
	return g.generation
}
