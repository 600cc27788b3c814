package eventstore

import "time"

// crowdWindow is how long a crowd of writers is remembered.
const crowdWindow = 50 * time.Millisecond

// crowd remembers the most streams that had appends waiting at once (queued
// or in a batch in flight) over the last one to two crowdWindows: how many
// writers could share a batch, as a batch can tell no other way.
type crowd struct {
	since     time.Time
	cur, prev int
}

func (c *crowd) roll(now time.Time) {
	switch age := now.Sub(c.since); {
	case age >= 2*crowdWindow:
		c.since, c.cur, c.prev = now, 0, 0
	case age >= crowdWindow:
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
