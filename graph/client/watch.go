package client

import (
	"context"
	"io"
	"sync"
)

// readWatch ends a subscription's waiting read when the context of the
// call that waits ends (abort closes the connection under the read).
//
// It registers with a context once, not once for each result: a
// subscriber of a busy log passes the same context to thousands of calls a
// second, and registering and removing a callback each time took a tenth
// of its time. The registration outlives the call, so the callback acts
// only while a call with that context waits; a later call with a context
// that ended returns at once.
type readWatch struct {
	abort func()

	mu      sync.Mutex
	done    <-chan struct{} // the Done of the context registered with
	stop    func() bool     // removes the registration
	waiting bool            // a call with that context waits
}

// begin marks a call with ctx as waiting and returns ctx's error, if it
// has ended already; end must follow either way.
func (w *readWatch) begin(ctx context.Context) error {
	done := ctx.Done()
	if done == nil {
		return nil // never ends
	}
	w.mu.Lock()
	if done != w.done {
		// Contexts that share a Done end together: comparing it, not the
		// contexts, also keeps a context type that cannot be compared
		// from panicking here.
		if w.stop != nil {
			w.stop()
		}
		w.done = done
		w.stop = context.AfterFunc(ctx, func() {
			w.mu.Lock()
			act := w.waiting && w.done == done
			w.mu.Unlock()
			if act {
				w.abort()
			}
		})
	}
	w.waiting = true
	w.mu.Unlock()
	// After waiting is set: a context that ends from here on aborts the
	// read, and one that ended before is seen now.
	return ctx.Err()
}

// beginRead is begin for a read of the network about to be made: when it
// fails, the read is not made, and the call is marked ended at once.
func (w *readWatch) beginRead(ctx context.Context) error {
	if err := w.begin(ctx); err != nil {
		w.end()
		return err
	}
	return nil
}

// end marks the call as no longer waiting.
func (w *readWatch) end() {
	w.mu.Lock()
	w.waiting = false
	w.mu.Unlock()
}

// close removes the registration, if any.
func (w *readWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		w.stop()
		w.stop, w.done = nil, nil
	}
}

// watchedReader brackets each read of r, the network under a subscription,
// with begin and end (when set): what has to be armed only while a read
// waits for the server (readWatch, an idle timer) is armed once for each
// read of the network, not once for each result. A burst of results comes
// in one read, and the rest of it is taken from the buffer without waiting:
// armed for each result, the watch alone was a tenth of a subscriber's
// time under a flood. begin's error is the read's.
type watchedReader struct {
	r     io.Reader
	begin func() error
	end   func()
}

func (w *watchedReader) Read(p []byte) (int, error) {
	if w.begin == nil {
		return w.r.Read(p)
	}
	if err := w.begin(); err != nil {
		return 0, err
	}
	defer w.end()
	return w.r.Read(p)
}
