package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"cairn/auth"
	"cairn/cluster"
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
	changes, err := client.New(apiB.URL, admin, nil).Subscribe(ctx, client.TransportWS, client.Request{
		Query: `subscription { events(filter: {types: ["job.submitted"]}) { streamId } }`,
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
	return out, nil
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
					StreamID: "node-r" + strconv.Itoa(w) + "-" + strconv.FormatInt(n%4, 10), StreamType: "node",
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
	for range rounds {
		s, err := throughput(ctx, slice, one)
		if err != nil {
			return 0, err
		}
		t, err := throughput(ctx, slice, three)
		if err != nil {
			return 0, err
		}
		single, spread = single+s, spread+t
	}
	return round(spread/single, 2), nil
}
