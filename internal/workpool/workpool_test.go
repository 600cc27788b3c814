package workpool_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"cairn/internal/workpool"
)

// TestPoolReusesWorkersAndLetsThemGo: sequential tasks run on one worker,
// a blocked task holds up none other, and idle workers end.
func TestPoolReusesWorkersAndLetsThemGo(t *testing.T) {
	before := runtime.NumGoroutine()
	p := workpool.New(200 * time.Millisecond)

	for range 100 {
		done := make(chan struct{})
		p.Go(func() { close(done) })
		<-done
		// Let the worker get back to waiting before the next task.
		time.Sleep(time.Millisecond)
	}
	// A pool that did not reuse its workers would hold about a hundred
	// idle ones now; one that does holds one (a few on a busy machine).
	if n := runtime.NumGoroutine() - before; n < 1 || n > 10 {
		t.Errorf("100 tasks one after another left %d idle workers, want 1", n)
	}

	block := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	p.Go(func() { defer wg.Done(); <-block })
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a task waited behind a blocked one")
	}
	close(block)
	wg.Wait()

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine() - before; n > 0 {
		t.Errorf("%d workers still there after their idle time", n)
	}
}

func TestNilPoolRunsTasks(t *testing.T) {
	t.Parallel()
	var p *workpool.Pool
	done := make(chan struct{})
	p.Go(func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a nil pool did not run its task")
	}
}
