package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn/graph"
	"cairn/graph/client"
	"cairn/graph/transport"
)

// openSSE posts a request asking for server-sent events and returns the
// response, checked to be an event stream.
func openSSE(ctx context.Context, t *testing.T, e *env, token, query string) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("Content-Type %q, body %s", ct, b)
	}
	return resp
}

// sseLines posts a request over server-sent events and returns the
// stream's lines until the server ends it.
func sseLines(t *testing.T, e *env, token, query string) []string {
	t.Helper()
	resp := openSSE(ctxT(t), t, e, token, query)
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// The event stream speaks as gqlgen's transport did: a comment first, each
// result as one "next" event whose data is one line, then "complete".
func TestServerSentEventsOnTheWire(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	cases := []struct {
		name, query string
		want        []string
	}{
		{"query", `{ __typename }`, []string{":", "", "event: next", `data: {"data":{"__typename":"Query"}}`, "", "event: complete", ""}},
		{"invalid", `subscription { nosuchfield }`, []string{":", "", "event: next",
			`data: {"errors":[{"message":"Cannot query field \"nosuchfield\" on type \"Subscription\".","locations":[{"line":1,"column":16}],"extensions":{"code":"INVALID_INPUT","reason":"GRAPHQL_VALIDATION_FAILED"}}],"data":null}`,
			"", "event: complete", ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := sseLines(t, e, "admin", tc.query)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("stream:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// Over HTTP/1.1 an event stream is the connection's last response: not
// chunked (each chunk cost a burst of events three writes), the connection
// closed after "complete", as the server-sent events recommendation has it.
func TestServerSentEventsAreNotChunked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	u, err := url.Parse(e.url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	body := `{"query":"{ __typename }"}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer admin\r\nAccept: text/event-stream\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", u.RequestURI(), u.Host, len(body), body)
	raw, err := io.ReadAll(conn) // ends only if the server closes the connection
	if err != nil {
		t.Fatalf("the connection was not closed after the stream: %v; read %q", err, raw)
	}
	head, stream, ok := strings.Cut(string(raw), "\r\n\r\n")
	if !ok {
		t.Fatalf("no end of the response's head in %q", raw)
	}
	if strings.Contains(strings.ToLower(head), "transfer-encoding") || !strings.Contains(head, "Connection: close") {
		t.Fatalf("head:\n%s", head)
	}
	want := ":\n\nevent: next\ndata: {\"data\":{\"__typename\":\"Query\"}}\n\nevent: complete\n\n"
	if stream != want {
		t.Fatalf("body %q, want %q", stream, want)
	}
}

// Subscriptions of one operation and caller are sent the same results,
// whichever of them rendered an event first and over either transport, in
// order; another operation over the same events gets its own shape.
func TestSubscribersOfOneOperationGetTheSameResults(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	admin := e.client("admin")
	start := e.createTenant(admin, "before").CreateTenant.Cursor
	const full = `subscription($after: Cursor) { events(filter: {streamTypes: ["tenant"]}, after: $after) { cursor type streamId payload } }`
	const short = `subscription($after: Cursor) { events(filter: {streamTypes: ["tenant"]}, after: $after) { cursor type } }`
	vars := map[string]any{"after": start}
	subs := []struct {
		proto client.Protocol
		query string
	}{{client.TransportWS, full}, {client.SSE, full}, {client.TransportWS, full}, {client.SSE, short}}
	open := make([]*client.Subscription, len(subs))
	for i, s := range subs {
		sub, err := admin.Subscribe(ctxT(t), s.proto, client.Request{Query: s.query, Variables: vars})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		open[i] = sub
	}
	// Writers side by side, so that commits carry several events and the
	// subscriptions are handed bursts.
	const writers, each = 4, 15
	var g errgroup.Group
	for w := range writers {
		g.Go(func() error {
			for i := range each {
				if err := admin.Do(ctxT(t), createTenant, map[string]any{"name": fmt.Sprintf("t%d-%d", w, i)}, nil); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	results := make([][]string, len(subs))
	for i, sub := range open {
		for range writers * each {
			r, err := sub.Next(ctxT(t))
			if err != nil {
				t.Fatalf("subscription %d: %v", i, err)
			}
			if len(r.Errors) > 0 {
				t.Fatalf("subscription %d: %v", i, r.Errors)
			}
			results[i] = append(results[i], string(r.Data))
		}
	}
	for i := 1; i < 3; i++ {
		for j := range results[0] {
			if results[i][j] != results[0][j] {
				t.Fatalf("result %d of subscription %d differs:\n%s\nfrom the first's:\n%s", j, i, results[i][j], results[0][j])
			}
		}
	}
	seen := map[string]bool{}
	for j, full := range results[0] {
		var f, s struct {
			Events map[string]any
		}
		if err := json.Unmarshal([]byte(full), &f); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(results[3][j]), &s); err != nil {
			t.Fatal(err)
		}
		if len(f.Events) != 4 || len(s.Events) != 2 || f.Events["cursor"] != s.Events["cursor"] {
			t.Fatalf("result %d: %v for the full operation, %v for the short one", j, f.Events, s.Events)
		}
		c := f.Events["cursor"].(string)
		if seen[c] {
			t.Fatalf("event %s delivered twice", c)
		}
		seen[c] = true
	}
}

// A quiet event stream is sent a keep-alive comment every interval.
func TestServerSentEventsKeepAlive(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{Transport: transport.Options{KeepAlive: 100 * time.Millisecond}})
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	resp := openSSE(ctx, t, e, "admin", `subscription { events(filter: {streamTypes: ["none"]}) { cursor } }`)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	pings := 0
	start := time.Now()
	for pings < 3 && sc.Scan() {
		switch line := sc.Text(); {
		case line == ": ping":
			pings++
		case line != "" && line != ":":
			t.Fatalf("unexpected line %q on a quiet stream", line)
		}
	}
	if pings < 3 {
		t.Fatalf("%d pings, then %v", pings, sc.Err())
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Fatalf("3 pings in %s: faster than the interval", took)
	}
}
