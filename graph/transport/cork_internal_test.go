package transport

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// A read made while the reader waits in awaitRead (the WebSocket library's
// close handshake, on a goroutine of its own) gets the peer's bytes in
// order, the one awaitRead took first; and what ended the wait reaches the
// next read.
func TestCorkConnReadsInOrderAroundAWait(t *testing.T) {
	t.Parallel()
	server, peer := net.Pipe()
	defer peer.Close()
	c := &corkConn{Conn: server, buffers: newHeldBuffers()}
	waited := make(chan struct{})
	go func() {
		c.awaitRead()
		close(waited)
	}()
	// The reader waits first: awaitRead holds the read lock while it waits.
	for c.readMu.TryLock() {
		c.readMu.Unlock()
		time.Sleep(time.Millisecond)
	}
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(c, 5))
		read <- b
	}()
	// Then the handshake's read comes: with the lock taken, it waits for
	// awaitRead whenever it starts.
	time.Sleep(20 * time.Millisecond)
	go peer.Write([]byte("hello")) // a pipe's write waits for the reads
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("awaitRead still waits after the peer wrote")
	}
	select {
	case got := <-read:
		if string(got) != "hello" {
			t.Fatalf("read %q, want %q", got, "hello")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read still waits for bytes the peer wrote")
	}

	// The wait ends with the connection; the next read says why.
	done := make(chan struct{})
	go func() {
		c.awaitRead()
		close(done)
	}()
	peer.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("awaitRead still waits after the peer closed")
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after the peer closed: %v, want EOF", err)
	}
}
