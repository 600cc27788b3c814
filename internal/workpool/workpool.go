// Package workpool runs short tasks on goroutines kept between them.
//
// A goroutine starts with a small stack and grows it by copying as its
// calls go deeper. A task that runs the GraphQL executor, say, grows it
// several times, and delivering one event to each of many subscribers on
// fresh goroutines spent a tenth of the server's time copying stacks. A
// worker kept for the next task keeps the stack it grew.
package workpool

import "time"

// Pool hands tasks to idle workers. It never queues a task: with no worker
// idle it starts one, so a task that blocks (a write to a slow client)
// holds up no other. Workers idle for longer than the pool's idle time
// end, so a quiet server holds none. The zero Pool, and a nil one, start a
// goroutine per task.
type Pool struct {
	tasks chan func()
	idle  time.Duration
}

// New returns a pool whose workers end after idle without a task.
func New(idle time.Duration) *Pool {
	return &Pool{tasks: make(chan func()), idle: idle}
}

// Go runs f on an idle worker, or on a new one.
func (p *Pool) Go(f func()) {
	if p == nil || p.tasks == nil {
		go f()
		return
	}
	select {
	case p.tasks <- f:
	default:
		go p.work(f)
	}
}

func (p *Pool) work(f func()) {
	f()
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		select {
		case f := <-p.tasks:
			f()
			t.Reset(p.idle)
		case <-t.C:
			return
		}
	}
}
