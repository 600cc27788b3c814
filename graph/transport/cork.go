package transport

import (
	"errors"
	"net"
	"sync"
	"time"

	"cairn/internal/wsframe"
)

// corkLimit is how much a corked connection holds back before it writes
// anyway: enough for a burst of a subscription's results, small enough
// that a long burst reaches the peer as it goes.
const corkLimit = 32 << 10

// corkConn holds back what is written to a connection while it is corked
// and writes it in one piece when the last cork comes out. A subscriber
// sent a burst of results (the events of one commit) then costs one system
// call on each side, not one per result: with hundreds of subscribers, the
// calls were a fifth of the server's time, and as much of each client's.
//
// Writes while uncorked go straight through, so a connection that nobody
// corks behaves as the plain one.
type corkConn struct {
	net.Conn
	buffers *heldBuffers // a connection's while it holds back

	mu    sync.Mutex
	corks int
	held  *[]byte // what waits for the last cork to come out; nil when none
	err   error   // the write that failed: the connection is closed
	// sealed is set once the WebSocket's close handshake began: no message
	// of writeText may follow its close frame.
	sealed bool

	// Reading (awaitRead, Read), one read of the peer at a time.
	readMu sync.Mutex
	// ahead is the byte awaitRead read while waiting (aheadN of it), and
	// aheadErr what ended that read: Read hands them on first.
	ahead    [1]byte
	aheadN   int
	aheadErr error
}

// errSealed is a message refused because the connection is closing.
var errSealed = errors.New("the WebSocket is closing")

// heldBuffers recycles the buffers of bursts (and of the messages in
// them): a connection holds one only while it is corked or writing, so
// thousands of waiting ones hold none.
type heldBuffers struct{ pool sync.Pool }

func newHeldBuffers() *heldBuffers {
	return &heldBuffers{pool: sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}}
}

// get returns an empty buffer.
func (h *heldBuffers) get() *[]byte { return h.pool.Get().(*[]byte) }

// put gives a buffer back, unless it grew past twice corkLimit: one
// message past the limit is kept, no giant.
func (h *heldBuffers) put(b *[]byte) {
	if cap(*b) <= 2*corkLimit {
		*b = (*b)[:0]
		h.pool.Put(b)
	}
}

// awaitRead waits until the peer sends something, reading its first byte
// for Read to hand on. A connection's reader waits here between messages,
// on a shallow stack, rather than deep in the WebSocket library's frame
// read: the garbage collector shrinks a waiting goroutine's stack only
// while it uses under a quarter of it, and the reader of each of 10,000
// idle agents held 8 KiB of stack where 2 to 4 serve.
func (c *corkConn) awaitRead() {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.aheadN > 0 || c.aheadErr != nil {
		return
	}
	c.aheadN, c.aheadErr = c.Conn.Read(c.ahead[:])
}

// Read reads from the peer, first what awaitRead read ahead. A read from
// elsewhere (the WebSocket library's close handshake) waits for a waiting
// awaitRead, so that the bytes reach the library in order.
func (c *corkConn) Read(p []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	switch {
	case len(p) == 0:
		return 0, nil
	case c.aheadN > 0:
		p[0] = c.ahead[0]
		c.aheadN = 0
		return 1, nil
	case c.aheadErr != nil:
		err := c.aheadErr
		c.aheadErr = nil
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.corks == 0 {
		return c.writeLocked(p)
	}
	if c.held == nil {
		c.held = c.buffers.get()
	}
	*c.held = append(*c.held, p...)
	if len(*c.held) >= corkLimit {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// writeText writes one WebSocket text message, framed here rather than by
// the WebSocket library: a subscriber following a busy log is sent
// thousands of messages a second, and the library's locks and buffering
// around each were a tenth of the server's time under a flood with two
// hundred subscribers. The message goes whole into one write or into what
// a cork holds back, so it never interleaves with the library's own
// frames (pongs, close), which it also writes whole: they are far smaller
// than its buffer. Server frames are not masked, and the connection
// negotiates no compression.
func (c *corkConn) writeText(p []byte) error {
	return c.writeWhole(func(b []byte) []byte { return appendTextFrame(b, p) })
}

// writeFrames writes whole frames made already (keptRuns), as writeText
// writes one.
func (c *corkConn) writeFrames(frames []byte) error {
	return c.writeWhole(func(b []byte) []byte { return append(b, frames...) })
}

// writeWhole writes what add appends in one piece: into what a cork holds
// back, or in one write when none does.
func (c *corkConn) writeWhole(add func([]byte) []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.err != nil:
		return c.err
	case c.sealed:
		return errSealed
	case c.corks == 0:
		b := c.buffers.get()
		defer c.buffers.put(b)
		*b = add(*b)
		_, err := c.writeLocked(*b)
		return err
	}
	if c.held == nil {
		c.held = c.buffers.get()
	}
	*c.held = add(*c.held)
	if len(*c.held) >= corkLimit {
		return c.flushLocked()
	}
	return nil
}

// seal refuses writeText from now on: the close handshake begins.
func (c *corkConn) seal() {
	c.mu.Lock()
	c.sealed = true
	c.mu.Unlock()
}

// appendTextFrame appends p as one final, unmasked text frame.
func appendTextFrame(b, p []byte) []byte {
	return append(wsframe.AppendHeader(b, wsframe.Text, len(p), nil), p...)
}

// cork holds back writes until as many uncork calls have been made.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corks++
	c.mu.Unlock()
}

// uncork removes one cork, and writes what was held back with the last.
// A write that fails closes the connection: its reader then ends it.
func (c *corkConn) uncork() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corks--
	if c.corks == 0 && c.err == nil {
		_ = c.flushLocked()
	}
}

// flushLocked writes what is held back. Called with c.mu held.
func (c *corkConn) flushLocked() error {
	if c.held == nil {
		return nil
	}
	b := c.held
	c.held = nil
	defer c.buffers.put(b)
	if len(*b) == 0 {
		return nil
	}
	_, err := c.writeLocked(*b)
	return err
}

// writeLocked writes to the peer within writeTimeout: every write to the
// connection passes here, so the messages above it need no deadline of
// their own (a context with a timeout for each cost a timer and more).
// A write that fails closes the connection. Called with c.mu held.
func (c *corkConn) writeLocked(p []byte) (int, error) {
	err := c.Conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	n := 0
	if err == nil {
		n, err = c.Conn.Write(p)
	}
	if err != nil {
		c.err = err
		c.Conn.Close()
	}
	return n, err
}
