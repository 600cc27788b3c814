package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Open sends a plain HTTP request to path on the server (beside /graphql:
// the audit endpoints, say) with the client's token, and returns the
// response of a 2xx answer for the caller to read and close. Any other
// answer is an *HTTPError with the server's text.
func (c *Client) Open(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	base := strings.TrimSuffix(c.ends.now(), "/graphql")
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			c.ends.failed(c.ends.now())
		}
		return nil, fmt.Errorf("reach %s: %w", base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, &HTTPError{Status: resp.StatusCode, Body: string(b)}
	}
	return resp, nil
}
