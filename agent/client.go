package agent

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"cairn/graph/client"
)

// newClient is the agent's GraphQL client for the control plane at server,
// a URL or a comma-separated list of the replicas' URLs (the client moves
// to the next when one cannot be reached). It only ever connects out.
// Requests may take a long poll's wait and more.
func newClient(server string, hc *http.Client) (*client.Client, error) {
	for _, u := range strings.Split(server, ",") {
		u = strings.TrimSpace(u)
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("server %q: give the control plane's URL, e.g. http://cairn.example:8080, or several replicas' separated by commas", u)
		}
	}
	if hc == nil {
		hc = &http.Client{Timeout: 90 * time.Second}
	}
	return client.New(server, "", hc), nil
}

// send runs one of the agent's operations (Operations) and decodes the
// field it asks for into out.
func send(ctx context.Context, c *client.Client, op string, vars map[string]any, out any) error {
	if err := c.Field(ctx, client.Request{Query: Operations[op], OperationName: op, Variables: vars}, out); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// unauthenticated reports whether the credential itself was refused: the
// node was decommissioned or its credential revoked.
func unauthenticated(err error) bool { return client.CodeOf(err) == "UNAUTHENTICATED" }

// firstLine is the first line of b, shortened, for a message.
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
