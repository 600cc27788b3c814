package eventstore

import "time"

// crowdWindow is how long a crowd of writers is remembered.
const crowdWindow = 50 * time.Millisecond

// crowd remembers the most streams that had appends waiting at once (queued
// or in a batch in flight) over the last one to two windows: how many
// writers could share a batch, as a batch can tell no other way.
type crowd struct {
	// window is crowdWindow, or twice the longest wait for a crowd when
	// that is longer: a crowd forgotten while its batch waited for it
	// split again at once, and every batch after waited out the wait.
	window    time.Duration
	since     time.Time
	cur, prev int
}

func (c *crowd) roll(now time.Time) {
	window := max(c.window, crowdWindow)
	switch age := now.Sub(c.since); {
	case age >= 2*window:
		c.since, c.cur, c.prev = now, 0, 0
	case age >= window:
		c.since, c.cur, c.prev = now, 0, c.cur
	}
}

func (c *crowd) observe(now time.Time, waiting int) {
	c.roll(now)
	c.cur = max(c.cur, waiting)
}

func (c *crowd) peak(now time.Time) int {
	c.roll(now)
	return max(c.cur, c.prev)
}
