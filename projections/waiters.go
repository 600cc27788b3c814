package projections

import (
	"container/heap"

	"cairn/eventstore"
)

// waiters are WaitFor calls parked until every projection has applied their
// cursor, in a heap by cursor: progress releases exactly the calls it
// satisfies, however many clients wait, instead of waking them all to look.
type waiters []*waiter

type waiter struct {
	cursor eventstore.Cursor
	done   chan struct{}
}

func (w waiters) Len() int           { return len(w) }
func (w waiters) Less(i, j int) bool { return w[i].cursor.Less(w[j].cursor) }
func (w waiters) Swap(i, j int)      { w[i], w[j] = w[j], w[i] }
func (w *waiters) Push(x any)        { *w = append(*w, x.(*waiter)) }
func (w *waiters) Pop() any {
	old := *w
	n := len(old)
	x := old[n-1]
	old[n-1] = nil
	*w = old[:n-1]
	return x
}

// release closes the waiters of cursors at or before frontier.
func (w *waiters) release(frontier eventstore.Cursor) {
	for w.Len() > 0 && !frontier.Less((*w)[0].cursor) {
		close(heap.Pop(w).(*waiter).done)
	}
}

// wait parks a waiter for c.
func (w *waiters) wait(c eventstore.Cursor) *waiter {
	x := &waiter{cursor: c, done: make(chan struct{})}
	heap.Push(w, x)
	return x
}
