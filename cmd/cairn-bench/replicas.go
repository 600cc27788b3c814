package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cairn/agent"
	"cairn/auth"
	"cairn/cluster"
	"cairn/commands/access"
	"cairn/commands/jobs"
	"cairn/dispatch"
	"cairn/dispatch/dispatchtest"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/eventstore"
	"cairn/graph"
	"cairn/graph/client"
	"cairn/graph/graphtest"
	"cairn/internal/database"
)

// The replica figures of SPEC §13, with replicas as in cairnd (each its own
// event store, dispatcher, lease and presence) in this process, on the
// bench database:
//
//   - dispatch_cross_replica_p99_ms: a job submitted through replica A (the
//     owner of the decisions) until its agent, connected over a WebSocket to
//     replica B, receives the lease;
//   - subscription_cross_replica_p99_ms: a job submitted through A until a
//     subscriber of the events subscription on B is told;
//   - failover_s: replica A dies (its lease is neither renewed nor given
//     up) until B's first decision: a job submitted then reaches its agent;
//   - agent_reconnect_p99_s: real agents of a replica that dies, until each
//     receives work through the replica it moved to;
//   - append_3_replicas_ratio: command appends through three replicas'
//     stores ÷ through one, with the same writers, alternating rounds.
const replicaSamples = 200

func benchReplicas(ctx context.Context, e *env) (result, error) {
	out := result{"owner_lease_s": cluster.DefaultTTL.Seconds()}
	ratio, err := benchAppendReplicas(ctx, e)
	if err != nil {
		return nil, err
	}
	out["append_3_replicas_ratio"] = ratio

	// Replica A's lease talks through a pool of its own, so that A can die
	// without giving the lease up.
	leasePool, err := database.Open(ctx, e.app.Config().ConnString(), database.Options{MaxConns: 2})
	if err != nil {
		return nil, err
	}
	defer leasePool.Close()
	quiet := zerolog.Nop()
	leaseA := cluster.NewLease(leasePool, "dispatch", "bench-a", cluster.LeaseOptions{Log: quiet})
	leaseB := cluster.NewLease(e.app, "dispatch", "bench-b", cluster.LeaseOptions{Log: quiet})
	opts := benchOpts
	opts.HeartbeatInterval = 2 * time.Second // presence is shared every second
	ctxA, killA := context.WithCancel(ctx)
	defer killA()
	go func() { _ = leaseA.Run(ctxA) }()
	for !leaseA.Owns() {
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	a, err := dispatchtest.StartReplica(e.app, opts, leaseA, cluster.NewPresence(e.app, "bench-a"), quiet)
	if err != nil {
		return nil, err
	}
	defer a.Stop()
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	go func() { _ = leaseB.Run(ctxB) }()
	b, err := dispatchtest.StartReplica(e.app, opts, leaseB, cluster.NewPresence(e.app, "bench-b"), quiet)
	if err != nil {
		return nil, err
	}
	defer b.Stop()
	for _, r := range []*dispatchtest.Env{a, b} {
		if err := r.WaitReady(ctx); err != nil {
			return nil, err
		}
	}
	apiB, err := graphtest.ServeJobSide(b, graph.Config{}, quiet)
	if err != nil {
		return nil, err
	}
	defer apiB.Close()

	const agents = 10
	creds, err := enrollAgents(ctx, a, "replica-", agents, nil)
	if err != nil {
		return nil, err
	}
	var ids []string
	received := map[string]chan string{}
	for id, cred := range creds {
		ag, err := dialAgent(ctx, apiB.URL, cred, id)
		if err != nil {
			return nil, err
		}
		defer ag.close()
		ids = append(ids, id)
		ch := make(chan string, replicaSamples+1)
		received[id] = ch
		go func() {
			for {
				jobID, err := ag.next(ctx)
				if err != nil {
					return
				}
				ch <- jobID
			}
		}()
	}
	slices.Sort(ids)
	// The owner, A, learns of agents connected to B through presence.
	if err := waitOnline(ctx, a, ids); err != nil {
		return nil, err
	}
	watched := ids[0]
	admin, err := auth.BootstrapAdmin(ctx, a.Access)
	if err != nil {
		return nil, err
	}
	// From the head as of now: a subscription without a cursor starts when
	// the server registers it, which may be after the first submission.
	from, err := b.Store.Head(ctx)
	if err != nil {
		return nil, err
	}
	changes, err := client.New(apiB.URL, admin, nil).Subscribe(ctx, client.TransportWS, client.Request{
		Query:     `subscription($a: Cursor) { events(filter: {types: ["job.submitted"]}, after: $a) { streamId } }`,
		Variables: map[string]any{"a": from.String()},
	})
	if err != nil {
		return nil, err
	}
	defer changes.Close()
	submittedSeen := make(chan string, replicaSamples+1)
	go func() {
		for {
			resp, err := changes.Next(ctx)
			if err != nil {
				return
			}
			var d struct {
				Events struct{ StreamID string }
			}
			if json.Unmarshal(resp.Data, &d) == nil {
				submittedSeen <- domain.EntityIDOf(domain.JobStream, d.Events.StreamID)
			}
		}
	}()

	// finish completes a leased job as its agent would, through B.
	finish := func(nodeID, jobID string) {
		c := dispatch.Caller{NodeID: nodeID}
		if _, err := b.Dispatcher.Start(ctx, c, jobID); err == nil {
			_, _ = b.Dispatcher.Finish(ctx, c, jobID, job.StatusSucceeded, job.Result{})
		}
	}
	var dispatchLat, subLat []time.Duration
	for i := range replicaSamples {
		nodeID := ids[i%len(ids)]
		start := time.Now()
		sub, err := a.Jobs.Submit(ctx, dispatchtest.Operator, jobs.Submit{Spec: echoSpec, Target: job.Target{NodeID: nodeID}})
		if err != nil {
			return nil, err
		}
		if nodeID == watched {
			if err := waitFor(ctx, submittedSeen, sub.ID, "the cross-replica subscriber"); err != nil {
				return nil, err
			}
			subLat = append(subLat, time.Since(start))
		}
		if err := waitFor(ctx, received[nodeID], sub.ID, "node "+nodeID); err != nil {
			return nil, err
		}
		dispatchLat = append(dispatchLat, time.Since(start))
		go finish(nodeID, sub.ID)
		time.Sleep(time.Until(start.Add(20 * time.Millisecond)))
	}
	out["dispatch_cross_replica_p99_ms"] = gqlMS(gqlPercentile(dispatchLat, 0.99))
	out["subscription_cross_replica_p99_ms"] = gqlMS(gqlPercentile(subLat, 0.99))
	out["replica_samples"] = len(dispatchLat)

	// A dies: its lease stops being renewed and is not given up, its
	// dispatcher stops. B's first decision is a job reaching its agent.
	leasePool.Close()
	killA()
	if err := a.Stop(); err != nil {
		return nil, err
	}
	died := time.Now()
	nodeID := ids[1%len(ids)]
	sub, err := b.Jobs.Submit(ctx, dispatchtest.Operator, jobs.Submit{Spec: echoSpec, Target: job.Target{NodeID: nodeID}})
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, received[nodeID], sub.ID, "node "+nodeID+" after the owner died"); err != nil {
		return nil, err
	}
	out["failover_s"] = round(time.Since(died).Seconds(), 2)
	finish(nodeID, sub.ID)

	p99, n, err := benchAgentReconnect(ctx, e, b, apiB.URL, opts)
	if err != nil {
		return nil, err
	}
	out["agent_reconnect_p99_s"], out["agent_reconnect_agents"] = p99, n
	return out, nil
}

// benchAgentReconnect runs real agents (the agent package cairn-agent runs)
// connected to a replica C that owns nothing and listing the owner's URL
// second; C's API dies (its listener and connections close, as a killed
// process's do), and each agent is timed from then until it receives a job
// the owner leased after the death: reconnected, subscribed, and served.
func benchAgentReconnect(ctx context.Context, e *env, owner *dispatchtest.Env, ownerURL string, opts dispatch.Options) (float64, int, error) {
	quiet := zerolog.Nop()
	leaseC := cluster.NewLease(e.app, "dispatch", "bench-c", cluster.LeaseOptions{Log: quiet})
	ctxC, stopC := context.WithCancel(ctx)
	defer stopC()
	go func() { _ = leaseC.Run(ctxC) }()
	c, err := dispatchtest.StartReplica(e.app, opts, leaseC, cluster.NewPresence(e.app, "bench-c"), quiet)
	if err != nil {
		return 0, 0, err
	}
	defer c.Stop()
	if err := c.WaitReady(ctx); err != nil {
		return 0, 0, err
	}
	apiC, err := graphtest.ServeJobSide(c, graph.Config{}, quiet)
	if err != nil {
		return 0, 0, err
	}
	apiCClosed := false
	defer func() {
		if !apiCClosed {
			_ = apiC.Close()
		}
	}()

	const n = 20
	got := &receivedJobs{seen: map[string]time.Time{}}
	dir, err := os.MkdirTemp("", "cairn-bench-agents-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	actx, stopAgents := context.WithCancel(ctx)
	var agents sync.WaitGroup
	defer func() { stopAgents(); agents.Wait() }()
	running := make([]*agent.Agent, 0, n)
	for i := range n {
		t, err := owner.Access.IssueJoinToken(ctx, dispatchtest.Operator, access.IssueJoinToken{})
		if err != nil {
			return 0, 0, err
		}
		ag, err := agent.New(agent.Config{
			Server: apiC.URL + "," + ownerURL, JoinToken: t.Token, DataDir: filepath.Join(dir, strconv.Itoa(i)),
			Hostname: "reconnect-" + strconv.Itoa(i), Transport: agent.TransportWebSocket,
			FileRoots: []string{filepath.Join(dir, strconv.Itoa(i), "files")}, StatsInterval: time.Hour, FactsInterval: time.Hour,
			RunnerCommand: []string{"true"}, Log: zerolog.New(got),
		})
		if err != nil {
			return 0, 0, err
		}
		running = append(running, ag)
		agents.Add(1)
		go func() { defer agents.Done(); _ = ag.Run(actx) }()
	}
	ids, err := waitEnrolled(ctx, running)
	if err != nil {
		return 0, 0, err
	}
	if err := waitOnline(ctx, owner, ids); err != nil {
		return 0, 0, err
	}
	// C dies.
	apiCClosed = true
	_ = apiC.Close()
	died := time.Now()
	jobIDs := make([]string, 0, n)
	for _, id := range ids {
		sub, err := owner.Jobs.Submit(ctx, dispatchtest.Operator, jobs.Submit{Spec: echoSpec, Target: job.Target{NodeID: id}})
		if err != nil {
			return 0, 0, err
		}
		jobIDs = append(jobIDs, sub.ID)
	}
	var lat []time.Duration
	deadline := time.Now().Add(2 * time.Minute)
	for _, id := range jobIDs {
		for {
			if at, ok := got.at(id); ok {
				lat = append(lat, at.Sub(died))
				break
			}
			if time.Now().After(deadline) {
				return 0, 0, fmt.Errorf("job %s never reached its agent after the agent's replica died", id)
			}
			if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
				return 0, 0, err
			}
		}
	}
	return round(gqlPercentile(lat, 0.99).Seconds(), 2), len(lat), nil
}

// receivedJobs collects when agents logged "job received", by job id.
type receivedJobs struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (r *receivedJobs) Write(p []byte) (int, error) {
	var line struct{ Message, Job string }
	if json.Unmarshal(p, &line) == nil && line.Message == "job received" && line.Job != "" {
		r.mu.Lock()
		if _, ok := r.seen[line.Job]; !ok {
			r.seen[line.Job] = time.Now()
		}
		r.mu.Unlock()
	}
	return len(p), nil
}

func (r *receivedJobs) at(jobID string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.seen[jobID]
	return t, ok
}

// waitEnrolled waits until every agent has enrolled and returns their
// nodes' ids.
func waitEnrolled(ctx context.Context, agents []*agent.Agent) ([]string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var ids []string
		for _, a := range agents {
			if id := a.NodeID(); id != "" {
				ids = append(ids, id)
			}
		}
		if len(ids) == len(agents) {
			return ids, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d agents enrolled after 2 minutes", len(ids), len(agents))
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// waitFor waits for id on ch, skipping others, for at most a minute.
func waitFor(ctx context.Context, ch <-chan string, id, who string) error {
	timeout := time.After(time.Minute)
	for {
		select {
		case got := <-ch:
			if got == id {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("job %s never reached %s", id, who)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// benchAppendReplicas compares command appends through three replicas'
// stores with appends through one, the same writers spread over them, in
// alternating rounds so that noise falls on both alike.
func benchAppendReplicas(ctx context.Context, e *env) (float64, error) {
	stores := make([]*eventstore.Store, 3)
	for i := range stores {
		stores[i] = eventstore.New(e.app, benchRegistry(), eventstore.Options{Log: zerolog.Nop()})
		defer stores[i].Close()
	}
	var seq int64
	mu := make(chan struct{}, 1)
	next := func() int64 {
		mu <- struct{}{}
		seq++
		n := seq
		<-mu
		return n
	}
	op := func(pick func(w int) *eventstore.Store) func(context.Context, int) (int, error) {
		return func(ctx context.Context, w int) (int, error) {
			n := next()
			_, err := pick(w).Append(ctx, eventstore.AppendRequest{
				CommandID: "replicas-cmd-" + strconv.FormatInt(n, 10),
				Metadata:  eventstore.Metadata{Actor: "bench"},
				Streams: []eventstore.StreamAppend{{
					StreamID: "node-r" + strconv.Itoa(w) + "-" + strconv.FormatInt(n%4, 10), StreamType: benchStreamType,
					Expected: eventstore.AnyVersion, Events: []domain.Event{benchEvent{Seq: n, Node: "node-1", Status: "online"}},
				}},
			})
			return 1, err
		}
	}
	one := op(func(int) *eventstore.Store { return stores[0] })
	three := op(func(w int) *eventstore.Store { return stores[w%3] })
	rounds := 4
	slice := config{duration: e.cfg.duration / time.Duration(rounds), writers: e.cfg.writers}
	var single, spread float64
	// Transactions each way: with the database's commits the limit, how
	// many appends share one is what the ratio comes down to.
	var txOne, txThree int64
	batches := func() (n int64) {
		for _, s := range stores {
			n += s.Stats().Batches
		}
		return n
	}
	for range rounds {
		b0 := batches()
		s, err := throughput(ctx, slice, one)
		if err != nil {
			return 0, err
		}
		b1 := batches()
		t, err := throughput(ctx, slice, three)
		if err != nil {
			return 0, err
		}
		txOne, txThree = txOne+b1-b0, txThree+batches()-b1
		single, spread = single+s, spread+t
	}
	secs := (slice.duration * time.Duration(rounds)).Seconds()
	e.log.Info().Float64("appends_per_s_one", round(single/float64(rounds), 0)).
		Float64("appends_per_s_three", round(spread/float64(rounds), 0)).
		Float64("transactions_per_s_one", round(float64(txOne)/secs, 0)).
		Float64("transactions_per_s_three", round(float64(txThree)/secs, 0)).
		Msg("appends through one store and through three")
	return round(spread/single, 2), nil
}
