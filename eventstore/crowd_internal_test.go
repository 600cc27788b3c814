package eventstore

import (
	"testing"
	"time"
)

func TestCrowdRemembersThePeakForAWhile(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tests := []struct {
		name     string
		observed map[time.Duration]int
		asked    time.Duration
		want     int
	}{
		{"nothing seen", nil, 0, 0},
		{"the most at once", map[time.Duration]int{0: 3, time.Millisecond: 5, 2 * time.Millisecond: 2}, 3 * time.Millisecond, 5},
		{"kept through the next window", map[time.Duration]int{0: 6}, crowdWindow + time.Millisecond, 6},
		{"forgotten after two", map[time.Duration]int{0: 6}, 2*crowdWindow + time.Millisecond, 0},
		{"a later, smaller crowd outlives it", map[time.Duration]int{0: 6, crowdWindow + time.Millisecond: 2}, 2*crowdWindow + 2*time.Millisecond, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := crowd{since: t0}
			// Observed in time order, as the appender does.
			for d := time.Duration(0); d <= tt.asked; d += time.Millisecond {
				if n, ok := tt.observed[d]; ok {
					c.observe(at(d), n)
				}
			}
			if got := c.peak(at(tt.asked)); got != tt.want {
				t.Errorf("peak = %d, want %d", got, tt.want)
			}
		})
	}
}
