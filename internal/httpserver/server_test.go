package httpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/domain"
	"cairn/eventstore"
	"cairn/internal/httpserver"
	"cairn/internal/testdb"
	"cairn/migrations"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// newServer builds a server over a fresh migrated database.
func newServer(t *testing.T, drain time.Duration) *httpserver.Server {
	t.Helper()
	db := testdb.New(t)
	pool, owner := db.AppPool(t), db.AdminPool(t)
	store := eventstore.New(pool, domain.NewRegistry(), eventstore.Options{})
	t.Cleanup(store.Close)
	srv, err := httpserver.New(httpserver.Deps{
		Log:          zerolog.New(zerolog.NewTestWriter(t)),
		Pool:         pool,
		Store:        store,
		Schema:       func(ctx context.Context) (migrations.Status, error) { return migrations.Check(ctx, owner) },
		DrainTimeout: drain,
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

func TestMiddleware(t *testing.T) {
	srv := newServer(t, 0)
	srv.Handle("GET /echo-id", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, httpserver.RequestID(r.Context()))
	}))
	srv.Handle("GET /boom", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("kaboom") }))
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	t.Run("caller's request id is kept", func(t *testing.T) {
		resp, body := get(t, ts.URL+"/echo-id", httpserver.RequestIDHeader, "trace-42")
		if body != "trace-42" || resp.Header.Get(httpserver.RequestIDHeader) != "trace-42" {
			t.Fatalf("body %q, header %q", body, resp.Header.Get(httpserver.RequestIDHeader))
		}
	})
	t.Run("unsafe or missing ids are replaced", func(t *testing.T) {
		for _, id := range []string{"", "has space", strings.Repeat("x", 200)} {
			resp, body := get(t, ts.URL+"/echo-id", httpserver.RequestIDHeader, id)
			got := resp.Header.Get(httpserver.RequestIDHeader)
			if got == "" || got == id || body != got {
				t.Fatalf("sent %q: header %q, body %q", id, got, body)
			}
		}
	})
	t.Run("a panic is a 500", func(t *testing.T) {
		if resp, _ := get(t, ts.URL+"/boom"); resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("requests are counted by route", func(t *testing.T) {
		get(t, ts.URL+"/no/such/path/a")
		get(t, ts.URL+"/no/such/path/b")
		resp, metrics := get(t, ts.URL+"/metrics")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics status %d", resp.StatusCode)
		}
		for _, want := range []string{
			`cairn_http_requests_total{code="200",route="/echo-id"} 4`,
			`cairn_http_requests_total{code="500",route="/boom"} 1`,
			`cairn_http_requests_total{code="404",route="unmatched"} 2`,
			`cairn_http_request_duration_seconds_count{route="/boom"} 1`,
		} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

func TestReadyzDatabaseUnreachable(t *testing.T) {
	db := testdb.New(t)
	owner := db.AdminPool(t)
	pool := db.AppPool(t)
	store := eventstore.New(pool, domain.NewRegistry(), eventstore.Options{})
	t.Cleanup(store.Close)
	srv, err := httpserver.New(httpserver.Deps{
		Pool:   pool,
		Store:  store,
		Schema: func(ctx context.Context) (migrations.Status, error) { return migrations.Check(ctx, owner) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	pool.Close()

	resp, body := get(t, ts.URL+"/readyz")
	var got struct{ Status, Reason string }
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || got.Reason != httpserver.ReasonDatabaseUnreachable {
		t.Fatalf("/readyz with the pool closed: %d %s", resp.StatusCode, body)
	}
	if resp, _ := get(t, ts.URL+"/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz with the pool closed: %d", resp.StatusCode)
	}
}

// A part still starting keeps the server out of rotation, and says which.
func TestReadyzWaitsForStartingParts(t *testing.T) {
	srv := newServer(t, 0)
	built := make(chan struct{})
	srv.ReadyAfter("the read models' first build", built)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, body := get(t, ts.URL+"/readyz")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, httpserver.ReasonStarting) || !strings.Contains(body, "first build") {
		t.Fatalf("/readyz while starting: %d %s", resp.StatusCode, body)
	}
	close(built)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, body := get(t, ts.URL+"/readyz")
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz once started: %d %s", resp.StatusCode, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serveWithSlowRoute starts Serve with a route that blocks until release is
// closed, sends one request to it and returns once the request is in flight.
func serveWithSlowRoute(t *testing.T, drain time.Duration) (cancel func(), served <-chan error, responded <-chan error, release chan struct{}) {
	t.Helper()
	srv := newServer(t, drain)
	entered, rel := make(chan struct{}), make(chan struct{})
	srv.Handle("GET /slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-rel
		io.WriteString(w, "done")
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancelCtx := context.WithCancel(context.Background())
	t.Cleanup(cancelCtx)
	servedc, respondedc := make(chan error, 1), make(chan error, 1)
	go func() { servedc <- srv.Serve(ctx, ln) }()
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/slow")
		if err == nil {
			var body []byte
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && (resp.StatusCode != http.StatusOK || string(body) != "done") {
				err = errors.New("unexpected response " + resp.Status + " " + string(body))
			}
		}
		respondedc <- err
	}()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("request never reached the handler")
	}
	return cancelCtx, servedc, respondedc, rel
}

func TestServeDrainsInFlightRequests(t *testing.T) {
	// A drain timeout that the moment between the cancel and the release,
	// however slow the machine, does not reach.
	cancel, served, responded, release := serveWithSlowRoute(t, time.Minute)
	cancel()
	select {
	case err := <-served:
		t.Fatalf("Serve returned with a request in flight: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-responded; err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after draining: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after draining")
	}
}

func TestServeCutsOffAfterDrainTimeout(t *testing.T) {
	cancel, served, responded, release := serveWithSlowRoute(t, 200*time.Millisecond)
	defer close(release)
	cancel()
	select {
	case err := <-served:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Serve after the drain timeout: %v, want a deadline error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not give up draining")
	}
	if err := <-responded; err == nil {
		t.Fatal("the cut-off request succeeded")
	}
}
