package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn/graph/client"
)

// The soak figures: what live subscribers cost a flood of mutations, and
// whether the memory the flood took comes back once they left. cairnd runs
// as its own process; the subscribers follow every event, half over
// server-sent events and half over WebSocket, and read what they are sent.
//
//   - mutations_with_200_subscribers_ratio: mutations a second with the
//     subscribers following ÷ without them, the same writers in the same run;
//     the rate without them is measured before the subscribers came and
//     again after they left, and the two averaged, so that what changes
//     over the minute between (the tables the flood grows, the database's
//     own work) weighs on both sides of the ratio alike;
//   - rss_after_soak_ratio: cairnd's resident set soakSettle after a
//     soakFlood flood with the subscribers ended and they disconnected ÷ its
//     resident set before the subscribers connected.
const (
	soakSubscribers = 200
	soakWriters     = 16
	soakFlood       = 60 * time.Second
	soakSettle      = 30 * time.Second
	// soakFloodProfile is how much of the flood -profiles records.
	soakFloodProfile = 20 * time.Second
)

func benchSoak(ctx context.Context, e *env) (result, error) {
	work, err := os.MkdirTemp("", "cairn-bench-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	srv, err := startCairnd(ctx, e, work, "bench_soak", nil)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	status := fmt.Sprintf("/proc/%d/status", srv.pid)
	admin := client.New(srv.url, srv.token, nil)
	// Each writer and each group of subscribers has a token of its own, as
	// separate users would: a token's request quota is not what is measured.
	tokens, err := apiTokens(ctx, admin, soakWriters+soakSubscribers/100)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: soakWriters * 2}}
	writers := make([]*client.Client, soakWriters)
	for i := range writers {
		writers[i] = client.New(srv.url, tokens[i], hc)
	}
	flood := &soakFlooder{writers: writers}

	// Warm up, then the rate without subscribers.
	if _, err := flood.run(ctx, e.cfg.duration/2); err != nil {
		return nil, err
	}
	withoutBefore, err := flood.run(ctx, e.cfg.duration)
	if err != nil {
		return nil, err
	}
	before, err := quietRSS(status)
	if err != nil {
		return nil, err
	}

	// The subscribers run in a process of their own, as portals run apart
	// from the programs that write: in one process, the writers' goroutines
	// took their turns among two hundred readers', and one CPU profile
	// mixed both.
	subs, err := startSoakSubscribers(ctx, soakSubscriberPlan{
		URL:     srv.url,
		Tokens:  tokens[soakWriters:],
		Profile: profilePath(srv.profiles, "soak-flood-subscribers.cpu"),
	})
	if err != nil {
		return nil, err
	}
	defer subs.stop()
	profiled := srv.cpuProfile(ctx, "soak-flood.cpu", soakFloodProfile)
	writersProfiled := benchSideProfile(e, srv.profiles, "soak-flood-writers.cpu")
	with, err := flood.run(ctx, soakFlood)
	writersProfiled()
	if perr := profiled(); perr != nil {
		return nil, perr
	}
	if err != nil {
		return nil, err
	}
	during, err := rssOf(status)
	if err != nil {
		return nil, err
	}
	report, err := subs.stop()
	if err != nil {
		return nil, err
	}
	time.Sleep(soakSettle)
	after, err := rssOf(status)
	if err != nil {
		return nil, err
	}
	withoutAfter, err := flood.run(ctx, e.cfg.duration)
	if err != nil {
		return nil, err
	}
	without := (withoutBefore + withoutAfter) / 2
	e.log.Info().Float64("mutations_per_s_without_before", round(withoutBefore, 0)).
		Float64("mutations_per_s_without_after", round(withoutAfter, 0)).Float64("mutations_per_s_with", round(with, 0)).
		Int64("events_received", report.Received).Int64("subscribers_ended_early", report.Lost).
		Int64("subscribers_resumed", report.Resumed).
		Str("first_ended_early", report.FirstLoss).Msg("soak")
	return result{
		"mutations_with_200_subscribers_ratio": round(with/without, 2),
		"rss_after_soak_ratio":                 round(float64(after)/float64(before), 2),
		"soak_mutations_per_s_without":         round(without, 0),
		"soak_mutations_per_s_without_before":  round(withoutBefore, 0),
		"soak_mutations_per_s_without_after":   round(withoutAfter, 0),
		"soak_mutations_per_s_with":            round(with, 0),
		"soak_rss_before_mib":                  round(float64(before)/(1<<20), 1),
		"soak_rss_during_mib":                  round(float64(during)/(1<<20), 1),
		"soak_rss_after_mib":                   round(float64(after)/(1<<20), 1),
		"soak_events_received":                 float64(report.Received),
		"soak_subscribers_ended_early":         float64(report.Lost),
		"soak_subscribers_resumed":             float64(report.Resumed),
	}, nil
}

// soakEvents is what each subscriber follows.
const soakEvents = `subscription($after: Cursor) { events(after: $after) { cursor type streamId } }`

// soakFlooder runs mutations from every writer, each creating a tenant.
type soakFlooder struct {
	writers []*client.Client
	next    atomic.Int64
}

// run floods for d and returns the mutations a second.
func (f *soakFlooder) run(ctx context.Context, d time.Duration) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var done atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	for _, c := range f.writers {
		g.Go(func() error {
			for gctx.Err() == nil {
				name := fmt.Sprintf("soak-%d", f.next.Add(1))
				err := c.Do(gctx, `mutation($name: String!) { createTenant(input: {name: $name}) { cursor } }`,
					map[string]any{"name": name}, nil)
				switch {
				case gctx.Err() != nil:
					return nil
				case err != nil:
					return fmt.Errorf("create tenant %s: %w", name, err)
				}
				done.Add(1)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return 0, err
	}
	return float64(done.Load()) / time.Since(start).Seconds(), nil
}
