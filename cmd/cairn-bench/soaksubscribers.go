package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"cairn/graph/client"
)

// soakSubscribersEnv names the plan (soakSubscriberPlan) of the soak's
// child process (child.go): it opens soakSubscribers subscriptions to
// every event, half over server-sent events and half over WebSocket,
// follows them until it is ended, and reports what it received
// (soakSubscriberReport).
const soakSubscribersEnv = "CAIRN_BENCH_SOAK_SUBSCRIBERS"

// soakSubscriberPlan is what the subscribers' process is given.
type soakSubscriberPlan struct {
	URL string `json:"url"`
	// Tokens are shared out among the subscribers, in equal groups.
	Tokens []string `json:"tokens"`
	// Profile, when set, is where the process writes its CPU profile of
	// the time it follows the flood.
	Profile string `json:"profile,omitempty"`
}

// soakSubscriberReport is what the subscribers' process received.
type soakSubscriberReport struct {
	Received  int64  `json:"received"`
	Lost      int64  `json:"lost"`    // subscribers ended early
	Resumed   int64  `json:"resumed"` // subscribers ended as too slow that resumed
	FirstLoss string `json:"firstLoss,omitempty"`
}

// soakSubscriberProcess is the subscribers' running process.
type soakSubscriberProcess struct{ child *child }

// startSoakSubscribers starts the subscribers' process and waits until
// every subscription is open.
func startSoakSubscribers(ctx context.Context, plan soakSubscriberPlan) (*soakSubscriberProcess, error) {
	c, err := startChild(ctx, soakSubscribersEnv, plan)
	if err != nil {
		return nil, fmt.Errorf("open %d subscribers: %w", soakSubscribers, err)
	}
	return &soakSubscriberProcess{child: c}, nil
}

// stop ends the subscriptions and returns what they received; later calls
// return the same.
func (p *soakSubscriberProcess) stop() (*soakSubscriberReport, error) {
	line, err := p.child.stop()
	if err != nil {
		return nil, fmt.Errorf("the soak's subscribers: %w", err)
	}
	var r soakSubscriberReport
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return nil, fmt.Errorf("the soak's subscribers' report %q: %w", line, err)
	}
	return &r, nil
}

// profilePath is where a profile named name goes in dir; "" when none are
// kept.
func profilePath(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name+".pb.gz")
}

func runSoakSubscribers(path string) error {
	var plan soakSubscriberPlan
	if err := readPlan(path, &plan); err != nil {
		return err
	}
	if len(plan.Tokens) == 0 {
		return errors.New("the plan names no token")
	}
	ctx, endSubs := context.WithCancel(context.Background())
	defer endSubs()
	subHTTP := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: soakSubscribers}}
	clients := make([]*client.Client, soakSubscribers)
	protocols := make([]client.Protocol, soakSubscribers)
	subs := make([]*client.Subscription, soakSubscribers)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range subs {
		protocols[i] = client.SSE
		if i%2 == 1 {
			protocols[i] = client.TransportWS
		}
		clients[i] = client.New(plan.URL, plan.Tokens[i*len(plan.Tokens)/soakSubscribers], subHTTP)
		g.Go(func() error {
			sub, err := clients[i].Subscribe(gctx, protocols[i], client.Request{Query: soakEvents})
			subs[i] = sub
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var received, lost, resumed atomic.Int64
	var firstLoss atomic.Value
	ended := func(how, why string) {
		lost.Add(1)
		firstLoss.CompareAndSwap(nil, how+": "+why)
	}
	var readers errgroup.Group
	for i, sub := range subs {
		how := "SSE"
		if protocols[i] == client.TransportWS {
			how = "WebSocket"
		}
		readers.Go(func() error {
			// Counted here and added once at the end: one counter for all
			// 200, its cache line passed between the cores at every
			// result, was 4 % of this process.
			var n int64
			defer func() { received.Add(n) }()
			defer func() { sub.Close() }()
			for {
				resp, err := sub.Next(ctx)
				switch {
				case ctx.Err() != nil:
					return nil
				case err != nil:
					ended(how, err.Error())
					return nil
				case len(resp.Errors) > 0:
					// A subscriber that fell too far behind is ended with a
					// cursor to resume from, and resumes, as a portal does:
					// the 200 follow the whole flood.
					after, _ := resp.Errors[0].Extensions["cursor"].(string)
					if reason, _ := resp.Errors[0].Extensions["reason"].(string); reason != "SLOW_CONSUMER" || after == "" {
						ended(how, resp.Errors.Error())
						return nil
					}
					sub.Close()
					if sub, err = clients[i].Subscribe(ctx, protocols[i], client.Request{Query: soakEvents,
						Variables: map[string]any{"after": after}}); err != nil {
						if ctx.Err() == nil {
							ended(how, "resume: "+err.Error())
						}
						return nil
					}
					resumed.Add(1)
					continue
				}
				n++
			}
		})
	}
	stopProfile := func() {}
	if plan.Profile != "" {
		f, err := os.Create(plan.Profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
	}
	readyUntilEnd()
	endSubs()
	_ = readers.Wait()
	stopProfile()
	r := soakSubscriberReport{Received: received.Load(), Lost: lost.Load(), Resumed: resumed.Load()}
	if v, ok := firstLoss.Load().(string); ok {
		r.FirstLoss = v
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}
