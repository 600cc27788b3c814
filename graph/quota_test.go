package graph_test

import (
	"net/http"
	"strings"
	"testing"

	"cairn/graph"
	"cairn/graph/apierr"
	"cairn/graph/client"
	"cairn/graph/transport"
)

// A caller over its rate gets 429 with Retry-After; one that holds its
// quota of subscriptions has the next refused, on every transport.
func TestQuotas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{Transport: transport.Options{Quota: transport.Quota{Rate: 0.01, Burst: 4, Subscriptions: 1}}})
	ctx := ctxT(t)
	admin := e.client("admin")

	e.createTenant(admin, "acme")
	sub, err := admin.Subscribe(ctx, client.TransportWS, client.Request{Query: eventsSub, Variables: map[string]any{"after": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// The first event: the subscription is counted before the next starts.
	if r, err := sub.Next(ctx); err != nil || len(r.Errors) > 0 {
		t.Fatalf("first subscription: %+v %v", r, err)
	}
	// The second subscription, over WebSocket: refused with RATE_LIMITED.
	second, err := admin.Subscribe(ctx, client.TransportWS, client.Request{Query: eventsSub})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := second.Next(ctx)
	second.Close()
	if err != nil || resp.Errors.Code() != apierr.CodeRateLimited {
		t.Fatalf("a second subscription: %+v %v", resp, err)
	}
	// Over SSE: 429.
	if _, err = admin.Subscribe(ctx, client.SSE, client.Request{Query: eventsSub}); client.CodeOf(err) != apierr.CodeRateLimited {
		t.Fatalf("a subscription over SSE beyond the quota: %v", err)
	}

	// The burst is spent (the tenant, two subscriptions, the SSE request);
	// the next request is over the rate.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/graphql", strings.NewReader(`{"query": "{ viewer { role } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer admin")
	hr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != http.StatusTooManyRequests || hr.Header.Get("Retry-After") == "" {
		t.Fatalf("over the rate: HTTP %d, Retry-After %q", hr.StatusCode, hr.Header.Get("Retry-After"))
	}
	// Another caller is not affected.
	var v struct{ Viewer struct{ Role string } }
	if err := e.client("operator").Do(ctx, `{ viewer { role } }`, nil, &v); err != nil {
		t.Fatalf("another token: %v", err)
	}
}
