package agent

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

// client sends the agent's GraphQL operations over plain HTTP POST. It only
// ever connects out.
type client struct {
	endpoint string // http(s)://host:port/graphql
	http     *http.Client
	token    string // the node credential; empty before enrollment
}

func newClient(server string, hc *http.Client) (*client, error) {
	server = strings.TrimRight(strings.TrimSpace(server), "/")
	if !strings.HasPrefix(server, "http://") && !strings.HasPrefix(server, "https://") {
		return nil, fmt.Errorf("server %q: give the control plane's URL, e.g. http://cairn.example:8080", server)
	}
	if !strings.HasSuffix(server, "/graphql") {
		server += "/graphql"
	}
	if hc == nil {
		hc = &http.Client{Timeout: 90 * time.Second}
	}
	return &client{endpoint: server, http: hc}, nil
}

// APIError is an error the control plane answered with.
type APIError struct {
	Code    string // extensions.code: UNAUTHENTICATED, FORBIDDEN, NOT_FOUND, CONFLICT, INVALID_INPUT, INTERNAL
	Message string
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return e.Message + " (" + e.Code + ")"
}

// permanent reports whether sending the same request again cannot succeed:
// the control plane refused it for what it is, not for a passing trouble.
func permanent(err error) bool {
	var api *APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.Code {
	case "UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "CONFLICT", "INVALID_INPUT":
		return true
	}
	return false
}

// unauthenticated reports whether the credential itself was refused: the
// node was decommissioned or its credential revoked.
func unauthenticated(err error) bool {
	var api *APIError
	return errors.As(err, &api) && api.Code == "UNAUTHENTICATED"
}

type gqlRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables,omitempty"`
}

type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

func (e gqlError) apiError() *APIError {
	code, _ := e.Extensions["code"].(string)
	return &APIError{Code: code, Message: e.Message}
}

type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// do sends an operation and decodes data's single field into out.
func (c *client) do(ctx context.Context, op string, vars map[string]any, out any) error {
	body, err := json.Marshal(gqlRequest{Query: Operations[op], OperationName: op, Variables: vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s: read the answer: %w", op, err)
	}
	var r gqlResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		if resp.StatusCode == http.StatusUnauthorized {
			return &APIError{Code: "UNAUTHENTICATED", Message: "the control plane refused the node credential"}
		}
		return fmt.Errorf("%s: HTTP %d: %s", op, resp.StatusCode, firstLine(raw))
	}
	if len(r.Errors) > 0 {
		return r.Errors[0].apiError()
	}
	return decodeField(r.Data, out)
}

// decodeField decodes the one field of a data object into out.
func decodeField(data json.RawMessage, out any) error {
	if out == nil {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	for _, v := range fields {
		return json.Unmarshal(v, out)
	}
	return errors.New("the answer holds no data")
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
