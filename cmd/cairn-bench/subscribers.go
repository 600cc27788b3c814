package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn/graph/client"
)

// serverSubscribers is how many idle subscriptions the server-side figure
// holds open: a portal's worth of tabs for a large team.
const serverSubscribers = 2000

// benchServerSubscribers measures what idle GraphQL subscribers cost the
// server alone: cairnd runs as its own process, as operators run it, and
// its resident set is read before the subscribers connect and while they
// are connected, both times after collections and a moment's quiet (read
// before a collection, it held as much of the connections' setup garbage
// as chance left), and after they left.
func benchServerSubscribers(ctx context.Context, e *env) (result, error) {
	work, err := os.MkdirTemp("", "cairn-bench-subscribers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	srv, err := startCairnd(ctx, e, work, "bench_subscribers", nil)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	status := fmt.Sprintf("/proc/%d/status", srv.pid)
	admin := client.New(srv.url, srv.token, nil)
	// A caller may hold 500 subscriptions: the subscribers are spread over
	// tokens, as many users' would be.
	perToken := 400
	tokens, err := apiTokens(ctx, admin, serverSubscribers/perToken)
	if err != nil {
		return nil, err
	}
	liveBefore, err := srv.liveMemory(ctx, "subscribers-before")
	if err != nil {
		return nil, err
	}
	before, err := quietRSS(status)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	subs := make([]*client.Subscription, serverSubscribers)
	closeAll := func() {
		for i, sub := range subs {
			if sub != nil {
				sub.Close()
				subs[i] = nil
			}
		}
	}
	defer closeAll()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range subs {
		c := client.New(srv.url, tokens[i/perToken], hc)
		g.Go(func() error {
			sub, err := c.Subscribe(gctx, client.TransportWS, client.Request{Query: `subscription { events { cursor streamId } }`})
			subs[i] = sub
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("open %d subscribers: %w", serverSubscribers, err)
	}
	liveHeld, err := srv.liveMemory(ctx, "subscribers-held")
	if err != nil {
		return nil, err
	}
	held, err := quietRSS(status)
	if err != nil {
		return nil, err
	}
	spans, objects, stacks := liveHeld.perEach(liveBefore, serverSubscribers)
	e.log.Info().Float64("heap_spans_kib", spans).Float64("live_objects_kib", objects).
		Float64("stacks_kib", stacks).Msg("memory of each idle subscriber")
	closeAll()
	time.Sleep(5 * time.Second)
	after, err := quietRSS(status)
	if err != nil {
		return nil, err
	}
	return result{
		"rss_per_idle_subscriber_kib_server":    round(float64(held-before)/1024/serverSubscribers, 1),
		"live_per_idle_subscriber_kib_server":   round(float64(liveHeld.total()-liveBefore.total())/1024/serverSubscribers, 1),
		"server_rss_before_subscribers_mib":     round(float64(before)/(1<<20), 1),
		"server_rss_with_subscribers_mib":       round(float64(held)/(1<<20), 1),
		"server_rss_after_subscribers_left_mib": round(float64(after)/(1<<20), 1),
		"server_idle_subscribers_measured":      serverSubscribers,
	}, nil
}

// apiTokens creates n API tokens with admin's rights: callers that stand
// for separate users, each with a request quota of its own.
func apiTokens(ctx context.Context, admin *client.Client, n int) ([]string, error) {
	tokens := make([]string, n)
	for i := range tokens {
		var out struct{ CreateApiToken struct{ Token string } }
		qctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := admin.Do(qctx, `mutation { createApiToken(input: {}) { token } }`, nil, &out)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("create an API token: %w", err)
		}
		tokens[i] = out.CreateApiToken.Token
	}
	return tokens, nil
}

// quietRSS is the resident set of a process after a moment's quiet.
func quietRSS(status string) (int64, error) {
	time.Sleep(3 * time.Second)
	return rssOf(status)
}
