package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A client of several replicas asks the next one at once when a replica
// refuses the connection, and stays with the one that answered.
func TestClientMovesToAReplicaThatAnswers(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // nothing listens there now
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"viewer":{"role":"ADMIN"}}}`))
	}))
	defer up.Close()

	c := New(downURL+", "+up.URL+"/", "token", nil)
	if got := len(c.Endpoints()); got != 2 {
		t.Fatalf("%d endpoints", got)
	}
	var out struct{ Viewer struct{ Role string } }
	if err := c.Do(context.Background(), `{ viewer { role } }`, nil, &out); err != nil || out.Viewer.Role != "ADMIN" {
		t.Fatalf("through the replica that answers: %+v %v", out, err)
	}
	if c.Endpoint() != up.URL+"/graphql" || c.WithToken("other").Endpoint() != up.URL+"/graphql" {
		t.Fatalf("the client went back to %s", c.Endpoint())
	}

	// With every replica down the error says so.
	up.Close()
	if err := c.Do(context.Background(), `{ viewer { role } }`, nil, &out); err == nil {
		t.Fatal("no error with every replica down")
	}
}

// A subscription skips a replica that refuses the connection too.
func TestSubscriptionMovesToAReplicaThatAnswers(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: next\ndata: {\"data\":{\"n\":1}}\n\nevent: complete\ndata:\n\n"))
	}))
	defer up.Close()
	for _, p := range []Protocol{SSE, TransportWS} {
		c := New(downURL+","+up.URL, "token", nil)
		sub, err := c.Subscribe(context.Background(), p, Request{Query: "subscription { n }"})
		if p == TransportWS {
			// The live replica speaks only SSE here: what matters is that
			// the refused one was passed over.
			if c.Endpoint() != up.URL+"/graphql" {
				t.Fatalf("%s: still at %s (%v)", p, c.Endpoint(), err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		r, err := sub.Next(context.Background())
		if err != nil || string(r.Data) != `{"n":1}` {
			t.Fatalf("%s: %v %v", p, r, err)
		}
		sub.Close()
	}
}

// A replica that answers but cannot reach its database (HTTP 503, or an
// UNAVAILABLE error), or fails in a way of its own (another 5xx, or an
// INTERNAL error), is left for the next one on the following request.
func TestClientLeavesAReplicaWithoutItsDatabase(t *testing.T) {
	t.Parallel()
	answer := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	for name, tc := range map[string]struct {
		away http.HandlerFunc
		code string
	}{
		"503":                  {answer(http.StatusServiceUnavailable, `{"errors":[{"message":"the database cannot be reached now","extensions":{"code":"UNAVAILABLE"}}]}`), "UNAVAILABLE"},
		"200 with UNAVAILABLE": {answer(http.StatusOK, `{"errors":[{"message":"the database cannot be reached now","extensions":{"code":"UNAVAILABLE"}}],"data":null}`), "UNAVAILABLE"},
		"200 with INTERNAL":    {answer(http.StatusOK, `{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL"}}],"data":null}`), "INTERNAL"},
		"502 from a proxy":     {answer(http.StatusBadGateway, `bad gateway`), ""},
	} {
		cut := httptest.NewServer(tc.away)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":{"viewer":{"role":"ADMIN"}}}`))
		}))
		c := New(cut.URL+","+up.URL, "token", nil)
		var out struct{ Viewer struct{ Role string } }
		if err := c.Do(context.Background(), `{ viewer { role } }`, nil, &out); err == nil || CodeOf(err) != tc.code {
			t.Fatalf("%s: first request: %v, want an error with code %q", name, err, tc.code)
		}
		if err := c.Do(context.Background(), `{ viewer { role } }`, nil, &out); err != nil || out.Viewer.Role != "ADMIN" {
			t.Fatalf("%s: the next request did not move on: %+v %v", name, out, err)
		}
		cut.Close()
		up.Close()
	}
}
