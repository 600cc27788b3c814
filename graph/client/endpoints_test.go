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
