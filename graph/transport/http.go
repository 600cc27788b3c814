package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"cairn/graph/apierr"
)

// GraphQL over HTTP, as its specification asks: a request that is not a
// GraphQL request at all (a body that is not a JSON object, variables that
// are not one, an empty or oversized body) is answered with a 4xx status and
// a code before gqlgen sees it, and never echoed into a message or a log; a
// request whose document fails to parse or validate is answered 200 with
// errors and no data, since execution never started; a mutation over GET is
// refused with 405.

// request is a decoded GraphQL request, checked for shape.
type request struct{ params graphql.RawParams }

type requestKey struct{}

// readRequest decodes and checks a POST body or GET query; it answers the
// client itself and returns false when the request is not one.
func (h *Handler) readRequest(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	var rp graphql.RawParams
	var err error
	switch r.Method {
	case http.MethodPost:
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			writeHTTPError(w, http.StatusUnsupportedMediaType, apierr.CodeBadRequest,
				"a POST must carry its request as Content-Type: application/json")
			return r, false
		}
		var body []byte
		body, err = io.ReadAll(r.Body)
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeHTTPError(w, http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge,
				fmt.Sprintf("the request body is over %d bytes: send a smaller query or fewer variables", h.opts.MaxBodyBytes))
			return r, false
		}
		if err != nil {
			writeHTTPError(w, http.StatusBadRequest, apierr.CodeBadRequest, "the request body could not be read")
			return r, false
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		err = decodeBody(body, &rp)
	case http.MethodGet:
		err = decodeQuery(r, &rp)
	case http.MethodOptions:
		return r, true // gqlgen answers with what is allowed
	default:
		w.Header().Set("Allow", "GET, POST, OPTIONS")
		writeHTTPError(w, http.StatusMethodNotAllowed, apierr.CodeBadRequest,
			fmt.Sprintf("%s is not served here: send queries with GET or POST, mutations with POST", r.Method))
		return r, false
	}
	if err != nil {
		writeHTTPError(w, http.StatusBadRequest, apierr.CodeBadRequest, err.Error())
		return r, false
	}
	if r.Method == http.MethodGet {
		if op := operationOf(rp, h.opts.Limits.Bytes); op != "" && op != ast.Query {
			w.Header().Set("Allow", http.MethodPost)
			writeHTTPError(w, http.StatusMethodNotAllowed, apierr.CodeBadRequest,
				fmt.Sprintf("a %s cannot be sent with GET: use POST", op))
			return r, false
		}
	}
	return r.WithContext(context.WithValue(r.Context(), requestKey{}, &request{params: rp})), true
}

// decodeBody checks that a POST body is one GraphQL request: a JSON object
// with a string query, and variables and extensions that are objects.
func decodeBody(body []byte, rp *graphql.RawParams) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New(`the request body is empty: send {"query": "..."}`)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
			return errors.New("batched requests are not supported: send one request per HTTP request")
		}
		return errors.New(`the request body is not a JSON object: send {"query": "...", "variables": {...}}`)
	}
	return decodeFields(fields, rp)
}

func decodeFields(fields map[string]json.RawMessage, rp *graphql.RawParams) error {
	str := func(name string, required bool) (string, error) {
		raw, ok := fields[name]
		if !ok || string(raw) == "null" {
			if required {
				return "", fmt.Errorf("%s is missing: the request must carry a GraphQL document as a string", name)
			}
			return "", nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%s must be a string", name)
		}
		return s, nil
	}
	object := func(name string) (map[string]any, error) {
		raw, ok := fields[name]
		if !ok || string(raw) == "null" {
			return nil, nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("%s must be a JSON object", name)
		}
		return m, nil
	}
	var err error
	if rp.Query, err = str("query", true); err != nil {
		return err
	}
	if strings.TrimSpace(rp.Query) == "" {
		return errors.New("query is empty: the request must carry a GraphQL document")
	}
	if rp.OperationName, err = str("operationName", false); err != nil {
		return err
	}
	if rp.Variables, err = object("variables"); err != nil {
		return err
	}
	rp.Extensions, err = object("extensions")
	return err
}

// decodeQuery reads a GET request's parameters.
func decodeQuery(r *http.Request, rp *graphql.RawParams) error {
	q := r.URL.Query()
	fields := map[string]json.RawMessage{}
	for _, name := range []string{"query", "operationName"} {
		if v := q.Get(name); v != "" || q.Has(name) {
			b, _ := json.Marshal(v)
			fields[name] = b
		}
	}
	for _, name := range []string{"variables", "extensions"} {
		if v := q.Get(name); v != "" {
			if !json.Valid([]byte(v)) {
				return fmt.Errorf("%s must be a JSON object", name)
			}
			fields[name] = json.RawMessage(v)
		}
	}
	return decodeFields(fields, rp)
}

// operationOf is the kind of operation a request would run ("" when its
// document does not parse: gqlgen reports that).
func operationOf(rp graphql.RawParams, maxBytes int) ast.Operation {
	if len(rp.Query) > maxBytes {
		return ""
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: rp.Query})
	if err != nil {
		return ""
	}
	for _, op := range doc.Operations {
		if rp.OperationName == "" || op.Name == rp.OperationName {
			return op.Operation
		}
	}
	return ""
}

// httpTransport runs a checked POST or GET request and answers it with
// application/json.
type httpTransport struct{}

var _ graphql.Transport = httpTransport{}

func (httpTransport) Supports(r *http.Request) bool {
	if r.Header.Get("Upgrade") != "" || strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return false
	}
	if r.Method == http.MethodGet {
		return true
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return r.Method == http.MethodPost && err == nil && mediaType == "application/json"
}

func (httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	req, _ := ctx.Value(requestKey{}).(*request)
	if req == nil {
		writeHTTPError(w, http.StatusBadRequest, apierr.CodeBadRequest, "the request could not be read")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	params := req.params
	params.Headers = r.Header
	start := graphql.Now()
	params.ReadTime = graphql.TraceTiming{Start: start, End: start}
	rc, opErr := exec.CreateOperationContext(ctx, &params)
	if opErr != nil {
		// Parse and validation failures: a GraphQL answer, status 200, and
		// no data since nothing ran.
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), opErr))
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	writeResponse(w, responses(ctx))
}

// response is graphql.Response with data left out when execution never
// started (the specification asks so).
type response struct {
	Errors     gqlerror.List   `json:"errors,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Extensions map[string]any  `json:"extensions,omitempty"`
}

func writeResponse(w http.ResponseWriter, r *graphql.Response) {
	if r == nil {
		r = &graphql.Response{}
	}
	b, err := json.Marshal(response{Errors: r.Errors, Data: r.Data, Extensions: r.Extensions})
	if err != nil {
		writeHTTPError(w, http.StatusInternalServerError, apierr.CodeInternal, "the answer could not be encoded")
		return
	}
	_, _ = w.Write(b)
}
