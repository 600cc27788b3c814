package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// ackingServer accepts graphql-transport-ws connections, acknowledges
// each and hands it to serve.
func ackingServer(t *testing.T, serve func(ctx context.Context, conn *websocket.Conn)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{string(TransportWS)}})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx := r.Context()
		if _, _, err := conn.Read(ctx); err != nil { // connection_init
			return
		}
		if conn.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_ack"}`)) != nil {
			return
		}
		serve(ctx, conn)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// wsServer speaks enough graphql-transport-ws for a client: it acknowledges
// the connection, sends results n of them, 1 to n, and then stays silent.
func wsServer(t *testing.T, results int) *httptest.Server {
	t.Helper()
	return ackingServer(t, func(ctx context.Context, conn *websocket.Conn) {
		if _, _, err := conn.Read(ctx); err != nil { // subscribe
			return
		}
		for i := 1; i <= results; i++ {
			msg := `{"id":"1","type":"next","payload":{"data":{"n":` + strconv.Itoa(i) + `}}}`
			if conn.Write(ctx, websocket.MessageText, []byte(msg)) != nil {
				return
			}
		}
		_, _, _ = conn.Read(ctx) // until the client leaves
	})
}

// A WebSocket subscription delivers results in order, and a read that
// waits ends when the caller's context does, when the server is silent for
// the idle limit, or when the subscription is closed; none leaves a read
// waiting for ever.
func TestWebSocketReadsEnd(t *testing.T) {
	t.Parallel()
	srv := wsServer(t, 3)
	subscribe := func(c *Client) *Subscription {
		t.Helper()
		sub, err := c.Subscribe(context.Background(), TransportWS, Request{Query: "subscription { n }"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			r, err := sub.Next(context.Background())
			if want := `{"n":` + strconv.Itoa(i) + `}`; err != nil || string(r.Data) != want {
				t.Fatalf("result %d: %v %v, want %s", i, r, err, want)
			}
		}
		return sub
	}

	t.Run("the caller's context ends", func(t *testing.T) {
		t.Parallel()
		sub := subscribe(New(srv.URL, "", nil))
		defer sub.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		began := time.Now()
		if _, err := sub.Next(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(began) > 5*time.Second {
			t.Fatalf("after %s: %v, want the context's deadline", time.Since(began), err)
		}
	})
	t.Run("a context that ends between reads", func(t *testing.T) {
		t.Parallel()
		c := New(srv.URL, "", nil)
		sub, err := c.Subscribe(context.Background(), TransportWS, Request{Query: "subscription { n }"})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		// One context for two reads, ended while none waits: the next read
		// with it returns at once, and the connection stays usable.
		ctx, cancel := context.WithCancel(context.Background())
		for i := 1; i <= 2; i++ {
			if _, err := sub.Next(ctx); err != nil {
				t.Fatalf("result %d: %v", i, err)
			}
		}
		cancel()
		time.Sleep(50 * time.Millisecond)
		if _, err := sub.Next(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("a read with an ended context: %v", err)
		}
		later, cancelLater := context.WithCancel(context.Background())
		if r, err := sub.Next(later); err != nil || string(r.Data) != `{"n":3}` {
			t.Fatalf("result 3: %v %v", r, err)
		}
		// An earlier call's context ending does not end a read that waits
		// with another.
		ended := make(chan error, 1)
		go func() {
			_, err := sub.Next(context.Background())
			ended <- err
		}()
		time.Sleep(50 * time.Millisecond)
		cancelLater()
		select {
		case err := <-ended:
			t.Fatalf("the waiting read ended: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
	})
	t.Run("the server is silent", func(t *testing.T) {
		t.Parallel()
		sub := subscribe(New(srv.URL, "", nil).WithIdleTimeout(300 * time.Millisecond))
		defer sub.Close()
		// Time spent between reads does not count: the results came.
		began := time.Now()
		_, err := sub.Next(context.Background())
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) < 250*time.Millisecond || time.Since(began) > 5*time.Second {
			t.Fatalf("after %s: %v, want the idle limit's error", time.Since(began), err)
		}
	})
	t.Run("the subscription is closed", func(t *testing.T) {
		t.Parallel()
		sub := subscribe(New(srv.URL, "", nil))
		ended := make(chan error, 1)
		go func() {
			_, err := sub.Next(context.Background())
			ended <- err
		}()
		time.Sleep(100 * time.Millisecond)
		sub.Close()
		select {
		case err := <-ended:
			if err == nil {
				t.Fatal("a read of a closed subscription returned a result")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a read still waits 5 s after the subscription was closed")
		}
	})
	t.Run("slow reader", func(t *testing.T) {
		t.Parallel()
		// With an idle limit shorter than the pause between two reads, the
		// results the server sent meanwhile are still read.
		c := New(srv.URL, "", nil).WithIdleTimeout(200 * time.Millisecond)
		sub, err := c.Subscribe(context.Background(), TransportWS, Request{Query: "subscription { n }"})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		for i := 1; i <= 3; i++ {
			time.Sleep(300 * time.Millisecond)
			if r, err := sub.Next(context.Background()); err != nil || string(r.Data) != `{"n":`+strconv.Itoa(i)+`}` {
				t.Fatalf("result %d after a pause: %v %v", i, r, err)
			}
		}
	})
}

// Many operations in flight over one subscription's WebSocket, with nobody
// calling Next, read the connection in turn: each gets its own answer,
// although they come in the reverse order with the subscription's results
// between them, and Next then gets those results in order.
func TestWebSocketOperationsReadInTurn(t *testing.T) {
	t.Parallel()
	const ops = 50
	srv := ackingServer(t, func(ctx context.Context, conn *websocket.Conn) {
		type request struct {
			ID      string
			Payload struct{ Variables struct{ N int } }
		}
		var asked []request
		for len(asked) < ops+1 { // the subscription, then every operation
			_, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			var m request
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("request %s: %v", b, err)
				return
			}
			asked = append(asked, m)
		}
		for i := len(asked) - 1; i >= 1; i-- {
			m := asked[i]
			for _, msg := range []string{
				fmt.Sprintf(`{"id":"1","type":"next","payload":{"data":{"n":%d}}}`, ops-i),
				fmt.Sprintf(`{"id":%q,"type":"next","payload":{"data":{"n":%d}}}`, m.ID, m.Payload.Variables.N),
				fmt.Sprintf(`{"id":%q,"type":"complete"}`, m.ID),
			} {
				if conn.Write(ctx, websocket.MessageText, []byte(msg)) != nil {
					return
				}
			}
		}
		_, _, _ = conn.Read(ctx) // until the client leaves
	})
	sub, err := New(srv.URL, "", nil).Subscribe(context.Background(), TransportWS, Request{Query: "subscription { n }"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for n := 1; n <= ops; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := sub.Do(ctx, Request{Query: "mutation($n: Int!) { n(n: $n) }", Variables: map[string]any{"n": n}})
			if want := fmt.Sprintf(`{"n":%d}`, n); err != nil || string(r.Data) != want {
				t.Errorf("operation %d: %v %v, want %s", n, r, err, want)
			}
		}()
	}
	wg.Wait()
	for i := range ops {
		r, err := sub.Next(ctx)
		if want := fmt.Sprintf(`{"n":%d}`, i); err != nil || string(r.Data) != want {
			t.Fatalf("result %d: %v %v, want %s", i, r, err, want)
		}
	}
}

// A server-sent events subscription returns each "next" event's result in
// order, then ErrComplete at the "complete" event, and no more after it.
func TestSSEResultsThenComplete(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(": ok\n\nevent: next\ndata: {\"data\":{\"n\":1}}\n\n" +
			"event:next\ndata: {\"data\":{\"n\":2}}\n\nevent: completed\ndata: {\"data\":{\"n\":3}}\n\n" +
			"event: complete\ndata:\n\n"))
		// The stream stays open: the client ends at "complete", not at the
		// end of the body.
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	sub, err := New(srv.URL, "", nil).Subscribe(context.Background(), SSE, Request{Query: "subscription { n }"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for want := 1; want <= 3; want++ {
		resp, err := sub.Next(context.Background())
		if err != nil {
			t.Fatalf("result %d: %v", want, err)
		}
		if got := string(resp.Data); got != `{"n":`+strconv.Itoa(want)+`}` {
			t.Fatalf("result %d: %s", want, got)
		}
	}
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := sub.Next(ctx)
		cancel()
		if !errors.Is(err, ErrComplete) {
			t.Fatalf("after the last result: %v, want ErrComplete", err)
		}
	}
}

// A server-sent events read that waits ends when its caller's context does;
// one with a context that ended already returns at once.
func TestSSEReadsEndWithTheirContext(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: next\ndata: {\"data\":{\"n\":1}}\n\nevent: next\ndata: {\"data\":{\"n\":2}}\n\n"))
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // then silent
	}))
	defer srv.Close()
	sub, err := New(srv.URL, "", nil).Subscribe(context.Background(), SSE, Request{Query: "subscription { n }"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if r, err := sub.Next(context.Background()); err != nil || string(r.Data) != `{"n":1}` {
		t.Fatalf("result 1: %v %v", r, err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sub.Next(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("a read with an ended context: %v", err)
	}
	if r, err := sub.Next(context.Background()); err != nil || string(r.Data) != `{"n":2}` {
		t.Fatalf("result 2, read from the buffer: %v %v", r, err)
	}
	ctx, cancelWait := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelWait()
	began := time.Now()
	if _, err := sub.Next(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(began) > 5*time.Second {
		t.Fatalf("after %s: %v, want the context's deadline", time.Since(began), err)
	}
}
