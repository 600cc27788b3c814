package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn/commands/orchestrator"
	"cairn/commands/orchestrator/orchestratortest"
	"cairn/commands/reconciler"
	"cairn/domain/events"
	"cairn/domain/ocl"
	"cairn/domain/service"
	"cairn/eventbus"
	"cairn/eventstore"
	"cairn/plugins"
	"cairn/plugins/fake"
	"cairn/projections"
	"cairn/projections/models"
	"cairn/projections/readmodel"
)

const benchHealTemplate = `
apiVersion: cairn/v1
metadata: {name: bench-heal, version: 1.0.0}
resources:
  - {name: disk, plugin: fake, type: thing, properties: {gb: 20}}
  - {name: app, plugin: fake, type: thing, properties: {disk: "${resource.disk.outputs.id}"}}
`

// benchReconcile measures the reconciler of SPEC §12 on 1,000 services of
// two fake resources each, deployed through the orchestrator:
//
//   - reconcile_pass_ms_per_1000_services: one pass over them all healthy
//     (the second: the first reads from disk, reconcile_first_pass_ms), and
//     reconcile_idle_events_appended, what that pass appended (0);
//   - drift_repair_p99_s: resources removed behind Cairn's back at random
//     moments, half an interval apart on average, with the interval at
//     2 s: from the removal to the resource made again.
func benchReconcile(ctx context.Context, e *env) (result, error) {
	const services, interval, samples = 1000, 2 * time.Second, 20
	store := eventstore.New(e.app, events.Registry(), eventstore.Options{Log: e.log, AppendWorkers: e.cfg.appendWorkers})
	defer store.Close()
	reg := plugins.NewRegistry()
	fk := fake.New(fake.Options{})
	if err := reg.Register("fake", fk); err != nil {
		return nil, err
	}
	desc, err := orchestratortest.Publish(ctx, store, reg, "bench-vendor", []byte(benchHealTemplate))
	if err != nil {
		return nil, err
	}
	head, err := store.Head(ctx)
	if err != nil {
		return nil, err
	}
	if err := store.SaveCheckpoint(ctx, eventbus.CheckpointName(orchestrator.DefaultGroup+"-heal"), head); err != nil {
		return nil, err
	}
	var registered atomic.Int64
	allIn := make(chan struct{})
	var once sync.Once
	o, err := orchestrator.New(orchestrator.Config{Store: store, Pool: e.app, Plugins: reg, Log: e.log, MaxServices: 256,
		Group: orchestrator.DefaultGroup + "-heal",
		OnStep: func(s orchestrator.Step) {
			if len(s.Events) == 1 && s.Events[0] == "service.registered" && registered.Add(1) == services {
				once.Do(func() { close(allIn) })
			}
		}})
	if err != nil {
		return nil, err
	}
	runner := projections.NewRunner(store, e.app, projections.Options{Log: e.log})
	if err := runner.Register(models.Services{}); err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() { stop(); bg.Wait() }()
	bg.Go(func() { _ = o.Run(rctx) })
	bg.Go(func() { _ = runner.Run(rctx) })

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range services {
		g.Go(func() error {
			return orchestratortest.Register(gctx, store, orchestratortest.Registration{
				ServiceID: fmt.Sprintf("bench-heal-%04d", i), TenantID: "bench-tenant", Descriptor: desc})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	select {
	case <-allIn:
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("only %d of %d services registered in 5 minutes", registered.Load(), services)
	}
	reader := readmodel.New(e.app)
	// The read models list them all before the pass is timed.
	for {
		n, err := countRegistered(ctx, reader)
		if err != nil {
			return nil, err
		}
		if n == services {
			break
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	rec, err := reconciler.New(reconciler.Config{Store: store, Reader: reader, Plugins: reg, Interval: interval, Log: e.log})
	if err != nil {
		return nil, err
	}
	// The first pass reads the services' streams from disk among every
	// event the earlier benchmarks wrote; passes come every interval, so
	// the figure is the next one, with the first printed beside it.
	start := time.Now()
	if _, err := rec.Pass(ctx); err != nil {
		return nil, err
	}
	firstMS := float64(time.Since(start).Microseconds()) / 1000
	start = time.Now()
	st, err := rec.Pass(ctx)
	if err != nil {
		return nil, err
	}
	passMS := float64(time.Since(start).Microseconds()) / 1000
	if st.Services < services {
		return nil, fmt.Errorf("the pass saw %d services, not %d", st.Services, services)
	}

	recCtx, stopRec := context.WithCancel(rctx)
	defer stopRec()
	bg.Go(func() { _ = rec.Run(recCtx) })
	// Removals come at random moments, half an interval apart on average,
	// each of a resource of its own: several may wait for the same pass, as
	// drift in a fleet does, and the samples take a quarter of the time
	// they took one after another.
	var mu sync.Mutex
	var waits []float64
	samplers, sctx := errgroup.WithContext(ctx)
	picked := rand.Perm(services)
	for i := range samples {
		if err := sleepCtx(sctx, time.Duration(rand.Int64N(int64(interval)))/2); err != nil {
			break
		}
		id := ocl.ResourceID(fmt.Sprintf("bench-heal-%04d", picked[i]), []string{"disk", "app"}[i%2])
		lost := time.Now()
		fk.Lose(id)
		samplers.Go(func() error {
			for {
				if _, ok := fk.Get(id); ok {
					break
				}
				if time.Since(lost) > time.Minute {
					return fmt.Errorf("resource %s not repaired in a minute", id)
				}
				if err := sleepCtx(sctx, 10*time.Millisecond); err != nil {
					return err
				}
			}
			mu.Lock()
			waits = append(waits, time.Since(lost).Seconds())
			mu.Unlock()
			return nil
		})
	}
	if err := samplers.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Leave nothing half repaired for the benchmarks after this one: stop
	// asking, and let the orchestrator finish what was asked.
	stopRec()
	if err := sleepCtx(ctx, time.Second); err != nil { // the read models catch up
		return nil, err
	}
	for {
		conn, err := reader.ListServices(ctx, readmodel.ServiceFilter{TemplateName: "bench-heal",
			Status: []service.Status{service.StatusRepairing}}, readmodel.Page{First: 1})
		if err != nil {
			return nil, err
		}
		if len(conn.Edges) == 0 {
			break
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
	slices.Sort(waits)
	return result{
		"reconcile_pass_ms_per_1000_services": round(passMS*1000/float64(st.Services), 1),
		"reconcile_first_pass_ms":             round(firstMS, 1),
		"reconcile_idle_events_appended":      st.Appended,
		"drift_repair_p99_s":                  round(waits[len(waits)*99/100], 2),
		"drift_repair_interval_s":             interval.Seconds(),
		"drift_repair_samples":                samples,
	}, nil
}

func countRegistered(ctx context.Context, r *readmodel.Reader) (int, error) {
	n := 0
	page := readmodel.Page{First: 500}
	for {
		conn, err := r.ListServices(ctx, readmodel.ServiceFilter{TemplateName: "bench-heal", Status: []service.Status{service.StatusRegistered}}, page)
		if err != nil {
			return 0, err
		}
		n += len(conn.Edges)
		if !conn.PageInfo.HasNextPage {
			return n, nil
		}
		page.After = conn.PageInfo.EndCursor
	}
}
