package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn/plugins"
	httpplugin "cairn/plugins/http"
)

var secret = []byte("0123456789abcdef-test-secret")

var dnsType = []plugins.ResourceType{{Name: "dns-record", Schema: json.RawMessage(`{"type":"object","required":["name"]}`)}}

// endpoint is a small DNS service that verifies every request.
type endpoint struct {
	mu      sync.Mutex
	records map[string]string // resource id → name
	calls   []string
}

func (e *endpoint) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	body, err := httpplugin.VerifyRequest(secret, r, time.Now())
	if err != nil {
		w.WriteHeader(nethttp.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":%q}`, err.Error())
		return
	}
	var req struct {
		Operation  string `json:"operation"`
		ResourceID string `json:"resourceId"`
		Properties struct {
			Name string `json:"name"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(nethttp.StatusBadRequest)
		return
	}
	if r.Header.Get(httpplugin.HeaderOperation) != req.Operation || r.Header.Get(httpplugin.HeaderResource) != req.ResourceID {
		w.WriteHeader(nethttp.StatusBadRequest)
		fmt.Fprint(w, `{"error":"headers disagree with the body"}`)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, req.Operation)
	switch req.Operation {
	case "describe":
		fmt.Fprint(w, `{"types":[{"name":"dns-record","schema":{"type":"object"}}]}`)
	case "create":
		e.records[req.ResourceID] = req.Properties.Name
		fmt.Fprintf(w, `{"outputs":{"fqdn":%q}}`, req.Properties.Name+".example.net")
	case "destroy":
		delete(e.records, req.ResourceID)
		fmt.Fprint(w, `{}`)
	case "observe":
		name, ok := e.records[req.ResourceID]
		if !ok {
			w.WriteHeader(nethttp.StatusNotFound)
			fmt.Fprint(w, `{"error":"no such record"}`)
			return
		}
		fmt.Fprintf(w, `{"outputs":{"fqdn":%q}}`, name+".example.net")
	default:
		fmt.Fprint(w, `{"outputs":null}`)
	}
}

func newPlugin(t *testing.T, h nethttp.Handler, mutate func(*httpplugin.Config)) *httpplugin.Plugin {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	// A timeout no loaded machine reaches; the test of timeouts sets its own.
	cfg := httpplugin.Config{Endpoint: srv.URL, Secret: secret, Types: dnsType, Timeout: 30 * time.Second, Backoff: time.Millisecond}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := httpplugin.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func req(id string) plugins.Request {
	return plugins.Request{ResourceID: id, Type: "dns-record", Properties: json.RawMessage(`{"name":"www"}`)}
}

func TestLifecycleSignedAndIdempotent(t *testing.T) {
	t.Parallel()
	ep := &endpoint{records: map[string]string{}}
	p := newPlugin(t, ep, func(c *httpplugin.Config) { c.Types = nil }) // types come from describe
	if ts := p.ResourceTypes(); len(ts) != 1 || ts[0].Name != "dns-record" {
		t.Fatalf("types from describe: %+v", ts)
	}
	ctx := context.Background()
	for range 2 {
		out, err := p.Create(ctx, req("r1"))
		if err != nil || string(out) != `{"fqdn":"www.example.net"}` {
			t.Fatalf("create: %s %v", out, err)
		}
	}
	if out, err := p.Observe(ctx, req("r1")); err != nil || !strings.Contains(string(out), "www.example.net") {
		t.Fatalf("observe: %s %v", out, err)
	}
	if out, err := p.Start(ctx, req("r1")); err != nil || out != nil && string(out) != "null" {
		t.Fatalf("start: %s %v", out, err)
	}
	for range 2 {
		if _, err := p.Destroy(ctx, req("r1")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Observe(ctx, req("r1")); !errors.Is(err, plugins.ErrNotFound) {
		t.Fatalf("observe after destroy: %v", err)
	}
}

func TestWrongSecretIsRefusedWithoutRetry(t *testing.T) {
	t.Parallel()
	ep := &endpoint{records: map[string]string{}}
	p := newPlugin(t, ep, func(c *httpplugin.Config) { c.Secret = []byte("another-secret-of-16+") })
	_, err := p.Create(context.Background(), req("r1"))
	var ee *httpplugin.EndpointError
	if !errors.As(err, &ee) || ee.Status != 401 || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("err = %v", err)
	}
	if len(ep.calls) != 0 {
		t.Fatalf("an unsigned request reached the handler: %v", ep.calls)
	}
}

func TestRetriesServerErrorsOnly(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	flaky := nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if n.Add(1) < 3 {
			w.WriteHeader(nethttp.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"outputs":{"ok":true}}`)
	})
	p := newPlugin(t, flaky, nil)
	out, err := p.Create(context.Background(), req("r1"))
	if err != nil || string(out) != `{"ok":true}` || n.Load() != 3 {
		t.Fatalf("out %s err %v after %d attempts", out, err, n.Load())
	}

	var m atomic.Int32
	bad := nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		m.Add(1)
		w.WriteHeader(nethttp.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error":{"message":"zone example.net is not managed here"}}`)
	})
	p = newPlugin(t, bad, nil)
	_, err = p.Create(context.Background(), req("r1"))
	if err == nil || !strings.Contains(err.Error(), "zone example.net is not managed here") || m.Load() != 1 {
		t.Fatalf("4xx: err %v after %d attempts", err, m.Load())
	}

	var k atomic.Int32
	down := nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		k.Add(1)
		w.WriteHeader(nethttp.StatusInternalServerError)
		fmt.Fprint(w, "database is down")
	})
	p = newPlugin(t, down, func(c *httpplugin.Config) { c.MaxAttempts = 3 })
	_, err = p.Create(context.Background(), req("r1"))
	if err == nil || !strings.Contains(err.Error(), "database is down") || !strings.Contains(err.Error(), "after 3 attempts") || k.Load() != 3 {
		t.Fatalf("5xx: err %v after %d attempts", err, k.Load())
	}
}

func TestTimeoutIsRetriedThenReported(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		n.Add(1)
		// The server notices a client hanging up only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	p := newPlugin(t, slow, func(c *httpplugin.Config) { c.Timeout = 50 * time.Millisecond; c.MaxAttempts = 2 })
	start := time.Now()
	_, err := p.Create(context.Background(), req("r1"))
	if err == nil || !strings.Contains(err.Error(), "did not answer within 50ms") || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("err %v after %d attempts", err, n.Load())
	}
	// The endpoint never answers: only the timeouts end the call. The bound
	// is there to catch a much longer timeout than the one configured.
	if time.Since(start) > 20*time.Second {
		t.Fatalf("took %s", time.Since(start))
	}
}

func TestGarbageAnswers(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"not JSON":        `<html>502 Bad Gateway</html>`,
		"not an object":   `[1,2,3]`,
		"outputs a list":  `{"outputs":["a"]}`,
		"outputs a word":  `{"outputs":"done"}`,
		"truncated JSON":  `{"outputs":{"a":`,
		"empty 200 reply": ``,
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			p := newPlugin(t, nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
				n.Add(1)
				fmt.Fprint(w, answer)
			}), nil)
			_, err := p.Create(context.Background(), req("r1"))
			var re *httpplugin.ResponseError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "cannot use") {
				t.Fatalf("err = %v", err)
			}
			if n.Load() != 1 {
				t.Fatalf("a garbage answer was retried (%d attempts)", n.Load())
			}
		})
	}
}

func TestUnreachableEndpoint(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(nethttp.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p, err := httpplugin.New(context.Background(), httpplugin.Config{Endpoint: url, Secret: secret, Types: dnsType, Backoff: time.Millisecond, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Create(context.Background(), req("r1"))
	if err == nil || !strings.Contains(err.Error(), "cannot reach") || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("err = %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []httpplugin.Config{
		{Endpoint: "ftp://example.net", Secret: secret, Types: dnsType},
		{Endpoint: "/relative", Secret: secret, Types: dnsType},
		{Endpoint: "http://127.0.0.1:1", Secret: []byte("short"), Types: dnsType},
	} {
		if _, err := httpplugin.New(context.Background(), c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"operation":"create"}`)
	ts, sig := httpplugin.Sign(secret, now, body)
	if err := httpplugin.Verify(secret, ts, sig, body, now.Add(time.Minute), httpplugin.DefaultTolerance); err != nil {
		t.Fatal(err)
	}
	bad := map[string]error{
		"tampered body": httpplugin.Verify(secret, ts, sig, []byte(`{"operation":"destroy"}`), now, time.Minute),
		"other secret":  httpplugin.Verify([]byte("x"), ts, sig, body, now, time.Minute),
		"replayed":      httpplugin.Verify(secret, ts, sig, body, now.Add(time.Hour), time.Minute),
		"no prefix":     httpplugin.Verify(secret, ts, strings.TrimPrefix(sig, "sha256="), body, now, time.Minute),
		"bad timestamp": httpplugin.Verify(secret, "yesterday", sig, body, now, time.Minute),
	}
	for name, err := range bad {
		var se *httpplugin.SignatureError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
