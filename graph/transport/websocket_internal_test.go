package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/coder/websocket"
	"github.com/rs/zerolog"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// TestAppendResponseMatchesMarshal: the hand-built result is the JSON that
// marshalling the response gives.
func TestAppendResponseMatchesMarshal(t *testing.T) {
	t.Parallel()
	yes := true
	tests := []struct {
		name string
		resp *graphql.Response
	}{
		{"data", &graphql.Response{Data: json.RawMessage(`{"events":{"cursor":"1:2","type":"tenant.created"}}`)}},
		{"no data", &graphql.Response{}},
		{"errors", &graphql.Response{Errors: gqlerror.List{{Message: "slow subscriber"}}, Data: json.RawMessage(`null`)}},
		{"extensions", &graphql.Response{Data: json.RawMessage(`{}`), Extensions: map[string]any{"cursor": "1:2"}}},
		{"empty extensions", &graphql.Response{Data: json.RawMessage(`{"events":{}}`), Extensions: map[string]any{}}},
		{"incremental", &graphql.Response{Data: json.RawMessage(`{}`), Label: "l", HasNext: &yes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := appendResponse([]byte("x"), tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != 'x' {
				t.Fatalf("did not append: %s", got)
			}
			want, err := json.Marshal(tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got[1:], &g); err != nil {
				t.Fatalf("%s is not JSON: %v", got[1:], err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("appended %s, marshalled %s", got[1:], want)
			}
		})
	}
}

// The keep-alive stretches with the connections open so that the server
// sends at most maxKeepAlivesPerSecond pings, and never past twice the
// configured interval, which peers count on.
func TestKeepAliveInterval(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		open int64
		want time.Duration
	}{
		{0, 15 * time.Second},
		{7_500, 15 * time.Second},
		{10_000, 20 * time.Second},
		{15_000, 30 * time.Second},
		{100_000, 30 * time.Second},
	} {
		h := &Handler{opts: Options{KeepAlive: 15 * time.Second}}
		h.wsOpen.Store(c.open)
		if got := h.keepAliveInterval(); got != c.want {
			t.Errorf("%d connections: every %s, want %s", c.open, got, c.want)
		}
	}
}

// Messages framed by the connection (writeText) reach a WebSocket peer
// whole, at every length encoding, corked or not, and beside the library's
// own frames; none follows the close handshake.
func TestTextFramesReachAWebSocketPeer(t *testing.T) {
	t.Parallel()
	sizes := []int{0, 1, 125, 126, 127, 0xffff, 0x10000, 3 * corkLimit}
	message := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(i%26)
		}
		return b
	}
	sealed := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hijack := &smallBuffers{ResponseWriter: w, held: newHeldBuffers()}
		ws, err := websocket.Accept(hijack, r, nil)
		if err != nil {
			return
		}
		ctx := context.Background()
		for i, n := range sizes {
			if i%2 == 1 {
				hijack.conn.cork()
			}
			if err := hijack.conn.writeText(message(n)); err != nil {
				t.Errorf("write %d bytes: %v", n, err)
			}
			if i%2 == 1 {
				hijack.conn.uncork()
			}
		}
		// The library's frames go whole between them, corked too.
		hijack.conn.cork()
		if err := ws.Write(ctx, websocket.MessageText, []byte("library")); err != nil {
			t.Errorf("library write: %v", err)
		}
		_ = hijack.conn.writeText([]byte("after"))
		hijack.conn.uncork()
		hijack.conn.seal()
		sealed <- hijack.conn.writeText([]byte("too late"))
		_ = ws.Close(websocket.StatusNormalClosure, "done")
	}))
	defer srv.Close()
	ctx, peer := dialPeer(t, srv)
	peer.SetReadLimit(-1)
	defer peer.CloseNow()
	want := make([][]byte, 0, len(sizes)+2)
	for _, n := range sizes {
		want = append(want, message(n))
	}
	want = append(want, []byte("library"), []byte("after"))
	for i, w := range want {
		typ, got, err := peer.Read(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if typ != websocket.MessageText || !bytes.Equal(got, w) {
			t.Fatalf("message %d: %v of %d bytes, want text of %d", i, typ, len(got), len(w))
		}
	}
	if _, _, err := peer.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after the last message: %v, want the close handshake", err)
	}
	if err := <-sealed; !errors.Is(err, errSealed) {
		t.Fatalf("a message after the seal: %v, want errSealed", err)
	}
}

// A close the server starts while the connection's reader waits for the
// peer (awaitRead, holding the read lock) completes its handshake as soon
// as the peer answers: the reader hands the answer's first byte on to the
// library's handshake, and the connection ends well before the library's
// own handshake timeout (5 s) would end it.
func TestServerCloseWhileTheReaderWaits(t *testing.T) {
	t.Parallel()
	// Read once the connection ended: the close's goroutine logs before
	// the connection's end waits for it.
	var logged bytes.Buffer
	h := &Handler{log: zerolog.New(zerolog.SyncWriter(&logged)), heldBuffers: newHeldBuffers()}
	conns := make(chan *wsConnection, 1)
	served := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hijack := &smallBuffers{ResponseWriter: w, held: h.heldBuffers}
		ws, err := websocket.Accept(hijack, r, nil)
		if err != nil {
			t.Errorf("accept: %v", err)
			close(served)
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		c := &wsConnection{h: h, ws: ws, conn: hijack.conn, buffered: hijack.reader, early: hijack.early,
			ctx: ctx, cancel: cancel, ops: map[string]*wsOperation{}}
		h.wsOpen.Add(1)
		conns <- c
		go func() {
			defer close(served)
			c.serve()
		}()
	}))
	defer srv.Close()
	ctx, peer := dialPeer(t, srv)
	defer peer.CloseNow()
	c := <-conns
	// The peer has sent nothing: the reader waits in awaitRead.
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := c.WriteClose(closeNoPong, "no pong"); err != nil {
		t.Fatal(err)
	}
	// Reading, the peer answers the close.
	if _, _, err := peer.Read(ctx); websocket.CloseStatus(err) != closeNoPong {
		t.Fatalf("the peer read %v, want the server's close (%d)", err, closeNoPong)
	}
	select {
	case <-served:
	case <-time.After(3 * time.Second):
		t.Fatal("the connection did not end within 3 s of the peer's answer to its close")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the close handshake took %s, want it to end once the peer answered", took)
	}
	if n := h.wsOpen.Load(); n != 0 {
		t.Errorf("%d connections counted open after the close, want 0", n)
	}
	// The server read the peer's answer whole: its handshake completed.
	if s := logged.String(); strings.Contains(s, "close handshake did not complete") {
		t.Errorf("the server's close handshake failed: %s", s)
	}
}

// dialPeer connects a WebSocket peer to srv, for at most 10 s.
func dialPeer(t *testing.T, srv *httptest.Server) (context.Context, *websocket.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	peer, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, peer
}
