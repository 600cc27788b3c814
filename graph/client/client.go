// Package client is a small GraphQL client for Cairn's API: queries and
// mutations over HTTP POST, subscriptions over WebSocket (graphql-transport-ws
// or the older graphql-ws) or server-sent events. The cairn CLI, the agent,
// the tests and the benchmarks use it like any other client would.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client talks to a Cairn server, or to any of several replicas, with one
// token. A request a replica refuses to connect goes to the next one at once;
// a connection that fails later moves the client on for the next request.
type Client struct {
	ends  *endpoints
	token string
	http  *http.Client
	// idle is how long a WebSocket subscription may stay silent before the
	// client takes it for dead (0: no limit).
	idle time.Duration
}

// New returns a client for the server at baseURL (http://host:port; the
// /graphql path is added), or for the replicas of a comma-separated list of
// them, acting with token ("" for none).
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{ends: parseEndpoints(baseURL), token: token, http: hc}
}

// Endpoint is the URL of the GraphQL endpoint requests go to now.
func (c *Client) Endpoint() string { return c.ends.now() }

// Endpoints are the URLs of every replica the client may use.
func (c *Client) Endpoints() []string { return append([]string(nil), c.ends.urls...) }

// Token is the token the client acts with ("" for none).
func (c *Client) Token() string { return c.token }

// WithToken returns a copy of the client acting with another token.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// WithIdleTimeout returns a copy of the client whose WebSocket
// subscriptions end with an error when the server sends nothing, not even a
// ping, for d: the way to notice a connection that died without closing.
func (c *Client) WithIdleTimeout(d time.Duration) *Client {
	cp := *c
	cp.idle = d
	return &cp
}

// Request is one GraphQL operation.
type Request struct {
	Query         string         `json:"query"`
	Variables     map[string]any `json:"variables,omitempty"`
	OperationName string         `json:"operationName,omitempty"`
}

// ErrorItem is one entry of a response's errors.
type ErrorItem struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// Code is the error's extensions.code.
func (e ErrorItem) Code() string {
	c, _ := e.Extensions["code"].(string)
	return c
}

// Errors is a response's error list; it is an error itself.
type Errors []ErrorItem

func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, it := range e {
		msgs[i] = it.Message
		if c := it.Code(); c != "" {
			msgs[i] += " (" + c + ")"
		}
	}
	return strings.Join(msgs, "; ")
}

// Code is the code of the first error.
func (e Errors) Code() string {
	if len(e) == 0 {
		return ""
	}
	return e[0].Code()
}

// CodeOf returns the code of the first GraphQL error in err; for an answer
// that is not GraphQL, or a WebSocket the server closed, the code its HTTP
// status or close code stands for; else "".
func CodeOf(err error) string {
	var errs Errors
	var he *HTTPError
	var ce *CloseError
	switch {
	case errors.As(err, &errs):
		return errs.Code()
	case errors.As(err, &he):
		return httpCodes[he.Status]
	case errors.As(err, &ce):
		return closeCodes[ce.Code]
	}
	return ""
}

var httpCodes = map[int]string{
	http.StatusUnauthorized:          "UNAUTHENTICATED",
	http.StatusForbidden:             "FORBIDDEN",
	http.StatusRequestEntityTooLarge: "PAYLOAD_TOO_LARGE",
	http.StatusTooManyRequests:       "RATE_LIMITED",
}

var closeCodes = map[int]string{
	4400: "BAD_REQUEST",
	4401: "UNAUTHENTICATED",
	4403: "FORBIDDEN",
	4429: "RATE_LIMITED",
}

// Permanent reports whether sending the same request again cannot succeed:
// the server refused it for what it is (who sends it, what it asks), not
// for a passing trouble.
func Permanent(err error) bool {
	switch CodeOf(err) {
	case "UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "CONFLICT", "INVALID_INPUT", "BAD_REQUEST", "PAYLOAD_TOO_LARGE":
		return true
	}
	return false
}

// Response is a GraphQL response as received.
type Response struct {
	Data       json.RawMessage `json:"data"`
	Errors     Errors          `json:"errors,omitempty"`
	Extensions map[string]any  `json:"extensions,omitempty"`
	// Status is the HTTP status (0 over WebSocket).
	Status int `json:"-"`
}

// HTTPError is a response that is not GraphQL at all.
type HTTPError struct {
	Status int
	Body   string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("server answered HTTP %d: %s", e.Status, strings.TrimSpace(e.Body))
}

// Raw runs an operation and returns the response whatever its errors.
func (c *Client) Raw(ctx context.Context, req Request) (*Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	var resp *http.Response
	for range c.ends.urls {
		ep := c.ends.now()
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Accept", "application/json")
		if c.token != "" {
			hr.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err = c.http.Do(hr)
		if err == nil {
			break
		}
		if ctx.Err() == nil {
			c.ends.failed(ep)
		}
		if !refused(err) || ctx.Err() != nil || len(c.ends.urls) == 1 {
			return nil, fmt.Errorf("reach %s: %w", ep, err)
		}
	}
	if resp == nil {
		return nil, fmt.Errorf("reach any of %s: every replica refused the connection", strings.Join(c.ends.urls, ", "))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode >= http.StatusInternalServerError {
		// The replica cannot reach its database (503), or is failing in a
		// way of its own: the next request tries another.
		c.ends.failed(resp.Request.URL.String())
	}
	var out Response
	if err := json.Unmarshal(b, &out); err != nil || (out.Data == nil && out.Errors == nil) {
		return nil, &HTTPError{Status: resp.StatusCode, Body: string(b)}
	}
	out.Status = resp.StatusCode
	if code := out.Errors.Code(); code == "UNAVAILABLE" || code == "INTERNAL" {
		// The replica answered but could not reach its database, or failed
		// in a way of its own that a retry there may meet again: the next
		// request tries another.
		c.ends.failed(resp.Request.URL.String())
	}
	return &out, nil
}

// Field decodes the one root field of a response's data into out: what an
// operation that asks for one field returns.
func (r *Response) Field(out any) error {
	if out == nil {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(r.Data, &fields); err != nil {
		return fmt.Errorf("decode response data: %w", err)
	}
	for _, v := range fields {
		return json.Unmarshal(v, out)
	}
	return errors.New("the response holds no data")
}

// Field runs an operation that asks for one root field and decodes that
// field into out (which may be nil). A response with errors returns them as
// Errors.
func (c *Client) Field(ctx context.Context, req Request, out any) error {
	resp, err := c.Raw(ctx, req)
	if err != nil {
		return err
	}
	if len(resp.Errors) > 0 {
		return resp.Errors
	}
	return resp.Field(out)
}

// Do runs an operation and decodes its data into out (which may be nil). A
// response with errors returns them as Errors, after decoding what data
// there is.
func (c *Client) Do(ctx context.Context, query string, vars map[string]any, out any) error {
	resp, err := c.Raw(ctx, Request{Query: query, Variables: vars})
	if err != nil {
		return err
	}
	if out != nil && len(resp.Data) > 0 && string(resp.Data) != "null" {
		if err := json.Unmarshal(resp.Data, out); err != nil {
			return fmt.Errorf("decode response data: %w", err)
		}
	}
	if len(resp.Errors) > 0 {
		return resp.Errors
	}
	return nil
}
