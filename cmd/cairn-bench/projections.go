package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/internal/database"
	"cairn/migrations"
	"cairn/projections"
	"cairn/projections/audit"
	"cairn/projections/eventgen"
	"cairn/projections/models"
)

var rebuildEvents = flag.Int("rebuild-events", 1_000_000, "events of mixed domain types the projection benchmarks run on")

// projEnv is a database of its own holding a log of real domain events (the
// main bench database holds synthetic ones no projection knows).
type projEnv struct {
	app        *pgxpool.Pool
	readModels *pgxpool.Pool
	store      *eventstore.Store
	events     int64
	last       eventstore.Cursor
}

// projGen makes the projection benchmarks' events; the lag benchmark goes
// on where the fill stopped.
var projGen = eventgen.New(eventgen.Options{Seed: 1, Nodes: 2000, Tenants: 200, Templates: 50,
	Start: time.Now().Add(-30 * 24 * time.Hour)})

// openProjections opens the projection benchmarks' database, making and
// filling it on first use. release releases it before the cluster stops.
func openProjections(ctx context.Context, e *env) (p *projEnv, release func(), err error) {
	cc := e.admin.Config().ConnConfig
	conn := func(db string) string {
		return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", cc.Host, cc.Port, cc.User, db)
	}
	if err := database.CreateDatabase(ctx, conn("postgres"), "bench_projections", ""); err != nil && !database.IsDuplicateDatabase(err) {
		return nil, nil, err
	}
	owner, err := database.Open(ctx, conn("bench_projections"), database.Options{MaxConns: 4})
	if err != nil {
		return nil, nil, err
	}
	_, err = migrations.Up(ctx, owner)
	owner.Close()
	if err != nil {
		return nil, nil, err
	}
	app, err := database.Open(ctx, conn("bench_projections"), database.Options{Role: database.AppRole, MaxConns: 40})
	if err != nil {
		return nil, nil, err
	}
	// As in cairnd, read models are written through sessions readers of the
	// log need not wait for.
	readModels, err := database.Open(ctx, conn("bench_projections"), database.Options{Role: database.AppRole, AppName: eventstore.ReadModelAppName})
	if err != nil {
		app.Close()
		return nil, nil, err
	}
	p = &projEnv{app: app, readModels: readModels, store: eventstore.New(app, events.Registry(), eventstore.Options{Log: e.log})}
	release = func() { p.store.Close(); app.Close(); readModels.Close() }
	defer func() {
		if err != nil {
			release()
		}
	}()
	if p.events, err = p.store.Count(ctx, eventstore.Filter{}); err != nil {
		return nil, nil, err
	}
	if p.events < int64(*rebuildEvents) {
		// COPY in chunks, each its own transaction, as a long-lived log
		// would be written; the next chunk is encoded while one is written.
		start := time.Now()
		copier := eventgen.NewCopier(app, events.Registry())
		target := int64(*rebuildEvents)
		batches := make(chan eventgen.Prepared, 1)
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error {
			defer close(batches)
			for made := p.events; made < target; {
				b, err := copier.Prepare(projGen.Take(int(min(50_000, target-made))), time.Now())
				if err != nil {
					return err
				}
				made += int64(b.Events)
				select {
				case batches <- b:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
		g.Go(func() error {
			for b := range batches {
				if err := copier.Write(gctx, b); err != nil {
					return err
				}
				p.events += int64(b.Events)
			}
			return nil
		})
		if err := g.Wait(); err != nil {
			return nil, nil, err
		}
		if _, err := app.Exec(ctx, `ANALYZE events`); err != nil {
			return nil, nil, err
		}
		e.log.Info().Int64("events", p.events).Dur("took", time.Since(start)).Msg("projection benchmarks: log filled")
	}
	if p.last, err = p.store.Head(ctx); err != nil {
		return nil, nil, err
	}
	return p, release, nil
}

func newBenchRunner(p *projEnv, e *env) (*projections.Runner, error) {
	r := projections.NewRunner(p.store, p.readModels, projections.Options{Log: e.log, Views: models.AnalyticsViews()})
	return r, r.Register(models.All()...)
}

// runRunner runs r until the returned stop is called.
func runRunner(r *projections.Runner) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

// benchRebuild builds every projection from position zero over the whole
// log: the work of a rebuild, or of a new installation's first start.
func benchRebuild(ctx context.Context, e *env) (result, error) {
	p, closeDB, err := openProjections(ctx, e)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	r, err := newBenchRunner(p, e)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	stop := runRunner(r)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	err = r.WaitFor(wctx, p.last)
	elapsed := time.Since(start)
	if serr := stop(); err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("rebuild did not finish: %w", err)
	}
	sts, err := projections.ReadStatus(ctx, p.store, p.readModels)
	if err != nil {
		return nil, err
	}
	for _, s := range sts {
		if s.Parked > 0 {
			return nil, fmt.Errorf("projection %s parked %d events", s.Name, s.Parked)
		}
	}
	return result{
		"rebuild_events":       p.events,
		"rebuild_seconds":      round(elapsed.Seconds(), 2),
		"rebuild_events_per_s": round(float64(p.events)/elapsed.Seconds(), 0),
	}, nil
}

// benchProjectionLag appends domain events at 2,000 events/s and measures,
// per append, the time from its commit to every projection having applied
// it (what a client reading its own write with consistentWith waits).
func benchProjectionLag(ctx context.Context, e *env) (result, error) {
	const rate = 2000
	p, closeDB, err := openProjections(ctx, e)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	r, err := newBenchRunner(p, e)
	if err != nil {
		return nil, err
	}
	stop := runRunner(r)
	defer stop()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	err = r.WaitFor(wctx, p.last)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("projections did not catch up before the lag benchmark: %w", err)
	}

	// Let each build make its indexes (after catching up), and vacuum and
	// analyze the freshly filled tables as autovacuum soon would, so that a
	// system in its steady state is measured, not autovacuum's first pass.
	if err := waitIndexed(ctx, r); err != nil {
		return nil, err
	}
	if err := vacuum(ctx, e); err != nil {
		return nil, err
	}

	// Commands of the generator carry one to three events; pace commands
	// so that events arrive at the rate.
	items := projGen.Take(rate * int(2*e.cfg.duration/time.Second+1))
	var perItem float64
	for _, it := range items {
		perItem += float64(len(it.Events))
	}
	perItem /= float64(len(items))

	checkpointsBefore, err := checkpoints(ctx, e)
	if err != nil {
		return nil, err
	}
	var (
		mu      sync.Mutex
		lat     []float64
		sent    atomic.Int64
		waiters sync.WaitGroup
	)
	errs := make(chan error, 1)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	elapsed := openLoop(ctx, rate/perItem, 2*e.cfg.duration, func(i int64) bool {
		if int(i) >= len(items) {
			return false
		}
		it := items[i]
		res, err := p.store.Append(ctx, eventstore.AppendRequest{Metadata: it.Metadata, Streams: []eventstore.StreamAppend{{
			StreamID: it.StreamID, StreamType: it.StreamType, Expected: eventstore.AnyVersion, Events: it.Events}}})
		if err != nil {
			fail(err)
			return false
		}
		committed := time.Now()
		sent.Add(int64(len(it.Events)))
		waiters.Add(1)
		go func() {
			defer waiters.Done()
			c, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := r.WaitFor(c, res.Cursor); err != nil {
				fail(err)
				return
			}
			d := time.Since(committed).Seconds() * 1000
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}()
		return true
	})
	waiters.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	if len(lat) == 0 {
		return nil, errors.New("no appends were measured")
	}
	checkpointsAfter, err := checkpoints(ctx, e)
	if err != nil {
		return nil, err
	}
	slices.Sort(lat)
	pct := func(q float64) float64 { return round(lat[int(q*float64(len(lat)-1))], 2) }
	// The slowest hundredth is a few hundred appends, so one stall of the
	// database's (a checkpoint writing what the runs before left, say)
	// could move the p99 on its own: the spread and the checkpoints say
	// whether one did.
	e.log.Info().Float64("p50_ms", pct(0.5)).Float64("p90_ms", pct(0.9)).Float64("p99_ms", pct(0.99)).
		Float64("max_ms", lat[len(lat)-1]).Int64("checkpoints_begun", checkpointsAfter-checkpointsBefore).
		Msg("projection lag")
	return result{
		"projection_lag_p50_ms":     pct(0.50),
		"projection_lag_p99_ms":     pct(0.99),
		"projection_lag_rate_per_s": round(float64(sent.Load())/elapsed.Seconds(), 0),
	}, nil
}

// checkpoints is how many checkpoints the cluster has begun, timed and
// requested.
func checkpoints(ctx context.Context, e *env) (int64, error) {
	var n int64
	err := e.admin.QueryRow(ctx, `SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read the cluster's checkpoints: %w", err)
	}
	return n, nil
}

// vacuum vacuums and analyzes the projection benchmarks' database as its
// owner. It does not force a checkpoint: the first change to each page after
// one writes the whole page to the WAL, and a checkpoint just before the
// measurement would load its first second with those writes.
func vacuum(ctx context.Context, e *env) error {
	cc := e.admin.Config().ConnConfig
	owner, err := database.Open(ctx, fmt.Sprintf("host=%s port=%d user=%s dbname=bench_projections sslmode=disable", cc.Host, cc.Port, cc.User),
		database.Options{MaxConns: 1})
	if err != nil {
		return err
	}
	defer owner.Close()
	_, err = owner.Exec(ctx, `VACUUM ANALYZE`)
	return err
}

// waitIndexed waits until every live build has its indexes.
func waitIndexed(ctx context.Context, r *projections.Runner) error {
	for range 600 {
		sts, err := r.Status(ctx)
		if err != nil {
			return err
		}
		done := true
		for _, s := range sts {
			done = done && s.Indexed && s.State == projections.StateLive
		}
		if done {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("projections did not finish indexing within a minute")
}

// benchExport writes the whole log as an auditor's NDJSON export to a file,
// then verifies the file offline.
func benchExport(ctx context.Context, e *env) (result, error) {
	p, closeDB, err := openProjections(ctx, e)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	f, err := os.CreateTemp("", "cairn-export-*.ndjson")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	start := time.Now()
	sum, err := audit.Export(ctx, p.store, f, audit.ExportOptions{})
	if err != nil {
		return nil, err
	}
	exported := time.Since(start)
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	start = time.Now()
	rep, err := audit.VerifyFile(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, err
	}
	if !rep.OK() {
		return nil, fmt.Errorf("the export does not verify: %v", rep.First())
	}
	verified := time.Since(start)
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return result{
		"export_events":       sum.Events,
		"export_mib":          round(float64(st.Size())/(1<<20), 1),
		"export_events_per_s": round(float64(sum.Events)/exported.Seconds(), 0),
		"verify_events_per_s": round(float64(rep.Events)/verified.Seconds(), 0),
	}, nil
}
