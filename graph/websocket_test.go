package graph_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
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

// A client that sends its first frames right behind the upgrade request,
// before the server's answer, loses none of them.
func TestWebSocketFramesSentWithTheUpgrade(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	ctx := ctxT(t)
	host := strings.TrimPrefix(e.url, "http://")
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	request := "GET /graphql HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
	frames := maskedFrame(`{"type": "connection_init", "payload": {"token": "admin"}}`) +
		maskedFrame(`{"type": "ping"}`)
	if _, err := conn.Write([]byte(request + frames)); err != nil {
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
	for _, want := range []string{"connection_ack", "pong"} {
		head := make([]byte, 2)
		if _, err := io.ReadFull(br, head); err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if head[1] >= 126 {
			t.Fatalf("unexpected frame length %d", head[1])
		}
		payload := make([]byte, head[1])
		if _, err := io.ReadFull(br, payload); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(payload), `"`+want+`"`) {
			t.Fatalf("got %q, want %s", payload, want)
		}
	}
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
