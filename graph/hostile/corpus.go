// Package hostile is the corpus of hostile requests the GraphQL endpoint
// must answer with a clear code, quickly, before anything runs: fragment
// bombs, alias and directive floods, deep nesting, malformed, oversized and
// chunked bodies, bad variables. The API's tests send it, and so does the
// benchmark that times it.
package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"cairn/graph/apierr"
)

// Request is one request an attacker (or a broken client) sends, and
// the answer it must get: an HTTP status, and the code of the first error.
type Request struct {
	Name        string
	Method      string // POST when empty
	ContentType string // application/json when empty, none when "-"
	Token       string // a caller's name, e.g. "admin"; anonymous when empty
	Body        []byte
	// Stream, when set, is a body of unknown length, sent chunked.
	Stream func() io.Reader
	Query  string // for GET
	Status int
	Code   string
	NoData bool // execution never started: no data key
}

// Reader is the request's body.
func (r Request) Reader() io.Reader {
	if r.Stream != nil {
		return r.Stream()
	}
	return bytes.NewReader(r.Body)
}

// NewRequest is the request as it is sent to the GraphQL endpoint at
// endpoint: POSTed unless it names its method, its query in the URL for a
// GET, and signed with token when the request has a caller.
func (r Request) NewRequest(ctx context.Context, endpoint, token string) (*http.Request, error) {
	method := r.Method
	if method == "" {
		method = http.MethodPost
	}
	u := endpoint
	if r.Query != "" {
		u += "?query=" + url.QueryEscape(r.Query)
	}
	var body io.Reader
	if method != http.MethodGet {
		body = r.Reader()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if method != http.MethodGet && r.ContentType != "-" {
		ct := r.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req, nil
}

// FragmentBomb is a document of about a kilobyte whose fragments expand to
// 2^levels copies of a field.
func FragmentBomb(levels int) string {
	var b strings.Builder
	b.WriteString("query { ...F0 }\n")
	for i := 0; i < levels; i++ {
		fmt.Fprintf(&b, "fragment F%d on Query { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Query { viewer { role } }\n", levels)
	return b.String()
}

// JSONBody is v as a request body.
func JSONBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Corpus is the corpus of attacks every cairnd must survive, each
// answered with a clear code, quickly, before anything runs.
func Corpus() []Request {
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
	q := func(query string) []byte { return JSONBody(map[string]any{"query": query}) }
	return []Request{
		{Name: "fragment bomb, anonymous", Body: q(FragmentBomb(30)), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "fragment bomb, signed in", Token: "admin", Body: q(FragmentBomb(30)), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "fragment cycle", Token: "admin", Body: q("query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }"), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "alias flood", Token: "admin", Body: q(aliases(20000)), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "alias flood within the size limits", Token: "admin", Body: q(aliases(3000)), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "repeated directives", Token: "admin", Body: q(directives(1000)), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "directive flood", Token: "admin", Body: q(directives(5000)), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "deep nesting", Token: "admin", Body: q(deep(2000)), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "long string", Token: "admin", Body: q(`{ node(id: "` + strings.Repeat("x", 200_000) + `") { id } }`), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "syntax error", Token: "admin", Body: q("{ viewer { "), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "unknown field", Token: "admin", Body: q("{ nope }"), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "malformed JSON", Body: []byte(`{"query": "{ viewer { role } }"`), Status: 400, Code: apierr.CodeBadRequest},
		{Name: "batched array", Body: []byte(`[{"query": "{ viewer { role } }"}]`), Status: 400, Code: apierr.CodeBadRequest},
		{Name: "variables not an object", Body: []byte(`{"query": "{ viewer { role } }", "variables": [1]}`), Status: 400, Code: apierr.CodeBadRequest},
		{Name: "query not a string", Body: []byte(`{"query": 5}`), Status: 400, Code: apierr.CodeBadRequest},
		{Name: "no query", Body: []byte(`{"variables": {}}`), Status: 400, Code: apierr.CodeBadRequest},
		{Name: "empty body", Body: []byte(``), Status: 400, Code: apierr.CodeBadRequest},
		{Name: "JSON null", Body: []byte(`null`), Status: 400, Code: apierr.CodeBadRequest},
		{Name: "oversized body", Body: bytes.Repeat([]byte(" "), 2<<20), Status: 413, Code: apierr.CodePayloadTooLarge},
		{Name: "oversized chunked body", Stream: func() io.Reader {
			return io.MultiReader(strings.NewReader(`{"query": "`), io.LimitReader(repeatReader('x'), 50<<20))
		}, Status: 413, Code: apierr.CodePayloadTooLarge},
		{Name: "variables of the wrong type", Token: "admin", Body: JSONBody(map[string]any{"query": "query($n: Int) { nodes(first: $n) { edges { node { id } } } }", "variables": map[string]any{"n": "many"}}), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "mutation over GET", Method: http.MethodGet, Token: "admin", Query: `mutation { createTenant(input: {name: "x"}) { cursor } }`, Status: 405, Code: apierr.CodeBadRequest},
		{Name: "GET without a query", Method: http.MethodGet, Status: 400, Code: apierr.CodeBadRequest},
		{Name: "not JSON", ContentType: "text/plain", Body: q("{ viewer { role } }"), Status: 415, Code: apierr.CodeBadRequest},
		{Name: "no content type", ContentType: "-", Body: q("{ viewer { role } }"), Status: 415, Code: apierr.CodeBadRequest},
		{Name: "PUT", Method: http.MethodPut, Body: q("{ viewer { role } }"), Status: 405, Code: apierr.CodeBadRequest},
		{Name: "unknown operation name", Token: "admin", Body: JSONBody(map[string]any{"query": "query A { viewer { role } }", "operationName": "B"}), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "too complex", Token: "admin", Body: q("{ nodes(first: 500) { edges { node { statistics(maxPoints: 10000) { time } } } } }"), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
		{Name: "anonymous, large", Body: q("{ " + strings.Repeat("__typename ", 5000) + "}"), Status: 200, Code: apierr.CodeInvalidInput, NoData: true},
	}
}

// repeatReader reads one byte forever.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}
