package main

import (
	"context"
	"sync"
	"time"
)

// maxInFlight bounds the calls an open loop has started and not yet seen
// end, so that a stalled system under test fails the benchmark rather than
// the machine.
const maxInFlight = 4096

// openLoop calls fire(i) for i = 0, 1, ... at rate calls a second until the
// duration has passed or fire returns false, each call in its own goroutine:
// the arrival rate holds however long each call takes, so a slow system shows
// as latency rather than as a lower rate (a closed loop of N workers can
// never offer more than N per latency). It returns when every call has
// returned, with the time the calls took to issue.
func openLoop(ctx context.Context, rate float64, duration time.Duration, fire func(i int64) bool) time.Duration {
	interval := time.Duration(float64(time.Second) / rate)
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	var stopped sync.Once
	stop := make(chan struct{})
	start := time.Now()
	var i int64
loop:
	for ; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= duration {
			break
		}
		// Sleep only when ahead by more than a millisecond: timers are
		// coarser than the interval, so calls that fall due together go
		// out together and the rate holds on average.
		if wait := time.Until(due); wait > time.Millisecond {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				break loop
			case <-stop:
				break loop
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break loop
		case <-stop:
			break loop
		}
		wg.Add(1)
		go func(i int64) {
			defer func() { <-sem; wg.Done() }()
			if !fire(i) {
				stopped.Do(func() { close(stop) })
			}
		}(i)
	}
	issued := time.Since(start)
	wg.Wait()
	return issued
}
