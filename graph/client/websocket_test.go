package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"cairn/internal/wsframe"
)

// The client's own WebSocket reads what a well-kept server library writes
// (messages of every length encoding, a fragmented one, pings between
// them, a close with a code), and the library reads what the client
// writes, masked.
func TestWebSocketSpeaksWithALibraryServer(t *testing.T) {
	t.Parallel()
	sizes := []int{0, 1, 125, 126, 65535, 65536, 200 << 10, 3<<20 + 5}
	echoed := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"cairn-test"}})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(8 << 20)
		ctx := r.Context()
		// What the client writes comes back as the library read it.
		echoed <- func() error {
			for _, n := range sizes {
				_, b, err := conn.Read(ctx)
				if err != nil {
					return err
				}
				if !bytes.Equal(b, payload(n)) {
					return errors.New("a message the client wrote was read otherwise")
				}
			}
			return nil
		}()
		for _, n := range sizes {
			if err := conn.Write(ctx, websocket.MessageText, payload(n)); err != nil {
				return
			}
		}
		// A message in three frames.
		mw, err := conn.Writer(ctx, websocket.MessageBinary)
		if err != nil {
			return
		}
		for _, part := range []string{"frag", "ment", "ed"} {
			if _, err := mw.Write([]byte(part)); err != nil {
				return
			}
		}
		if mw.Close() != nil {
			return
		}
		// Ping waits for the pong, which the client sends while it reads.
		go func() {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if conn.Ping(pctx) == nil {
				_ = conn.Write(ctx, websocket.MessageText, []byte("pong came"))
			}
		}()
		_, _, _ = conn.Read(ctx) // runs the ping's read until the client closes
	}))
	t.Cleanup(srv.Close)

	ctx := context.Background()
	conn, _, err := dialWS(ctx, srv.Client(), srv.URL, http.Header{}, "cairn-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.closeNow()
	for _, n := range sizes {
		if err := conn.write(ctx, wsframe.Text, payload(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-echoed; err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for _, n := range sizes {
		if buf, err = conn.readMessage(buf); err != nil {
			t.Fatalf("message of %d bytes: %v", n, err)
		}
		if !bytes.Equal(buf, payload(n)) {
			t.Fatalf("message of %d bytes read as %d bytes, or otherwise", n, len(buf))
		}
	}
	if buf, err = conn.readMessage(buf); err != nil || string(buf) != "fragmented" {
		t.Fatalf("fragmented message: %q, %v", buf, err)
	}
	if buf, err = conn.readMessage(buf); err != nil || string(buf) != "pong came" {
		t.Fatalf("after a ping: %q, %v", buf, err)
	}
	conn.close(wsframe.StatusNormalClosure, "done")
	if err := conn.write(ctx, wsframe.Text, []byte("late")); !errors.Is(err, errClosing) {
		t.Fatalf("a write after the close: %v", err)
	}
}

func payload(n int) []byte { return bytes.Repeat([]byte{'c'}, n) }

// rawServer accepts a WebSocket by hand and writes frames as given,
// including ones no library would; closed gets the close frame the client
// sent back, if any.
func rawServer(t *testing.T, frames []byte, closed chan<- []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer nc.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
			"Sec-WebSocket-Protocol: cairn-test\r\nSec-WebSocket-Accept: " + wsframe.AcceptKey(r.Header.Get("Sec-WebSocket-Key")) + "\r\n\r\n")
		_, _ = rw.Write(frames)
		_ = rw.Flush()
		fr := wsframe.NewReader(bufio.NewReader(nc), 0, 0)
		h, err := fr.Header()
		if err != nil || h.Op != wsframe.Close {
			closed <- nil
			return
		}
		p := make([]byte, h.Len)
		_ = fr.ReadFull(p)
		wsframe.Mask(h.Key, p)
		closed <- p
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A server that breaks the protocol gets an error back and a close with
// the reason's code; a server's close comes out as a *CloseError.
func TestWebSocketAnswersABrokenServer(t *testing.T) {
	t.Parallel()
	text := func(p string) []byte { return append(wsframe.AppendHeader(nil, wsframe.Text, len(p), nil), p...) }
	key := [4]byte{9, 9, 9, 9}
	for _, tc := range []struct {
		name      string
		frames    []byte
		wantErr   string
		wantClose int
	}{
		{"masked frame", append(wsframe.AppendHeader(nil, wsframe.Text, 2, &key), 'h'^9, 'i'^9), "masked", wsframe.StatusProtocolError},
		{"continuation with no message begun", append(wsframe.AppendHeader(nil, wsframe.Continuation, 1, nil), 'x'), "out of order", wsframe.StatusProtocolError},
		{"reserved bits", []byte{0xc1, 0}, "reserved bits", wsframe.StatusProtocolError},
		{"message past the read limit", wsframe.AppendHeader(nil, wsframe.Binary, wsReadLimit+1, nil), "longer than", wsframe.StatusMessageTooBig},
		{"a close with a code", append(wsframe.AppendHeader(nil, wsframe.Close, 15, nil), append([]byte{0x11, 0x31}, "token expired"...)...), "(4401): token expired", 4401},
		{"a close with none", append(text("first"), wsframe.AppendHeader(nil, wsframe.Close, 0, nil)...), "(1005)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			closed := make(chan []byte, 1)
			srv := rawServer(t, tc.frames, closed)
			conn, _, err := dialWS(context.Background(), srv.Client(), srv.URL, http.Header{}, "cairn-test")
			if err != nil {
				t.Fatal(err)
			}
			defer conn.closeNow()
			var buf []byte
			for err == nil {
				buf, err = conn.readMessage(buf)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want it to say %q", err, tc.wantErr)
			}
			select {
			case p := <-closed:
				code := 0
				if len(p) >= 2 {
					code = int(p[0])<<8 | int(p[1])
				}
				if code != tc.wantClose {
					t.Fatalf("the client closed with %d (%q), want %d", code, p, tc.wantClose)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the client sent no close")
			}
		})
	}
}

// A server that does not answer the handshake as RFC 6455 asks is not
// taken for a WebSocket.
func TestWebSocketHandshakeIsChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		answer  func(w http.ResponseWriter, key string)
		wantErr string
	}{
		{"not upgraded", func(w http.ResponseWriter, key string) { http.Error(w, "no", http.StatusBadRequest) }, "400"},
		{"wrong accept", func(w http.ResponseWriter, key string) { upgrade(w, "bm9wZQ==", "cairn-test", "") }, "does not answer the key"},
		{"other subprotocol", func(w http.ResponseWriter, key string) { upgrade(w, wsframe.AcceptKey(key), "other", "") }, `speaks "other"`},
		{"extension not offered", func(w http.ResponseWriter, key string) {
			upgrade(w, wsframe.AcceptKey(key), "cairn-test", "permessage-deflate")
		}, "not offered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tc.answer(w, r.Header.Get("Sec-WebSocket-Key"))
			}))
			defer srv.Close()
			_, _, err := dialWS(context.Background(), srv.Client(), srv.URL, http.Header{}, "cairn-test")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want it to say %q", err, tc.wantErr)
			}
		})
	}
}

func upgrade(w http.ResponseWriter, accept, protocol, ext string) {
	h := w.Header()
	h.Set("Connection", "Upgrade")
	h.Set("Upgrade", "websocket")
	h.Set("Sec-WebSocket-Accept", accept)
	h.Set("Sec-WebSocket-Protocol", protocol)
	if ext != "" {
		h.Set("Sec-WebSocket-Extensions", ext)
	}
	w.WriteHeader(http.StatusSwitchingProtocols)
}
