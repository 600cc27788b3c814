package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"runtime"
	"strings"
	"testing"

	"cairn/graph"
	"cairn/graph/apierr"
)

// hostileRequest is one request an attacker (or a broken client) sends, and
// the answer it must get: an HTTP status, and the code of the first error.
type hostileRequest struct {
	name        string
	method      string
	contentType string
	token       string
	body        io.Reader
	query       string // for GET
	status      int
	code        string
	noData      bool // execution never started: no data key
}

// fragmentBomb is a document of about a kilobyte whose fragments expand to
// 2^levels copies of a field.
func fragmentBomb(levels int) string {
	var b strings.Builder
	b.WriteString("query { ...F0 }\n")
	for i := 0; i < levels; i++ {
		fmt.Fprintf(&b, "fragment F%d on Query { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Query { viewer { role } }\n", levels)
	return b.String()
}

func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

// hostileCorpus is the corpus of attacks every cairnd must survive, each
// answered with a clear code, quickly, before anything runs.
func hostileCorpus() []hostileRequest {
	aliases := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, " a%d: viewer { role }", i)
		}
		b.WriteString(" }")
		return b.String()
	}
	directives := func(n int) string {
		return "{ viewer " + strings.Repeat("@include(if: true) ", n) + "{ role } }"
	}
	deep := func(n int) string {
		return strings.Repeat("{ viewer ", n) + strings.Repeat("}", n)
	}
	q := func(query string) io.Reader { return jsonBody(map[string]any{"query": query}) }
	return []hostileRequest{
		{name: "fragment bomb, anonymous", body: q(fragmentBomb(30)), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "fragment bomb, signed in", token: "admin", body: q(fragmentBomb(30)), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "fragment cycle", token: "admin", body: q("query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }"), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "alias flood", token: "admin", body: q(aliases(20000)), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "alias flood within the size limits", token: "admin", body: q(aliases(3000)), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "repeated directives", token: "admin", body: q(directives(1000)), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "directive flood", token: "admin", body: q(directives(5000)), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "deep nesting", token: "admin", body: q(deep(2000)), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "long string", token: "admin", body: q(`{ node(id: "` + strings.Repeat("x", 200_000) + `") { id } }`), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "syntax error", token: "admin", body: q("{ viewer { "), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "unknown field", token: "admin", body: q("{ nope }"), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "malformed JSON", body: strings.NewReader(`{"query": "{ viewer { role } }"`), status: 400, code: apierr.CodeBadRequest},
		{name: "batched array", body: strings.NewReader(`[{"query": "{ viewer { role } }"}]`), status: 400, code: apierr.CodeBadRequest},
		{name: "variables not an object", body: strings.NewReader(`{"query": "{ viewer { role } }", "variables": [1]}`), status: 400, code: apierr.CodeBadRequest},
		{name: "query not a string", body: strings.NewReader(`{"query": 5}`), status: 400, code: apierr.CodeBadRequest},
		{name: "no query", body: strings.NewReader(`{"variables": {}}`), status: 400, code: apierr.CodeBadRequest},
		{name: "empty body", body: strings.NewReader(``), status: 400, code: apierr.CodeBadRequest},
		{name: "JSON null", body: strings.NewReader(`null`), status: 400, code: apierr.CodeBadRequest},
		{name: "oversized body", body: bytes.NewReader(bytes.Repeat([]byte(" "), 2<<20)), status: 413, code: apierr.CodePayloadTooLarge},
		{name: "oversized chunked body", body: io.MultiReader(strings.NewReader(`{"query": "`), io.LimitReader(repeatReader('x'), 50<<20)), status: 413, code: apierr.CodePayloadTooLarge},
		{name: "variables of the wrong type", token: "admin", body: jsonBody(map[string]any{"query": "query($n: Int) { nodes(first: $n) { edges { node { id } } } }", "variables": map[string]any{"n": "many"}}), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "mutation over GET", method: http.MethodGet, token: "admin", query: `mutation { createTenant(input: {name: "x"}) { cursor } }`, status: 405, code: apierr.CodeBadRequest},
		{name: "GET without a query", method: http.MethodGet, status: 400, code: apierr.CodeBadRequest},
		{name: "not JSON", contentType: "text/plain", body: q("{ viewer { role } }"), status: 415, code: apierr.CodeBadRequest},
		{name: "no content type", contentType: "-", body: q("{ viewer { role } }"), status: 415, code: apierr.CodeBadRequest},
		{name: "PUT", method: http.MethodPut, body: q("{ viewer { role } }"), status: 405, code: apierr.CodeBadRequest},
		{name: "unknown operation name", token: "admin", body: jsonBody(map[string]any{"query": "query A { viewer { role } }", "operationName": "B"}), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "too complex", token: "admin", body: q("{ nodes(first: 500) { edges { node { statistics(maxPoints: 10000) { time } } } } }"), status: 200, code: apierr.CodeInvalidInput, noData: true},
		{name: "anonymous, large", body: q("{ " + strings.Repeat("__typename ", 5000) + "}"), status: 200, code: apierr.CodeInvalidInput, noData: true},
	}
}

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// repeatReader reads one byte forever.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// Every hostile request gets its status and code before anything runs (an
// exponential walk would not finish within the test's time), and the server answers ordinary requests afterwards.
func TestHostileRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	heapBefore := heapInUse()
	for _, h := range hostileCorpus() {
		method := h.method
		if method == "" {
			method = http.MethodPost
		}
		url := e.url + "/graphql"
		if h.query != "" {
			url += "?query=" + neturl.QueryEscape(h.query)
		}
		req, err := http.NewRequestWithContext(ctxT(t), method, url, h.body)
		if err != nil {
			t.Fatal(err)
		}
		if method != http.MethodGet && h.contentType != "-" {
			ct := h.contentType
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
		}
		if h.token != "" {
			req.Header.Set("Authorization", "Bearer "+h.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", h.name, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		var out struct {
			Errors []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
			Data *json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal(body, &out)
		switch {
		case resp.StatusCode != h.status:
			t.Errorf("%s: HTTP %d, want %d: %.300s", h.name, resp.StatusCode, h.status, body)
		case len(out.Errors) == 0 || out.Errors[0].Extensions["code"] != h.code:
			t.Errorf("%s: errors %.300s, want code %s", h.name, body, h.code)
		case h.noData && strings.Contains(string(body), `"data"`):
			t.Errorf("%s: a data key although nothing ran: %.300s", h.name, body)
		case strings.TrimSpace(out.Errors[0].Message) == "":
			t.Errorf("%s: no message", h.name)
		case len(out.Errors[0].Message) > 500:
			t.Errorf("%s: a message of %d bytes (the request echoed?)", h.name, len(out.Errors[0].Message))
		}
	}
	// Nothing the corpus sent is held on to (the server runs in this
	// process: its heap is the test's).
	if grew := int64(heapInUse()) - int64(heapBefore); grew > 128<<20 {
		t.Errorf("the heap grew by %d MiB over the corpus", grew>>20)
	}
	// Still serving.
	var v struct{ Viewer struct{ Role string } }
	if err := e.client("admin").Do(ctxT(t), `{ viewer { role } }`, nil, &v); err != nil || v.Viewer.Role != "ADMIN" {
		t.Fatalf("after the corpus: %+v %v", v, err)
	}
}
