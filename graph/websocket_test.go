package graph_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"cairn/graph"
	"cairn/graph/client"
	"cairn/graph/transport"
)

// graphql-transport-ws: what breaks the protocol closes the connection with
// the code the protocol gives it, and what keeps to it is answered.
func TestWebSocketProtocol(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	const init = `{"type": "connection_init", "payload": {"token": "admin"}}`
	const sub = `{"id": "1", "type": "subscribe", "payload": {"query": "subscription { events { cursor } }"}}`
	tests := []struct {
		name  string
		send  []string
		reply string // a message the server sends before it closes, if any
		code  websocket.StatusCode
	}{
		{name: "malformed message", send: []string{init, `not json`}, reply: "connection_ack", code: 4400},
		{name: "message without a type", send: []string{init, `{"id": "1"}`}, reply: "connection_ack", code: 4400},
		{name: "unknown type", send: []string{init, `{"type": "start"}`}, reply: "connection_ack", code: 4400},
		{name: "subscribe before init", send: []string{sub}, code: 4401},
		{name: "init without a token", send: []string{`{"type": "connection_init"}`}, code: 4401},
		{name: "init with a refused token", send: []string{`{"type": "connection_init", "payload": {"token": "nobody"}}`}, code: 4401},
		{name: "second init", send: []string{init, init}, reply: "connection_ack", code: 4429},
		{name: "duplicate subscription id", send: []string{init, sub, sub}, reply: "connection_ack", code: 4409},
		{name: "subscribe without an id", send: []string{init, `{"type": "subscribe", "payload": {"query": "{ viewer { role } }"}}`}, reply: "connection_ack", code: 4400},
		{name: "message past the size limit", send: []string{init, `{"type": "ping", "payload": "` + strings.Repeat("a", 1<<20) + `"}`},
			reply: "connection_ack", code: websocket.StatusMessageTooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			conn := dialTransportWS(ctx, t, e.url)
			for _, m := range tt.send {
				if err := conn.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for {
				_, b, err := conn.Read(ctx)
				if err != nil {
					if code := websocket.CloseStatus(err); code != tt.code {
						t.Fatalf("closed with %d (%v), want %d", code, err, tt.code)
					}
					break
				}
				var m struct{ Type string }
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatalf("a message that is no JSON: %q", b)
				}
				got = append(got, m.Type)
			}
			if tt.reply != "" && !slices.Contains(got, tt.reply) {
				t.Fatalf("messages %v, want a %s among them", got, tt.reply)
			}
			if tt.reply == "" && len(got) > 0 {
				t.Fatalf("messages %v before the close, want none", got)
			}
		})
	}
}

func dialTransportWS(ctx context.Context, t *testing.T, url string) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

// A ping is answered with a pong carrying its payload, and a query over
// the connection (with an Int variable: JSON numbers stay numbers) gets its
// result and completes.
func TestWebSocketPingAndQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	ctx := ctxT(t)
	conn := dialTransportWS(ctx, t, e.url)
	for _, m := range []string{
		`{"type": "connection_init", "payload": {"authorization": "Bearer admin"}}`,
		`{"type": "ping", "payload": {"n": 7}}`,
		`{"id": "q", "type": "subscribe", "payload": {"query": "query($n: Int) { viewer { role } events(first: $n) { pageInfo { hasNextPage } } }", "variables": {"n": 5}}}`,
	} {
		if err := conn.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for len(got) < 4 {
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, string(b))
	}
	want := []string{`"connection_ack"`, `"pong","payload":{"n":7}`, `"next"`, `"complete"`}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Fatalf("message %d is %s, want it to hold %s (all: %v)", i, got[i], w, got)
		}
	}
	if !strings.Contains(got[2], `"role":"ADMIN"`) || strings.Contains(got[2], `"errors"`) {
		t.Fatalf("query result %s", got[2])
	}
}

// Messages far larger than the buffers they are read into, and small ones
// after them, are read whole: each ping is answered with its own payload.
func TestWebSocketReadsMessagesOfEverySize(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	ctx := ctxT(t)
	conn := dialTransportWS(ctx, t, e.url)
	conn.SetReadLimit(-1)
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type": "connection_init", "payload": {"authorization": "Bearer admin"}}`)); err != nil {
		t.Fatal(err)
	}
	if _, b, err := conn.Read(ctx); err != nil || !strings.Contains(string(b), "connection_ack") {
		t.Fatalf("after init: %s, %v", b, err)
	}
	for _, n := range []int{200 << 10, 1, 5000, 70 << 10, 3} {
		payload := `"` + strings.Repeat("x", n) + `"`
		if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type": "ping", "payload": `+payload+`}`)); err != nil {
			t.Fatal(err)
		}
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("ping of %d bytes: %v", n, err)
		}
		var pong struct {
			Type    string
			Payload json.RawMessage
		}
		if err := json.Unmarshal(b, &pong); err != nil || pong.Type != "pong" || string(pong.Payload) != payload {
			t.Fatalf("ping of %d bytes answered with %d bytes: %.80s (%v)", n, len(b), b, err)
		}
	}
}

// A client that sends its first frames right behind the upgrade request,
// before the server's answer, loses none of them.
func TestWebSocketFramesSentWithTheUpgrade(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	frames := maskedFrame(`{"type": "connection_init", "payload": {"token": "admin"}}`) +
		maskedFrame(`{"type": "ping"}`)
	_, br := upgradeRaw(t, ctxT(t), e.url, frames)
	for _, want := range []string{"connection_ack", "pong"} {
		if got := readShortFrame(t, br); !strings.Contains(got, `"`+want+`"`) {
			t.Fatalf("got %q, want %s", got, want)
		}
	}
}

// upgradeRaw opens a graphql-transport-ws connection by hand, sending early
// right behind the upgrade request, and returns it once upgraded.
func upgradeRaw(t *testing.T, ctx context.Context, url, early string) (net.Conn, *bufio.Reader) {
	t.Helper()
	host := strings.TrimPrefix(url, "http://")
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	request := "GET /graphql HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
	if _, err := conn.Write([]byte(request + early)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %s", resp.Status)
	}
	return conn, br
}

// readShortFrame reads one unmasked server frame of under 126 bytes.
func readShortFrame(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	head := make([]byte, 2)
	if _, err := io.ReadFull(br, head); err != nil {
		t.Fatalf("waiting for a frame: %v", err)
	}
	if head[1] >= 126 {
		t.Fatalf("unexpected frame length %d", head[1])
	}
	payload := make([]byte, head[1])
	if _, err := io.ReadFull(br, payload); err != nil {
		t.Fatal(err)
	}
	return string(payload)
}

// maskedFrame is a client's text frame (clients mask every frame).
func maskedFrame(text string) string {
	if len(text) >= 126 {
		panic(fmt.Sprintf("frame of %d bytes: this helper writes short frames only", len(text)))
	}
	mask := []byte{1, 2, 3, 4}
	b := []byte{0x81, 0x80 | byte(len(text))}
	b = append(b, mask...)
	for i := range len(text) {
		b = append(b, text[i]^mask[i%4])
	}
	return string(b)
}

// A subscription outlives the context it was started with: the client,
// reading, answers the server's pings on the connection's own time, and the
// server keeps a connection that answers.
func TestWebSocketOutlivesItsStartAndKeepsAlive(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{Transport: transport.Options{KeepAlive: 100 * time.Millisecond}})
	admin := e.client("admin")
	start, cancel := context.WithCancel(ctxT(t))
	sub, err := admin.Subscribe(start, client.TransportWS, client.Request{Query: eventsSub})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	cancel()
	created := make(chan struct{})
	go func() {
		defer close(created)
		time.Sleep(time.Second) // ten pings, each answered within two intervals
		e.createTenant(admin, "after-pings")
	}()
	ev := next(t, sub)
	<-created
	if ev.Events.Type != "tenant.created" {
		t.Fatalf("got %+v", ev.Events)
	}
}

// Other operations run over a subscription's WebSocket while it follows:
// a mutation's result and its event both arrive, an operation the server
// refuses answers with its errors, and server-sent events carry none.
func TestWebSocketCarriesOtherOperations(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	admin := e.client("admin")
	ctx := ctxT(t)
	// From a cursor: the subscription may start after the mutation.
	before := e.createTenant(admin, "before-the-socket")
	sub, err := admin.Subscribe(ctx, client.TransportWS, client.Request{Query: eventsSub,
		Variables: map[string]any{"after": before.CreateTenant.Cursor}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	events := make(chan string, 1)
	go func() {
		resp, err := sub.Next(ctx)
		var ev struct{ StreamID string }
		if err == nil && resp.Field(&ev) == nil {
			events <- ev.StreamID
		}
	}()
	resp, err := sub.Do(ctx, client.Request{Query: createTenant, Variables: map[string]any{"name": "over-the-socket"}})
	if err != nil || len(resp.Errors) > 0 {
		t.Fatalf("a mutation over the subscription's WebSocket: %v %v", err, resp)
	}
	var out struct{ Tenant struct{ ID string } }
	if err := resp.Field(&out); err != nil || out.Tenant.ID == "" {
		t.Fatalf("its result %s: %v", resp.Data, err)
	}
	select {
	case id := <-events:
		if !strings.HasSuffix(id, out.Tenant.ID) {
			t.Errorf("the subscription got an event of %s, want the tenant created (%s)", id, out.Tenant.ID)
		}
	case <-ctx.Done():
		t.Fatal("the subscription got no event of the mutation")
	}
	resp, err = sub.Do(ctx, client.Request{Query: `mutation { createTenant(input: {name: ""}) { cursor } }`})
	if err != nil || len(resp.Errors) == 0 {
		t.Errorf("a refused mutation over the WebSocket: %v, %+v; want its errors", err, resp)
	}
	sse, err := admin.Subscribe(ctx, client.SSE, client.Request{Query: eventsSub})
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Close()
	if _, err := sse.Do(ctx, client.Request{Query: createTenant}); !errors.Is(err, client.ErrNotMultiplexed) {
		t.Errorf("Do over server-sent events: %v, want ErrNotMultiplexed", err)
	}
}

// A peer that speaks on its own within the keep-alive interval (an agent
// sending its heartbeats) is not pinged; once it falls silent, it is.
func TestWebSocketPingsOnlySilentPeers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{Transport: transport.Options{KeepAlive: 100 * time.Millisecond}})
	ctx := ctxT(t)
	conn := dialTransportWS(ctx, t, e.url)
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type": "connection_init", "payload": {"token": "admin"}}`)); err != nil {
		t.Fatal(err)
	}
	var pings atomic.Int32
	go func() {
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if strings.Contains(string(b), `"type":"ping"`) {
				pings.Add(1)
				_ = conn.Write(ctx, websocket.MessageText, []byte(`{"type": "pong"}`))
			}
		}
	}()
	for range 20 { // 600 ms, six intervals
		if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type": "ping"}`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	if n := pings.Load(); n > 0 {
		t.Errorf("a peer speaking every 30 ms was pinged %d times at a keep-alive of 100 ms", n)
	}
	time.Sleep(500 * time.Millisecond)
	if n := pings.Load(); n < 2 {
		t.Errorf("a silent peer was pinged %d times in 500 ms at a keep-alive of 100 ms", n)
	}
}

// An id the client completed may name its next operation at once: what
// ends the first operation leaves the second alone.
func TestWebSocketReusedOperationID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	ctx := ctxT(t)
	conn := dialTransportWS(ctx, t, e.url)
	sub := `{"id": "1", "type": "subscribe", "payload": {"query": "subscription { events { type } }"}}`
	for _, m := range []string{
		`{"type": "connection_init", "payload": {"token": "admin"}}`,
		sub, `{"id": "1", "type": "complete"}`, sub,
	} {
		if err := conn.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the first operation has ended by now
	e.createTenant(e.client("admin"), "reused-id")
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("the second operation under id 1 got no event: %v", err)
		}
		var m struct{ ID, Type string }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.ID == "1" && m.Type == "next" && strings.Contains(string(b), `"tenant.created"`) && !strings.Contains(string(b), `"errors"`):
			return
		case m.ID == "1":
			t.Fatalf("operation 1 said something before its event: %s", b)
		}
	}
}

// A connection waiting for its peer's next message holds a small stack on
// the server: its reader waits on a shallow one rather than deep in the
// WebSocket library's frame read, so the collector shrinks what a message
// grew. With 10,000 agents connected, the deep wait held 8 KiB for each.
func TestWebSocketWaitsOnASmallStack(t *testing.T) {
	// Not parallel: the stacks of other tests' goroutines would count.
	if raceDetector {
		t.Skip("the race detector makes every stack larger")
	}
	e := newEnv(t, graph.Config{})
	ctx := ctxT(t)
	stacks := func() uint64 {
		var m runtime.MemStats
		for range 3 {
			runtime.GC()
		}
		runtime.ReadMemStats(&m)
		return m.StackInuse
	}
	exchange := func(br *bufio.Reader, conn net.Conn, send, want string) {
		t.Helper()
		if _, err := conn.Write([]byte(maskedFrame(send))); err != nil {
			t.Fatal(err)
		}
		if got := readShortFrame(t, br); !strings.Contains(got, `"`+want+`"`) {
			t.Fatalf("got %q, want %s", got, want)
		}
	}
	type peer struct {
		conn net.Conn
		br   *bufio.Reader
	}
	before := stacks()
	peers := make([]peer, 300)
	for i := range peers {
		conn, br := upgradeRaw(t, ctx, e.url, "")
		exchange(br, conn, `{"type": "connection_init", "payload": {"token": "admin"}}`, "connection_ack")
		exchange(br, conn, `{"type": "ping"}`, "pong")
		peers[i] = peer{conn, br}
	}
	held := stacks()
	perConn := float64(held-before) / float64(len(peers)) / 1024
	t.Logf("%.1f KiB of stack for each waiting connection", perConn)
	if perConn > 6 {
		t.Errorf("each waiting connection holds %.1f KiB of stack, want at most 6", perConn)
	}
	for _, p := range peers {
		exchange(p.br, p.conn, `{"type": "ping"}`, "pong")
	}
}
