package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/nodes"
	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/node"
	"cairn/domain/placement"
	"cairn/eventstore"
	"cairn/scheduler"
)

// The placement figures of SPEC §14, with nodes enrolled, connected and
// reporting facts through the real commands, and every decision appended
// as the orchestrator appends it (the node's allocation and the resource's
// placement in one append):
//
//   - placements_per_s: 10,000 placements onto 1,000 nodes of mixed sizes
//     in four locations, from 16 deciders at once;
//   - binpack_nodes_used_ratio: a workload of mixed requests on 200 equal
//     nodes of a location of their own: nodes used ÷ ⌈demand ÷ node size⌉
//     on the dominant resource;
//   - spread_max_skew: 100 services of four instances each with distinct:
//     location over four locations: the largest difference between the
//     instances of one service in two locations.
func benchPlacement(ctx context.Context, e *env) (result, error) {
	store := eventstore.New(e.app, events.Registry(), eventstore.Options{Log: e.log, AppendWorkers: e.cfg.appendWorkers})
	defer store.Close()
	var seq atomic.Int64
	ids := func() string { return fmt.Sprintf("pl%d", seq.Add(1)) }
	meta := commands.Meta{Actor: "bench"}
	acc := access.NewHandlers(store, time.Now, ids, access.Options{})
	locations := []string{"ams", "fra", "lon", "par", "packed"}
	for _, l := range locations {
		if _, err := acc.CreateLocation(ctx, meta, access.CreateLocation{LocationID: "bench-" + l, Name: l}); err != nil {
			return nil, err
		}
	}
	nh := nodes.NewHandlers(store, time.Now, ids)
	sizes := []struct {
		cpus int
		mem  int64
	}{{4, 8}, {8, 32}, {16, 64}, {32, 128}}
	enroll := func(host, loc string, cpus int, memGiB int64) error {
		pool := "mixed"
		if loc == "packed" {
			pool = "packed"
		}
		out, err := nh.Enroll(ctx, meta, nodes.Enroll{Hostname: host, LocationID: "bench-" + loc, Labels: map[string]string{"pool": pool}})
		if err != nil {
			return err
		}
		if _, err := nh.Connect(ctx, meta, nodes.Connect{NodeID: out.ID}); err != nil {
			return err
		}
		_, err = nh.ReportFacts(ctx, meta, nodes.ReportFacts{NodeID: out.ID, Facts: node.Facts{
			CPU: node.CPU{Model: "bench", Cores: cpus, Threads: cpus}, MemoryBytes: uint64(memGiB) << 30,
			Disks: []node.Disk{{Device: "vda", Mountpoint: "/", Filesystem: "ext4", SizeBytes: 500 << 30}},
		}})
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range 1000 {
		g.Go(func() error {
			s := sizes[i%len(sizes)]
			return enroll(fmt.Sprintf("mixed-%04d", i), locations[i%4], s.cpus, s.mem)
		})
	}
	for i := range 200 {
		g.Go(func() error { return enroll(fmt.Sprintf("packed-%03d", i), "packed", 8, 32) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	_ = gctx

	sched := scheduler.New(store, time.Now, e.log)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = sched.Run(sctx) }()
	select {
	case <-sched.Ready():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	place := func(ctx context.Context, r scheduler.Request) (string, error) {
		for range 16 {
			dec, err := sched.Reserve(ctx, r)
			if err != nil {
				return "", err
			}
			_, err = store.Append(ctx, eventstore.AppendRequest{Metadata: eventstore.Metadata{Actor: "bench"}, Streams: []eventstore.StreamAppend{
				{StreamID: domain.StreamID(domain.ResourceStream, r.Ask.ResourceID), StreamType: domain.ResourceStream, Expected: eventstore.NoStream, Events: dec.Resource},
				dec.Node,
			}})
			dec.Done(ctx, err)
			var conflict *eventstore.VersionConflictError
			if errors.As(err, &conflict) && conflict.StreamID == dec.Node.StreamID {
				continue
			}
			return dec.NodeID, err
		}
		return "", errors.New("placement kept conflicting")
	}
	run := func(n int, ask func(i int) scheduler.Request, placed func(i int, node string)) error {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(e.cfg.writers)
		for i := range n {
			g.Go(func() error {
				where, err := place(gctx, ask(i))
				if err != nil {
					return fmt.Errorf("placement %d: %w", i, err)
				}
				if placed != nil {
					placed(i, where)
				}
				return nil
			})
		}
		return g.Wait()
	}
	mixedLoc := []string{"bench-ams", "bench-fra", "bench-lon", "bench-par"}

	// 10,000 placements on the mixed nodes.
	const placements = 10000
	start := time.Now()
	err := run(placements, func(i int) scheduler.Request {
		return scheduler.Request{Ask: placement.Ask{ResourceID: fmt.Sprintf("bench-place-%d", i), Location: mixedLoc[i%4],
			Request: placement.Resources{CPUMillis: int64(250 * (1 + i%4)), MemoryBytes: int64(256<<20) * int64(1+i%8)}}}
	}, nil)
	if err != nil {
		return nil, err
	}
	perSecond := placements / time.Since(start).Seconds()

	// Bin-packing on 200 equal nodes: 1,500 requests of 0.25–1 CPU and
	// 0.5–4 GiB; the lower bound is the dominant resource's demand over
	// one node's size.
	var demandCPU, demandMem int64
	asks := make([]placement.Resources, 1500)
	for i := range asks {
		asks[i] = placement.Resources{CPUMillis: int64(250 * (1 + i%4)), MemoryBytes: int64(512<<20) * int64(1+(i*7)%8)}
		demandCPU += asks[i].CPUMillis
		demandMem += asks[i].MemoryBytes
	}
	var mu sync.Mutex
	used := map[string]bool{}
	err = run(len(asks), func(i int) scheduler.Request {
		return scheduler.Request{Ask: placement.Ask{ResourceID: fmt.Sprintf("bench-pack-%d", i), Location: "bench-packed", Request: asks[i]}}
	}, func(_ int, n string) {
		mu.Lock()
		used[n] = true
		mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	lower := math.Max(math.Ceil(float64(demandCPU)/8000), math.Ceil(float64(demandMem)/float64(32<<30)))

	// Distinct instances over four locations.
	const services, instances = 100, 4
	where := make([]string, services*instances)
	locOf := map[string]string{}
	cands, err := sched.Candidates(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range cands {
		locOf[c.ID] = c.Location
	}
	err = run(services*instances, func(i int) scheduler.Request {
		svc := i / instances
		group := fmt.Sprintf("service:bench-svc-%d/web", svc)
		return scheduler.Request{Ask: placement.Ask{ResourceID: fmt.Sprintf("bench-spread-%d", i), Selector: node.Selector{{Key: "pool", Op: node.OpIn, Values: []string{"mixed"}}},
			Request: placement.Resources{CPUMillis: 100}, Distinct: placement.ScopeLocation, DistinctGroup: group,
			Spread: placement.ScopeNode, SpreadGroup: "template:bench/web"}, Groups: []string{group, "template:bench/web"}}
	}, func(i int, n string) { where[i] = n })
	if err != nil {
		return nil, err
	}
	skew := 0
	for svc := range services {
		count := map[string]int{}
		for _, l := range mixedLoc {
			count[l] = 0
		}
		for k := range instances {
			count[locOf[where[svc*instances+k]]]++
		}
		lo, hi := math.MaxInt, 0
		for _, l := range mixedLoc {
			lo, hi = min(lo, count[l]), max(hi, count[l])
		}
		skew = max(skew, hi-lo)
	}
	return result{
		"placements_per_s":          round(perSecond, 0),
		"placement_nodes":           1000,
		"binpack_nodes_used_ratio":  round(float64(len(used))/lower, 3),
		"binpack_nodes_used":        len(used),
		"binpack_nodes_lower_bound": lower,
		"spread_max_skew":           skew,
	}, nil
}
