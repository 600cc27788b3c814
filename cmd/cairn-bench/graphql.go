package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"cairn/auth"
	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/nodes"
	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/graph"
	"cairn/graph/client"
	"cairn/graph/transport"
	"cairn/internal/database"
	"cairn/internal/httpserver"
	"cairn/migrations"
	"cairn/projections"
	"cairn/projections/models"
	"cairn/projections/readmodel"
)

const (
	graphqlNodes       = 1000
	graphqlRate        = 500 // nodes queries per second
	graphqlQueryPhase  = 10 * time.Second
	graphqlSubscribers = 2000
	// graphqlQueryTimeout bounds one query, and so the phase's overrun.
	graphqlQueryTimeout = 2 * time.Second
)

// graphqlServer is cairnd's API as serve mounts it, on its own database of
// the bench cluster, listening on 127.0.0.1.
type graphqlServer struct {
	url   string
	token string
	nodes *nodes.Handlers
	store *eventstore.Store
	ids   []string
	stop  func() error
}

func startGraphQL(ctx context.Context, e *env) (s *graphqlServer, err error) {
	cc := e.admin.Config().ConnConfig
	conn := func(db string) string {
		return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", cc.Host, cc.Port, cc.User, db)
	}
	if err := database.CreateDatabase(ctx, conn("postgres"), "bench_graphql", ""); err != nil && !database.IsDuplicateDatabase(err) {
		return nil, err
	}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	owner, err := database.Open(ctx, conn("bench_graphql"), database.Options{MaxConns: 2})
	if err != nil {
		return nil, err
	}
	closers = append(closers, owner.Close)
	if _, err := migrations.Up(ctx, owner); err != nil {
		return nil, err
	}
	pool, err := database.Open(ctx, conn("bench_graphql"), database.Options{Role: database.AppRole, MaxConns: 40})
	if err != nil {
		return nil, err
	}
	closers = append(closers, pool.Close)
	quiet := e.log.Level(zerolog.WarnLevel)
	store := eventstore.New(pool, events.Registry(), eventstore.Options{Log: quiet})
	closers = append(closers, store.Close)

	runner := projections.NewRunner(store, pool, projections.Options{Log: quiet, Views: models.AnalyticsViews()})
	if err := runner.Register(models.All()...); err != nil {
		return nil, err
	}
	newID := func() string { return "g" + strconv.FormatInt(time.Now().UnixNano(), 36) }
	var idMu sync.Mutex
	seq := 0
	ids := func() string {
		idMu.Lock()
		defer idMu.Unlock()
		seq++
		return newID() + strconv.Itoa(seq)
	}
	accessH := access.NewHandlers(store, time.Now, ids, access.Options{})
	token, err := auth.BootstrapAdmin(ctx, accessH)
	if err != nil {
		return nil, err
	}
	if token == "" {
		return nil, errors.New("the graphql benchmark's database already had an administrator: its token is gone")
	}
	nodeH := nodes.NewHandlers(store, time.Now, ids)
	// One token drives every query and subscription here: its quota is
	// raised past what the phases ask, which measure throughput, not quotas
	// (a real deployment spreads this load over many tokens).
	unlimited := transport.Quota{Rate: 1e6, Burst: 1e6, Subscriptions: 1e6}
	api, err := graph.New(graph.Config{Transport: transport.Options{Quota: unlimited}}, graph.Deps{
		Log:             quiet,
		Store:           store,
		Reader:          readmodel.New(pool),
		Auth:            auth.NewAuthenticator(store, auth.AuthenticatorOptions{}),
		Projections:     runner,
		ProjectionAdmin: runner,
		Access:          accessH,
		Nodes:           nodeH,
		RequestID:       httpserver.RequestID,
	})
	if err != nil {
		return nil, err
	}
	srv, err := httpserver.New(httpserver.Deps{
		Log: quiet, Pool: pool, Store: store, Metrics: prometheus.NewRegistry(),
		Schema: func(ctx context.Context) (migrations.Status, error) { return migrations.Check(ctx, owner) },
	})
	if err != nil {
		return nil, err
	}
	srv.Handle("/graphql", api.Handler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(runCtx)
	g.Go(func() error { return runner.Run(gctx) })
	g.Go(func() error { return api.Run(gctx) })
	g.Go(func() error { return srv.Serve(gctx, ln) })
	stop := func() error {
		cancel()
		err := g.Wait()
		closeAll()
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return err
	}
	s = &graphqlServer{url: "http://" + ln.Addr().String(), token: token, nodes: nodeH, store: store, stop: stop}

	// 1,000 nodes through the node commands, then wait for the read model.
	s.ids = make([]string, graphqlNodes)
	sg, sctx := errgroup.WithContext(ctx)
	sg.SetLimit(16)
	for i := range graphqlNodes {
		sg.Go(func() error {
			out, err := nodeH.Enroll(sctx, commands.Meta{Actor: "bench"}, nodes.Enroll{
				Hostname: fmt.Sprintf("node-%04d", i),
				Labels:   map[string]string{"rack": strconv.Itoa(i % 20), "zone": string(rune('a' + i%3))},
			})
			s.ids[i] = out.ID
			return err
		})
	}
	if err := sg.Wait(); err != nil {
		_ = stop()
		return nil, fmt.Errorf("seed nodes: %w", err)
	}
	head, err := store.Head(ctx)
	if err != nil {
		_ = stop()
		return nil, err
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := runner.WaitFor(wctx, head); err != nil {
		_ = stop()
		return nil, fmt.Errorf("wait for the read models: %w", err)
	}
	return s, nil
}

// benchGraphQL measures the API over real HTTP and WebSocket: nodes(first:
// 100) at a fixed arrival rate, one event fanned out to 2,000 WebSocket
// subscribers, the memory an idle subscriber costs, and the hostile corpus.
func benchGraphQL(ctx context.Context, e *env) (result, error) {
	s, err := startGraphQL(ctx, e)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	out := result{}
	q, err := benchNodesQuery(ctx, s)
	if err != nil {
		return nil, err
	}
	for k, v := range q {
		out[k] = v
	}
	f, err := benchFanOutSubscriptions(ctx, s)
	if err != nil {
		return nil, err
	}
	for k, v := range f {
		out[k] = v
	}
	h, err := benchHostile(ctx, s)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		out[k] = v
	}
	return out, nil
}

func benchNodesQuery(ctx context.Context, s *graphqlServer) (result, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute}}
	c := client.New(s.url, s.token, hc)
	const q = `query { nodes(first: 100) { edges { node { id hostname status labels { key value } locationId updatedAt } } pageInfo { hasNextPage endCursor } } }`
	one := func() (time.Duration, error) {
		start := time.Now()
		var data struct {
			Nodes struct {
				Edges []struct{} `json:"edges"`
			} `json:"nodes"`
		}
		rctx, cancel := context.WithTimeout(ctx, graphqlQueryTimeout)
		defer cancel()
		if err := c.Do(rctx, q, nil, &data); err != nil {
			// A failed request counts at the time it took to fail.
			return time.Since(start), err
		}
		if len(data.Nodes.Edges) != 100 {
			return 0, fmt.Errorf("nodes(first: 100) returned %d nodes", len(data.Nodes.Edges))
		}
		return time.Since(start), nil
	}
	// Warm the connections, the plan cache and the authenticator's cache;
	// the serial latencies show the cost of one query on an idle server.
	serial := make([]time.Duration, 50)
	for i := range serial {
		d, err := one()
		if err != nil {
			return nil, err
		}
		serial[i] = d
	}
	// The same query with a new alias each time is never answered from the
	// answer cache: what running it through the executor costs.
	uncached := make([]time.Duration, 50)
	for i := range uncached {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, graphqlQueryTimeout)
		err := c.Do(rctx, strings.Replace(q, "nodes(", fmt.Sprintf("n%d: nodes(", i), 1), nil, nil)
		cancel()
		if err != nil {
			return nil, err
		}
		uncached[i] = time.Since(start)
	}
	// Open loop: requests fire on the ticker whether or not earlier ones
	// have answered, so a slow server shows as latency, not a lower rate.
	total := int(graphqlQueryPhase.Seconds() * graphqlRate)
	lat := make([]time.Duration, total)
	errs := make([]error, total)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / graphqlRate)
	start := time.Now()
	for i := range total {
		<-tick.C
		wg.Go(func() { lat[i], errs[i] = one() })
	}
	tick.Stop()
	wg.Wait()
	elapsed := time.Since(start)
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			if failed == 1 {
				fmt.Fprintf(os.Stderr, "nodes query %d failed after %s: %v\n", i, lat[i], err)
			}
		}
	}
	return result{
		"nodes_query_serial_p50_ms":          gqlMS(gqlPercentile(serial, 0.50)),
		"nodes_query_uncached_serial_p50_ms": gqlMS(gqlPercentile(uncached, 0.50)),
		"nodes_query_failed":                 failed,
		"nodes_query_p50_ms":                 gqlMS(gqlPercentile(lat, 0.50)),
		"nodes_query_p99_ms":                 gqlMS(gqlPercentile(lat, 0.99)),
		"nodes_query_rate_per_s":             round(float64(total)/elapsed.Seconds(), 1),
	}, nil
}

func benchFanOutSubscriptions(ctx context.Context, s *graphqlServer) (result, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	c := client.New(s.url, s.token, hc)
	rssBefore, err := settledRSS()
	if err != nil {
		return nil, err
	}
	subs := make([]*client.Subscription, graphqlSubscribers)
	defer func() {
		for _, sub := range subs {
			if sub != nil {
				sub.Close()
			}
		}
	}()
	og, octx := errgroup.WithContext(ctx)
	og.SetLimit(64)
	for i := range subs {
		og.Go(func() error {
			sub, err := c.Subscribe(octx, client.TransportWS, client.Request{Query: `subscription { events { cursor streamId } }`})
			subs[i] = sub
			return err
		})
	}
	if err := og.Wait(); err != nil {
		return nil, fmt.Errorf("open %d subscribers: %w", graphqlSubscribers, err)
	}
	// The server attaches each subscription to its hub after the subscribe
	// message: give the last ones a moment before measuring and appending.
	time.Sleep(2 * time.Second)
	rssAfter, err := settledRSS()
	if err != nil {
		return nil, err
	}

	type got struct {
		at  time.Time
		err error
	}
	recv := make([]got, len(subs))
	var wg sync.WaitGroup
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	target := "node-" + s.ids[0]
	for i, sub := range subs {
		wg.Go(func() {
			resp, err := sub.Next(rctx)
			switch {
			case err != nil:
				recv[i].err = err
			case len(resp.Errors) > 0:
				recv[i].err = resp.Errors
			case !strings.Contains(string(resp.Data), target):
				recv[i].err = fmt.Errorf("unexpected event %s", resp.Data)
			default:
				recv[i].at = time.Now()
			}
		})
	}
	start := time.Now()
	if _, err := s.nodes.SetLabels(ctx, commands.Meta{Actor: "bench"}, nodes.SetLabels{NodeID: s.ids[0], Labels: map[string]string{"fanout": "yes"}}); err != nil {
		return nil, err
	}
	wg.Wait()
	lat := make([]time.Duration, 0, len(recv))
	var failures []error
	for _, r := range recv {
		if r.err != nil {
			failures = append(failures, r.err)
			continue
		}
		lat = append(lat, r.at.Sub(start))
	}
	if len(failures) > 0 {
		return nil, fmt.Errorf("%d of %d subscribers did not receive the event: %w", len(failures), len(recv), failures[0])
	}
	return result{
		"subscription_fanout_p50_ms":  gqlMS(gqlPercentile(lat, 0.50)),
		"subscription_fanout_p99_ms":  gqlMS(gqlPercentile(lat, 0.99)),
		"subscription_fanout_max_ms":  gqlMS(gqlPercentile(lat, 1)),
		"rss_per_idle_subscriber_kib": round(float64(rssAfter-rssBefore)/1024/graphqlSubscribers, 1),
		// Clients and server share the process: the figure counts both
		// ends of each WebSocket connection.
		"rss_per_idle_subscriber_includes_client": true,
	}, nil
}

// settledRSS is the process's resident set after a collection has returned
// what it could to the OS.
func settledRSS() (int64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	return rssOf("/proc/self/status")
}

// rssOf reads the resident set size from a /proc/PID/status file.
func rssOf(status string) (int64, error) {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0, fmt.Errorf("read the resident set size: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", rest, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in %s", status)
}

func gqlPercentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func gqlMS(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 2) }
