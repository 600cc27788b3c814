package client

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cairn/internal/wsframe"
)

// wsConn is the client's end of a WebSocket (RFC 6455), read and written
// here rather than through a general library: a subscriber of a busy log
// reads thousands of small messages a second, and the library's read of
// each (two channel-based locks, a reader handed out per message) cost it
// twice what the same results cost over server-sent events. No extension
// is offered, so frames are plain; the server's are never masked, the
// client's always are.
type wsConn struct {
	rwc io.ReadWriteCloser
	rd  *wsframe.Reader
	// src is what rd reads from: rwc, its reads watched once the
	// subscription sets how.
	src *watchedReader

	wmu     sync.Mutex // one frame written at a time
	wbuf    []byte     // a frame being written, kept while small
	closing bool       // a close frame was written: nothing follows it

	closeOnce sync.Once
}

const (
	// wsReadLimit is the largest message the client reads.
	wsReadLimit = 64 << 20
	// wsBuffer is what a connection's read starts with, and wsBufferMax
	// what it grows to while the server writes faster than it is read.
	wsBuffer    = 4 << 10
	wsBufferMax = 64 << 10
	// wsKeptWrite is the largest frame buffer a connection keeps.
	wsKeptWrite = 16 << 10
	// wsGrowStep is how much of a long frame is read at a time.
	wsGrowStep = 1 << 20
	// wsWriteTimeout bounds a write the server does not take.
	wsWriteTimeout = 30 * time.Second
)

// dialWS opens a WebSocket to the http or https URL u speaking
// subprotocol, through hc (whose timeout, if any, the caller removed: the
// connection outlives it). The response is returned whenever one came, so
// the caller can tell a refused token from a broken server.
func dialWS(ctx context.Context, hc *http.Client, u string, header http.Header, subprotocol string) (*wsConn, *http.Response, error) {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header = header.Clone()
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", key)
	req.Header.Set("Sec-WebSocket-Protocol", subprotocol)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	fail := func(format string, args ...any) (*wsConn, *http.Response, error) {
		resp.Body.Close()
		return nil, resp, fmt.Errorf(format, args...)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return fail("the server answered %s, not 101 Switching Protocols", resp.Status)
	}
	if !headerHas(resp.Header, "Connection", "upgrade") || !headerHas(resp.Header, "Upgrade", "websocket") {
		return fail("the server's answer does not upgrade the connection to a WebSocket")
	}
	if resp.Header.Get("Sec-WebSocket-Accept") != wsframe.AcceptKey(key) {
		return fail("the server's Sec-WebSocket-Accept does not answer the key sent")
	}
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
		return fail("the server chose extension %q, which was not offered", ext)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != subprotocol {
		return fail("the server speaks %q, not %s", got, subprotocol)
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		return fail("the upgraded connection cannot be written (%T)", resp.Body)
	}
	src := &watchedReader{r: rwc}
	return &wsConn{rwc: rwc, rd: wsframe.NewReader(src, wsBuffer, wsBufferMax), src: src}, resp, nil
}

// headerHas says whether the header name lists token, in any case.
func headerHas(h http.Header, name, token string) bool {
	for t := range wsframe.HeaderTokens(h, name) {
		if strings.EqualFold(t, token) {
			return true
		}
	}
	return false
}

// readMessage appends the next text or binary message to dst[:0] and
// returns it. Pings on the way are answered. A close from the server is
// answered and returned as a *CloseError; a frame that breaks the protocol
// closes the connection (1002), and a message past wsReadLimit too (1009).
func (c *wsConn) readMessage(dst []byte) ([]byte, error) {
	dst = dst[:0]
	started := false
	for {
		h, err := c.rd.Header()
		if err != nil {
			if errors.Is(err, wsframe.ErrProtocol) {
				c.close(wsframe.StatusProtocolError, "protocol violation")
			}
			return dst, err
		}
		if h.Masked {
			c.close(wsframe.StatusProtocolError, "masked frame")
			return dst, fmt.Errorf("%w: the server masked a frame", wsframe.ErrProtocol)
		}
		if h.Op.Control() {
			var p [wsframe.MaxControl]byte
			payload := p[:h.Len]
			if err := c.rd.ReadFull(payload); err != nil {
				return dst, err
			}
			switch h.Op {
			case wsframe.Ping:
				ctx, cancel := context.WithTimeout(context.Background(), wsWriteTimeout)
				err := c.write(ctx, wsframe.Pong, payload)
				cancel()
				if err != nil && !errors.Is(err, errClosing) {
					return dst, fmt.Errorf("answer a ping: %w", err)
				}
			case wsframe.Close:
				return dst, c.closedByServer(payload)
			}
			continue
		}
		if (h.Op == wsframe.Continuation) != started {
			c.close(wsframe.StatusProtocolError, "unexpected continuation")
			return dst, fmt.Errorf("%w: a message's frames out of order", wsframe.ErrProtocol)
		}
		started = true
		if int64(len(dst))+h.Len > wsReadLimit {
			c.close(wsframe.StatusMessageTooBig, "message too big")
			return dst, fmt.Errorf("a message from the server is longer than %d bytes", wsReadLimit)
		}
		// Grown as the payload comes, not for the length a frame claims.
		for left := h.Len; left > 0; {
			step := int(min(left, wsGrowStep))
			n := len(dst)
			dst = slices.Grow(dst, step)[:n+step]
			if err := c.rd.ReadFull(dst[n:]); err != nil {
				return dst, err
			}
			left -= int64(step)
		}
		if h.Fin {
			return dst, nil
		}
	}
}

// closedByServer answers the server's close frame and ends the
// connection.
func (c *wsConn) closedByServer(payload []byte) error {
	ce := &CloseError{Code: wsframe.StatusNoStatus}
	if len(payload) >= 2 {
		ce.Code = int(binary.BigEndian.Uint16(payload))
		if utf8.Valid(payload[2:]) {
			ce.Reason = string(payload[2:])
		}
	}
	c.sendClose(payload[:min(len(payload), 2)])
	return ce
}

// errClosing is a write after the close frame.
var errClosing = errors.New("the WebSocket is closing")

// write sends p as one frame of op. A ctx that ends while the write waits
// on the connection ends the connection, which nothing else could
// unblock.
func (c *wsConn) write(ctx context.Context, op wsframe.Opcode, p []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, c.closeNow)
		defer stop()
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closing {
		return errClosing
	}
	if err := c.writeLocked(op, p); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return nil
}

// writeLocked writes one masked frame in one write; wmu is held.
func (c *wsConn) writeLocked(op wsframe.Opcode, p []byte) error {
	var key [4]byte
	_, _ = rand.Read(key[:]) // never fails (crypto/rand)
	b := wsframe.AppendHeader(c.wbuf[:0], op, len(p), &key)
	n := len(b)
	b = append(b, p...)
	wsframe.Mask(key, b[n:])
	_, err := c.rwc.Write(b)
	if cap(b) <= wsKeptWrite {
		c.wbuf = b[:0]
	} else {
		c.wbuf = nil
	}
	if err != nil {
		c.closeNow()
	}
	return err
}

// close sends a close frame with code and reason, unless one was sent, and
// ends the connection. It does not wait for the server's answer: the
// client has nothing more to read.
func (c *wsConn) close(code int, reason string) {
	p := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	c.sendClose(append(p, reason...))
}

// sendClose writes a close frame carrying payload, unless one was written
// or a write waits on the connection (a server that reads nothing), and
// ends the connection.
func (c *wsConn) sendClose(payload []byte) {
	if c.wmu.TryLock() {
		if !c.closing {
			c.closing = true
			_ = c.writeLocked(wsframe.Close, payload)
		}
		c.wmu.Unlock()
	}
	c.closeNow()
}

// closeNow ends the connection without a close frame, ending a read or
// write that waits on it.
func (c *wsConn) closeNow() {
	c.closeOnce.Do(func() { _ = c.rwc.Close() })
}
