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
// UNAVAILABLE error) is left for the next one on the following request.
func TestClientLeavesAReplicaWithoutItsDatabase(t *testing.T) {
	t.Parallel()
	for name, away := range map[string]http.HandlerFunc{
		"503": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"errors":[{"message":"the database cannot be reached now","extensions":{"code":"UNAVAILABLE"}}]}`))
		},
		"200 with UNAVAILABLE": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"errors":[{"message":"the database cannot be reached now","extensions":{"code":"UNAVAILABLE"}}],"data":null}`))
		},
	} {
		cut := httptest.NewServer(away)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":{"viewer":{"role":"ADMIN"}}}`))
		}))
		c := New(cut.URL+","+up.URL, "token", nil)
		var out struct{ Viewer struct{ Role string } }
		if err := c.Do(context.Background(), `{ viewer { role } }`, nil, &out); CodeOf(err) != "UNAVAILABLE" {
			t.Fatalf("%s: first request: %v", name, err)
		}
		if err := c.Do(context.Background(), `{ viewer { role } }`, nil, &out); err != nil || out.Viewer.Role != "ADMIN" {
			t.Fatalf("%s: the next request did not move on: %+v %v", name, out, err)
		}
		cut.Close()
		up.Close()
	}
}
