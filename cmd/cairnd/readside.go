package main

import (
	"cairn/cluster"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"cairn/commands/jobs"
	"cairn/commands/orchestrator"
	"cairn/commands/reconciler"
	"cairn/commands/services"
	"cairn/commands/templates"
	"cairn/eventstore"
	"cairn/internal/seal"
	"cairn/plugins"
	"cairn/plugins/builtin"
	"cairn/projections"
	"cairn/projections/models"
	"cairn/projections/readmodel"
	"cairn/scheduler"
)

// serviceSide is what serves the read models, the catalog and services:
// the projection runner, the catalog and service handlers, and the
// orchestrator that drives services through their plugins.
type serviceSide struct {
	runner    *projections.Runner
	reader    *readmodel.Reader
	templates *templates.Handlers
	services  *services.Handlers
	orch      *orchestrator.Orchestrator
	rec       *reconciler.Reconciler
	// sched follows the nodes' load on every replica, so that a new owner
	// of the orchestrator places with a view already read.
	sched   *scheduler.Scheduler
	plugins *plugins.Registry
	// orchLease, when set, runs the orchestrator only while this replica
	// owns it; the projections run on every replica.
	orchLease *cluster.Lease
}

// secretsKeyFile holds the key that seals sensitive service variables. It
// is made on first start; losing it makes the recorded sensitive values
// unreadable.
const secretsKeyFile = "secrets.key"

// loadSecretsKey reads the 32-byte key from file when one is given (it must
// exist: a replica joining a cluster uses the cluster's key), else from the
// data directory, creating it (mode 0600) on first start.
func loadSecretsKey(dataDir, file string) ([]byte, error) {
	if file != "" {
		key, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read the secrets key: %w", err)
		}
		if len(key) != 32 {
			return nil, fmt.Errorf("%s holds %d bytes; a secrets key is 32", file, len(key))
		}
		return key, nil
	}
	path := filepath.Join(dataDir, secretsKeyFile)
	key, err := os.ReadFile(path)
	if err == nil {
		if len(key) != 32 {
			return nil, fmt.Errorf("%s holds %d bytes; a secrets key is 32", path, len(key))
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(key); err != nil {
		_ = f.Close()
		return nil, err
	}
	return key, f.Close()
}

// newServiceSide builds the service side. The agent plugin runs its actions
// as jobs through js, on the nodes the read models list as online. pool
// acts as the application role; readModels writes the read models.
func newServiceSide(ctx context.Context, store *eventstore.Store, pool, readModels *pgxpool.Pool, js *jobSide, sealer *seal.Sealer, cfg *config, log zerolog.Logger) (*serviceSide, error) {
	dataDir := cfg.DataDir
	var pcfg builtin.Config
	if cfg.Plugins != "" {
		var err error
		if pcfg, err = builtin.Load(cfg.Plugins); err != nil {
			return nil, err
		}
	}
	svc, err := services.NewHandlers(store, time.Now, newID, sealer)
	if err != nil {
		return nil, err
	}
	reader := readmodel.New(pool)
	reg, err := builtin.Registry(ctx, pcfg, builtin.Deps{
		AgentRunner: jobs.NewActionRunner(js.jobs, store, jobs.ActionRunnerOptions{}),
		AgentNodes:  readmodel.AgentNodes{Reader: reader},
		DataDir:     dataDir, Log: log.With().Str("component", "plugins").Logger(),
	})
	if err != nil {
		return nil, err
	}
	sched := scheduler.New(store, time.Now, log.With().Str("component", "scheduler").Logger())
	svc.CheckCapacity(scheduler.PlanCheck{Scheduler: sched, Plugins: reg})
	svc.UpdatesInPlace(reg)
	orch, err := orchestrator.New(orchestrator.Config{
		Store: store, Pool: pool, Plugins: reg, Variables: svc.DecodeVariables, Scheduler: sched,
		Log: log.With().Str("component", "orchestrator").Logger(),
	})
	if err != nil {
		_ = reg.Close()
		return nil, err
	}
	rec, err := reconciler.New(reconciler.Config{Store: store, Reader: reader, Plugins: reg, Scheduler: sched,
		Interval: cfg.ReconcileInterval, Log: log.With().Str("component", "reconciler").Logger()})
	if err != nil {
		_ = reg.Close()
		return nil, err
	}
	runner := projections.NewRunner(store, readModels, projections.Options{
		Log: log.With().Str("component", "projections").Logger(), Views: models.AnalyticsViews(),
	})
	if err := runner.Register(models.All()...); err != nil {
		_ = reg.Close()
		return nil, err
	}
	return &serviceSide{
		runner: runner, reader: reader, templates: templates.NewHandlers(store, time.Now, reg), services: svc, orch: orch, rec: rec, plugins: reg, sched: sched,
	}, nil
}

// run applies the projections and drives services until ctx ends, then
// closes the plugins.
func (s *serviceSide) run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.runner.Run(gctx) })
	g.Go(func() error { return s.sched.Run(gctx) })
	// The reconciler asks for the repairs the orchestrator carries out: both
	// are the owner's work, under one lease.
	owned := func(ctx context.Context) error {
		og, octx := errgroup.WithContext(ctx)
		og.Go(func() error { return s.orch.Run(octx) })
		og.Go(func() error { return s.rec.Run(octx) })
		return og.Wait()
	}
	g.Go(func() error {
		if s.orchLease == nil {
			return owned(gctx)
		}
		return s.orchLease.WhileOwned(gctx, owned)
	})
	err := g.Wait()
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = nil
	}
	return errors.Join(err, s.plugins.Close())
}
