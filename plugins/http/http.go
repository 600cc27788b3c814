// Package http is the plugin that forwards each lifecycle call to an external
// HTTP endpoint as a signed JSON request, so any infrastructure with an HTTP
// API (a DNS provider, a storage appliance, an in-house provisioning
// service) can be driven by descriptors.
//
// Every call is a POST of a JSON body to one endpoint:
//
//	{"operation": "create", "resourceId": "…", "type": "dns-record",
//	 "properties": {…}, "placement": {…}, "outputs": {…}}
//
// signed with HMAC-SHA256 over the timestamp and the body (see Sign and
// Verify). A 2xx answer carries {"outputs": {…}}; any other answer may carry
// {"error": "…"}, which becomes the call's error. Calls are retried with
// exponential backoff on 5xx answers, timeouts and failed connections, never
// on 4xx answers. docs/plugins.md describes the protocol for endpoint
// authors.
package http

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cairn/plugins"
)

// Headers of a signed request.
const (
	HeaderTimestamp = "X-Cairn-Timestamp" // Unix seconds
	HeaderSignature = "X-Cairn-Signature" // "sha256=" + hex HMAC
	HeaderOperation = "X-Cairn-Operation"
	HeaderResource  = "X-Cairn-Resource-Id"
)

// OpDescribe asks the endpoint for its resource types.
const OpDescribe = "describe"

// DefaultTolerance is how far a request's timestamp may be from the
// receiver's clock before Verify refuses it (a replay window).
const DefaultTolerance = 5 * time.Minute

// Config configures one endpoint.
type Config struct {
	// Endpoint is the http or https URL every call is POSTed to.
	Endpoint string
	// Secret is the HMAC key shared with the endpoint; at least 16 bytes.
	Secret []byte
	// Types are the resource types the endpoint serves. When empty, New asks
	// the endpoint with a "describe" call.
	Types []plugins.ResourceType
	// Timeout bounds one attempt; default 30 s.
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one call; default 4.
	MaxAttempts int
	// Backoff is the wait before the first retry, doubled for each further
	// one up to 30 s; default 200 ms.
	Backoff time.Duration
	// Client sends the requests; default a client with no overall timeout
	// (Timeout applies per attempt).
	Client *nethttp.Client
	// Clock stamps requests; default time.Now.
	Clock func() time.Time
}

// Plugin forwards calls to one endpoint. It is safe for concurrent use.
type Plugin struct {
	plugins.ByOp // each lifecycle call is one signed request
	cfg          Config
}

// New checks the configuration and, when it lists no types, asks the
// endpoint for them.
func New(ctx context.Context, cfg Config) (*Plugin, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("http plugin: endpoint %q must be an absolute http or https URL", cfg.Endpoint)
	}
	if len(cfg.Secret) < 16 {
		return nil, errors.New("http plugin: the signing secret must be at least 16 bytes")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 4
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 200 * time.Millisecond
	}
	if cfg.Client == nil {
		cfg.Client = &nethttp.Client{}
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	p := &Plugin{cfg: cfg}
	types := cfg.Types
	if len(types) == 0 {
		raw, err := p.post(ctx, body{Operation: OpDescribe})
		if err != nil {
			return nil, fmt.Errorf("http plugin: ask %s for its resource types: %w", cfg.Endpoint, err)
		}
		var d struct {
			Types []plugins.ResourceType `json:"types"`
		}
		if err := json.Unmarshal(raw, &d); err != nil || len(d.Types) == 0 {
			return nil, fmt.Errorf("http plugin: %s answered describe without a \"types\" list of {name, schema}", cfg.Endpoint)
		}
		types = d.Types
	}
	p.ByOp = plugins.ByOp{Types: types, Call: p.lifecycle}
	return p, nil
}

// body is the JSON every call sends.
type body struct {
	Operation  string             `json:"operation"`
	ResourceID string             `json:"resourceId,omitempty"`
	Type       string             `json:"type,omitempty"`
	Properties json.RawMessage    `json:"properties,omitempty"`
	Placement  *plugins.Placement `json:"placement,omitempty"`
	Outputs    json.RawMessage    `json:"outputs,omitempty"`
}

// lifecycle forwards one lifecycle call to the endpoint. A 404 answer to
// observe means the resource does not exist (plugins.ErrNotFound).
func (p *Plugin) lifecycle(ctx context.Context, op plugins.Op, r plugins.Request) (json.RawMessage, error) {
	raw, err := p.post(ctx, body{
		Operation: string(op), ResourceID: r.ResourceID, Type: r.Type,
		Properties: r.Properties, Placement: r.Placement, Outputs: r.Outputs,
	})
	if err != nil {
		var ee *EndpointError
		if op == plugins.OpObserve && errors.As(err, &ee) && ee.Status == nethttp.StatusNotFound {
			return nil, fmt.Errorf("%w: %w", plugins.ErrNotFound, err)
		}
		return nil, err
	}
	var answer struct {
		Outputs json.RawMessage `json:"outputs"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, &ResponseError{Endpoint: p.cfg.Endpoint, Reason: "the answer is not a JSON object with \"outputs\"", Snippet: snippet(raw)}
	}
	if _, err := plugins.CheckOutputs(answer.Outputs); err != nil {
		return nil, &ResponseError{Endpoint: p.cfg.Endpoint, Reason: "\"outputs\" must be a JSON object", Snippet: snippet(answer.Outputs)}
	}
	return answer.Outputs, nil
}

// EndpointError is a non-2xx answer, with the endpoint's message if it gave
// one.
type EndpointError struct {
	Endpoint string
	Status   int
	Message  string
}

func (e *EndpointError) Error() string {
	return fmt.Sprintf("%s answered %d %s: %s", e.Endpoint, e.Status, nethttp.StatusText(e.Status), e.Message)
}

// ResponseError is an answer that cannot be understood.
type ResponseError struct {
	Endpoint string
	Reason   string
	Snippet  string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("%s gave an answer Cairn cannot use: %s (got %q)", e.Endpoint, e.Reason, e.Snippet)
}

// post sends one call, retrying what may succeed on another attempt.
func (p *Plugin) post(ctx context.Context, b body) (json.RawMessage, error) {
	payload, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	wait := p.cfg.Backoff
	for attempt := 1; ; attempt++ {
		raw, retry, err := p.attempt(ctx, b, payload)
		switch {
		case err == nil:
			return raw, nil
		case ctx.Err() != nil || !retry:
			return nil, err
		case attempt >= p.cfg.MaxAttempts:
			return nil, fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (while waiting to retry after: %v)", ctx.Err(), err)
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// attempt sends the request once and says whether a failure is worth
// another attempt.
func (p *Plugin) attempt(ctx context.Context, b body, payload []byte) (json.RawMessage, bool, error) {
	actx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req, err := nethttp.NewRequestWithContext(actx, nethttp.MethodPost, p.cfg.Endpoint, bytes.NewReader(payload))
	if err != nil {
		return nil, false, err
	}
	ts, sig := Sign(p.cfg.Secret, p.cfg.Clock(), payload)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "cairn-http-plugin")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sig)
	req.Header.Set(HeaderOperation, b.Operation)
	if b.ResourceID != "" {
		req.Header.Set(HeaderResource, b.ResourceID)
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			return nil, true, fmt.Errorf("%s did not answer within %s", p.cfg.Endpoint, p.cfg.Timeout)
		}
		// The request may not have arrived; calls are idempotent, so ask again.
		return nil, true, fmt.Errorf("cannot reach %s: %w", p.cfg.Endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, plugins.MaxOutputBytes+4096))
	if err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			return nil, true, fmt.Errorf("%s did not finish its answer within %s", p.cfg.Endpoint, p.cfg.Timeout)
		}
		return nil, true, fmt.Errorf("read the answer of %s: %w", p.cfg.Endpoint, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ee := &EndpointError{Endpoint: p.cfg.Endpoint, Status: resp.StatusCode, Message: errorMessage(raw)}
		return nil, resp.StatusCode >= 500, ee
	}
	if len(raw) > plugins.MaxOutputBytes {
		return nil, false, &ResponseError{Endpoint: p.cfg.Endpoint, Reason: fmt.Sprintf("the answer is larger than %d bytes", plugins.MaxOutputBytes), Snippet: snippet(raw)}
	}
	if !json.Valid(raw) || !isObject(raw) {
		return nil, false, &ResponseError{Endpoint: p.cfg.Endpoint, Reason: "the answer is not a JSON object", Snippet: snippet(raw)}
	}
	return raw, false, nil
}

// errorMessage takes the "error" of a JSON answer, or the start of the text.
func errorMessage(raw []byte) string {
	var e struct {
		Error any `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != nil {
		switch v := e.Error.(type) {
		case string:
			return v
		case map[string]any:
			if m, ok := v["message"].(string); ok {
				return m
			}
		}
		b, _ := json.Marshal(e.Error)
		return string(b)
	}
	if s := strings.TrimSpace(snippet(raw)); s != "" {
		return s
	}
	return "no message"
}

func snippet(raw []byte) string {
	const n = 200
	s := strings.ToValidUTF8(string(raw), "?")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func isObject(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// Sign returns the timestamp and signature headers for body sent at now:
// the signature is "sha256=" followed by the hex HMAC-SHA256, keyed with
// secret, of the timestamp, a ".", and the body.
func Sign(secret []byte, now time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(now.Unix(), 10)
	return timestamp, "sha256=" + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret []byte, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// SignatureError says why Verify refused a request.
type SignatureError struct{ Reason string }

func (e *SignatureError) Error() string { return "signature refused: " + e.Reason }

// Verify checks a request's signature as an endpoint should: the timestamp
// within tolerance of now (refusing replays of old requests), and the
// signature equal, compared in constant time, to the HMAC of timestamp and
// the exact body bytes received.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	secs, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return &SignatureError{Reason: HeaderTimestamp + " is not Unix seconds"}
	}
	if d := now.Sub(time.Unix(secs, 0)); d > tolerance || d < -tolerance {
		return &SignatureError{Reason: fmt.Sprintf("the timestamp is %s away from this clock (allowed: %s)", d.Round(time.Second), tolerance)}
	}
	hexSig, ok := strings.CutPrefix(signature, "sha256=")
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil {
		return &SignatureError{Reason: HeaderSignature + ` must be "sha256=" and hex`}
	}
	if !hmac.Equal(got, mac(secret, timestamp, body)) {
		return &SignatureError{Reason: "it does not match the body and timestamp"}
	}
	return nil
}

// VerifyRequest reads r's body and verifies its signature with
// DefaultTolerance; it returns the body for the handler to decode.
func VerifyRequest(secret []byte, r *nethttp.Request, now time.Time) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	return b, Verify(secret, r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature), b, now, DefaultTolerance)
}
