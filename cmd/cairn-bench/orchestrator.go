package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn/commands/orchestrator"
	"cairn/commands/orchestrator/orchestratortest"
	"cairn/domain/events"
	"cairn/eventbus"
	"cairn/eventstore"
	"cairn/plugins"
	"cairn/plugins/fake"
)

// benchServiceTemplate has five resources in three levels, each using the
// outputs of those before it, so the orchestrator resolves references and
// walks levels as it would for a real service.
const benchServiceTemplate = `
apiVersion: cairn/v1
metadata: {name: bench-stack, version: 1.0.0}
resources:
  - {name: network, plugin: fake, type: thing, properties: {cidr: 10.0.0.0/24}}
  - {name: volume, plugin: fake, type: thing, properties: {gb: 20}}
  - {name: database, plugin: fake, type: thing, properties: {net: "${resource.network.outputs.cidr}", disk: "${resource.volume.outputs.id}"}}
  - {name: cache, plugin: fake, type: thing, properties: {net: "${resource.network.outputs.cidr}"}}
  - {name: app, plugin: fake, type: thing, properties: {db: "${resource.database.outputs.id}", cache: "${resource.cache.outputs.id}"}}
outputs:
  app: {value: "${resource.app.outputs.id}"}
`

// benchDeploy registers 1,000 services of five resources each and measures
// the time until the orchestrator has recorded every one as registered:
// with a plugin that does no work, this is the orchestrator's own overhead
// (planning, reading state, one append per step).
func benchDeploy(ctx context.Context, e *env) (result, error) {
	const services = 1000
	store := eventstore.New(e.app, events.Registry(), eventstore.Options{Log: e.log, AppendWorkers: e.cfg.appendWorkers})
	defer store.Close()
	reg := plugins.NewRegistry()
	fk := fake.New(fake.Options{})
	if err := reg.Register("fake", fk); err != nil {
		return nil, err
	}
	desc, err := orchestratortest.Publish(ctx, store, reg, "bench-vendor", []byte(benchServiceTemplate))
	if err != nil {
		return nil, err
	}

	// Earlier benchmarks filled the log: start the orchestrator's consumer
	// group at its head rather than measure a catch-up read.
	if head, err := store.Head(ctx); err != nil {
		return nil, err
	} else if err := store.SaveCheckpoint(ctx, eventbus.CheckpointName(orchestrator.DefaultGroup), head); err != nil {
		return nil, err
	}

	var registered, steps atomic.Int64
	var once sync.Once
	done := make(chan struct{})
	o, err := orchestrator.New(orchestrator.Config{
		Store: store, Pool: e.app, Plugins: reg, Log: e.log, MaxServices: 256,
		OnStep: func(s orchestrator.Step) {
			steps.Add(1)
			if len(s.Events) == 1 && s.Events[0] == "service.registered" && registered.Add(1) == services {
				once.Do(func() { close(done) })
			}
		},
	})
	if err != nil {
		return nil, err
	}
	octx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- o.Run(octx) }()
	defer func() { stop(); <-ran }()

	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range services {
		g.Go(func() error {
			return orchestratortest.Register(gctx, store, orchestratortest.Registration{
				ServiceID: fmt.Sprintf("bench-svc-%04d", i), TenantID: "bench-tenant", Descriptor: desc,
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	requested := time.Since(start)
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("only %d of %d services registered in 5 minutes", registered.Load(), services)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	took := time.Since(start)
	if live := len(fk.Live()); live != services*5 {
		return nil, fmt.Errorf("%d resources exist after deploying %d services of 5", live, services)
	}
	return result{
		"deploy_1000_services_s":          round(took.Seconds(), 2),
		"deploy_requests_s":               round(requested.Seconds(), 2),
		"deploy_orchestrator_steps":       steps.Load(),
		"deploy_orchestrator_steps_per_s": round(float64(steps.Load())/took.Seconds(), 0),
	}, nil
}
