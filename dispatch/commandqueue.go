package dispatch

import "sync"

// commandQueue runs the dispatcher's commands in the order they were
// decided, at most max at once. The commands wait in a queue, not each on
// a goroutine of its own: a fan-out to 10,000 nodes decides 10,000 leases
// in one pass, and as many goroutines waiting for their turn held stacks
// the collector scanned again and again until the last was appended.
type commandQueue struct {
	max int

	mu      sync.Mutex
	queued  []func()
	running int
}

// push queues run, starting a worker if fewer than max are running.
func (q *commandQueue) push(run func()) {
	q.mu.Lock()
	q.queued = append(q.queued, run)
	start := q.running < q.max
	if start {
		q.running++
	}
	q.mu.Unlock()
	if start {
		go q.work()
	}
}

// work runs queued commands until none is left.
func (q *commandQueue) work() {
	for {
		q.mu.Lock()
		if len(q.queued) == 0 {
			q.running--
			q.queued = nil // the array of a large burst is not kept
			q.mu.Unlock()
			return
		}
		run := q.queued[0]
		q.queued[0] = nil
		q.queued = q.queued[1:]
		q.mu.Unlock()
		run()
	}
}
