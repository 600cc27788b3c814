package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"cairn/graph/hostile"
)

// FuzzGraphQLHTTP sends arbitrary requests to the GraphQL endpoint — any
// body, content type, token, method and query string — and holds the edge's
// promises: never a 5xx (a panic would be one), an answer in bounded time,
// and a JSON answer whose errors carry a code. `make test` runs it briefly;
// its seeds (the hostile corpus among them) run with every `go test`.
func FuzzGraphQLHTTP(f *testing.F) {
	e := newReadEnv(f)
	for _, h := range hostile.Corpus() {
		b, _ := io.ReadAll(io.LimitReader(h.Reader(), 100<<10))
		f.Add(h.Method == http.MethodGet, "application/json", h.Token, b, h.Query)
	}
	for _, s := range []struct {
		get                bool
		contentType, token string
		body               string
		query              string
	}{
		{false, "application/json", "admin", `{"query":"{ viewer { role } nodes(first: 2) { edges { node { id } } } }"}`, ""},
		{false, "application/json", "tenantA", `{"query":"query($id: ID!) { node(id: $id) { id } }","variables":{"id":"x"}}`, ""},
		{false, "application/graphql-response+json", "", `{"query":"{ __schema { types { name } } }"}`, ""},
		{false, "text/plain", "agent", `{"query":"{ viewer { role } }"}`, ""},
		{true, "", "admin", "", "{ viewer { role } }"},
		{false, "application/json; charset=utf-16", "bogus", "\xff\xfe{", ""},
		{false, "application/json", "admin", `{"query":"{ events(last: 3) { edges { cursor } } tenants(first: 0) { pageInfo { hasNextPage } } }"}`, ""},
	} {
		f.Add(s.get, s.contentType, s.token, []byte(s.body), s.query)
	}
	f.Fuzz(func(t *testing.T, get bool, contentType, token string, body []byte, query string) {
		method, url := http.MethodPost, e.url+"/graphql"
		var rd io.Reader = bytes.NewReader(body)
		if get {
			method, rd = http.MethodGet, nil
			url += "?query=" + neturl.QueryEscape(query)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, url, rd)
		if err != nil {
			t.Skip() // not a request a client could send
		}
		if contentType != "" && validHeader(contentType) {
			req.Header.Set("Content-Type", contentType)
		}
		if token != "" && validHeader(token) {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Accept", "application/json")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("no answer after %v: %v", time.Since(start), err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("HTTP %d after %v", resp.StatusCode, d)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("HTTP %d: %.500s", resp.StatusCode, out)
		}
		if resp.StatusCode == http.StatusOK || resp.StatusCode >= 400 {
			var answer struct {
				Errors []struct {
					Extensions map[string]any `json:"extensions"`
				} `json:"errors"`
			}
			if err := json.Unmarshal(out, &answer); err != nil {
				t.Fatalf("HTTP %d, not JSON: %.500s", resp.StatusCode, out)
			}
			for _, e := range answer.Errors {
				if c, _ := e.Extensions["code"].(string); c == "" || c == "INTERNAL" {
					t.Fatalf("HTTP %d, an error with code %q: %.500s", resp.StatusCode, c, out)
				}
			}
		}
	})
}

// validHeader reports whether net/http would send s as a header value.
func validHeader(s string) bool {
	for _, r := range s {
		if r < ' ' && r != '\t' || r == 0x7f || r > 0x7e {
			return false
		}
	}
	return strings.TrimSpace(s) == s
}
