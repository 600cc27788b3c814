package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/blueprints"
	"cairn/commands/orchestrator"
	"cairn/commands/orchestrator/orchestratortest"
	"cairn/commands/services"
	"cairn/domain/events"
	"cairn/eventbus"
	"cairn/eventstore"
	"cairn/internal/seal"
	"cairn/plugins"
	"cairn/plugins/fake"
	"cairn/projections"
	"cairn/projections/models"
	"cairn/projections/readmodel"
)

const blueprintServices = 100

const benchBlueprintTemplate = `
apiVersion: cairn/v1
metadata: {name: bench-bp, version: 1.0.0}
variables:
  size: {type: integer, default: 1}
resources:
  - {name: disk, plugin: fake, type: thing, properties: {size: "${var.size}"}}
  - {name: app, plugin: fake, type: thing, properties: {disk: "${resource.disk.outputs.id}"}}
`

// benchBlueprint measures a blueprint of 100 services applied from nothing
// until every one runs (fake plugin, through the services' commands and the
// orchestrator), then the events a second apply of the same file appends:
// blueprint_apply_100_services_s and blueprint_reapply_events (target 0).
func benchBlueprint(ctx context.Context, e *env) (result, error) {
	store := eventstore.New(e.app, events.Registry(), eventstore.Options{Log: e.log, AppendWorkers: e.cfg.appendWorkers})
	defer store.Close()
	reg := plugins.NewRegistry()
	if err := reg.Register("fake", fake.New(fake.Options{})); err != nil {
		return nil, err
	}
	if _, err := orchestratortest.Publish(ctx, store, reg, "bench-vendor", []byte(benchBlueprintTemplate)); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sealer, err := seal.New(key)
	if err != nil {
		return nil, err
	}
	meta := commands.Meta{Actor: "bench"}
	tenant := fmt.Sprintf("bench-bp-%d", time.Now().UnixNano())
	acc := access.NewHandlers(store, time.Now, func() string { return "x" }, access.Options{})
	if _, err := acc.CreateTenant(ctx, meta, access.CreateTenant{TenantID: tenant, Name: "Blueprint bench"}); err != nil {
		return nil, err
	}
	var seq atomic.Int64
	svc, err := services.NewHandlers(store, time.Now, func() string { return fmt.Sprintf("bps%d", seq.Add(1)) }, sealer)
	if err != nil {
		return nil, err
	}
	svc.UpdatesInPlace(reg)
	head, err := store.Head(ctx)
	if err != nil {
		return nil, err
	}
	group := orchestrator.DefaultGroup + "-blueprint"
	if err := store.SaveCheckpoint(ctx, eventbus.CheckpointName(group), head); err != nil {
		return nil, err
	}
	var started atomic.Int64
	allUp := make(chan struct{})
	var once sync.Once
	o, err := orchestrator.New(orchestrator.Config{Store: store, Pool: e.app, Plugins: reg, Variables: svc.DecodeVariables, Log: e.log,
		MaxServices: 128, Group: group,
		OnStep: func(s orchestrator.Step) {
			for _, ev := range s.Events {
				if ev == "service.started" && started.Add(1) == blueprintServices {
					once.Do(func() { close(allUp) })
				}
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
	if err := waitReadModels(ctx, store, runner); err != nil {
		return nil, err
	}
	reader := readmodel.New(e.app)
	h := blueprints.NewHandlers(store, svc, reader, reader)
	var doc strings.Builder
	fmt.Fprintf(&doc, "apiVersion: cairn/v1\nkind: Blueprint\nmetadata: {name: bench}\ntenant: %s\nservices:\n", tenant)
	for i := range blueprintServices {
		fmt.Fprintf(&doc, "  - {name: svc-%03d, template: bench-bp, version: 1.0.0, variables: {size: %d}}\n", i, i%7+1)
	}
	in := blueprints.Apply{Document: []byte(doc.String())}

	start := time.Now()
	if _, err := h.Apply(ctx, meta, in); err != nil {
		return nil, err
	}
	select {
	case <-allUp:
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("only %d of %d services running after 5 minutes", started.Load(), blueprintServices)
	}
	took := time.Since(start)

	if err := waitReadModels(ctx, store, runner); err != nil {
		return nil, err
	}
	before, err := store.Head(ctx)
	if err != nil {
		return nil, err
	}
	again, err := h.Apply(ctx, meta, in)
	if err != nil {
		return nil, err
	}
	after, err := store.Head(ctx)
	if err != nil {
		return nil, err
	}
	appended := after.Position - before.Position
	if again.Changed() && appended == 0 {
		return nil, fmt.Errorf("the second apply planned changes but appended nothing")
	}
	return result{
		"blueprint_apply_100_services_s": round(took.Seconds(), 2),
		"blueprint_reapply_events":       appended,
	}, nil
}

// waitReadModels waits until the runner has applied the log's head.
func waitReadModels(ctx context.Context, store *eventstore.Store, runner *projections.Runner) error {
	head, err := store.Head(ctx)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return runner.WaitFor(wctx, head)
}
