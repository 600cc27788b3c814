package projections_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"cairn/projections"
	"cairn/projections/eventgen"
	"cairn/projections/models"
)

// writeUntil appends generated events until ctx ends.
func writeUntil(ctx context.Context, t *testing.T, e env, seed uint64) <-chan error {
	done := make(chan error, 1)
	go func() {
		g := eventgen.New(eventgen.Options{Seed: seed, Prefix: fmt.Sprintf("w%d", seed), Nodes: 10})
		for ctx.Err() == nil {
			if _, err := eventgen.Append(ctx, e.store, g.Next()); err != nil && ctx.Err() == nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

// hammer reads the stable views, and the analytics views over them, until
// ctx ends, counting reads and failures.
func hammer(ctx context.Context, e env, readers int) (reads *atomic.Int64, failures chan error, wait func()) {
	reads = &atomic.Int64{}
	failures = make(chan error, 100)
	queries := []string{
		`SELECT count(*) FROM read.jobs WHERE state = 'succeeded'`,
		`SELECT count(*) FROM read.nodes n LEFT JOIN read.node_status_periods p ON p.node_id = n.id`,
		`SELECT count(*) FROM read.services s JOIN read.resources r ON r.service_id = s.id`,
		`SELECT count(*) FROM analytics.job_outcomes_daily`,
		`SELECT count(*) FROM analytics.node_availability_daily`,
		`SELECT id, hostname, labels FROM read.nodes ORDER BY id LIMIT 20`,
	}
	var wg sync.WaitGroup
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := i; ctx.Err() == nil; n++ {
				rows, err := e.app.Query(ctx, queries[n%len(queries)])
				if err == nil {
					for rows.Next() {
					}
					rows.Close()
					err = rows.Err()
				}
				if err != nil && ctx.Err() == nil {
					select {
					case failures <- fmt.Errorf("%s: %w", queries[n%len(queries)], err):
					default:
					}
					continue
				}
				reads.Add(1)
			}
		}()
	}
	return reads, failures, wg.Wait
}

// waitLive waits until a build numbered build or later is live and none
// is building.
func waitLive(t *testing.T, r *projections.Runner, name string, build int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if s := statusOf(t, r, name, projections.StateLive); s != nil && s.Build >= build && statusOf(t, r, name, projections.StateBuilding) == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("build %d of %s did not become live", build, name)
}

func waitDropped(t *testing.T, e env, table string) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		if count(t, e.app, `SELECT count(*) FROM pg_class WHERE oid = to_regclass($1)`, table) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("table %s of the retired build was not dropped", table)
}

// readsReach waits until the readers have made n reads, and says whether
// they did within a deadline generous enough for a loaded machine.
func readsReach(reads *atomic.Int64, n int64) bool {
	deadline := time.Now().Add(30 * time.Second)
	for reads.Load() < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// A rebuild while events keep coming switches atomically: readers hammering
// the views never fail, and the new tables end equal to a rebuild from
// scratch; the old ones are dropped.
func TestRebuildWhileWritingKeepsServing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	generate(t, e, 5, 2000)
	r := start(t, e, fastOptions())
	waitAll(t, e, r.Runner)

	ctx, stop := context.WithCancel(testCtx(t))
	defer stop()
	writing := writeUntil(ctx, t, e, 6)
	reads, failures, readersDone := hammer(ctx, e, 4)
	// The readers are at work before the rebuild starts; they go on until
	// stop.
	if !readsReach(reads, 1) {
		t.Fatal("the readers made no read before the rebuild")
	}

	for _, name := range []string{"jobs", "nodes", "services"} {
		if err := r.Rebuild(ctx, name); err != nil {
			t.Fatal(err)
		}
		if s := statusOf(t, r.Runner, name, projections.StateBuilding); s == nil || s.Build != 2 {
			t.Fatalf("%s: no build 2 building after Rebuild: %+v", name, s)
		}
	}
	for _, name := range []string{"jobs", "nodes", "services"} {
		waitLive(t, r.Runner, name, 2)
	}
	// Reads after the switch too.
	atSwitch := reads.Load()
	readAfter := readsReach(reads, atSwitch+20)
	stop()
	if err := <-writing; err != nil {
		t.Fatal(err)
	}
	readersDone()
	close(failures)
	for err := range failures {
		t.Errorf("a read failed during the rebuild: %v", err)
	}
	if !readAfter {
		t.Errorf("only %d reads succeeded after the switch", reads.Load()-atSwitch)
	}

	waitAll(t, e, r.Runner)
	for _, table := range []string{"read.jobs_v1_b1", "read.nodes_v1_b1", "read.node_status_periods_v1_b1", "read.services_v1_b1", "read.resources_v1_b1"} {
		waitDropped(t, e, table)
	}
	sameAsReplay(t, e)
}

// bumped is a projection whose code changed: a new version, and a column
// whose type changed so the stable view cannot simply be replaced.
type bumped struct{ projections.Projection }

func (bumped) Version() int { return 2 }
func (b bumped) Setup(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	if err := b.Projection.Setup(ctx, tx, t); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `ALTER TABLE `+t.Table("nodes")+` ALTER COLUMN hostname TYPE varchar(200)`)
	return err
}

// A new version of a projection is built from position zero while the old
// tables keep serving, then the views (and the analytics views over them)
// switch to it.
func TestNewVersionRebuildsAndSwitches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	generate(t, e, 7, 1500)
	first := start(t, e, fastOptions())
	waitAll(t, e, first.Runner)
	first.stop(t)

	ps := models.All()
	ps[0] = bumped{models.Nodes{}}
	r := start(t, e, fastOptions(), ps...)
	// The old build serves as soon as the runner is up.
	if n := count(t, e.app, `SELECT count(*) FROM read.nodes`); n == 0 {
		t.Fatal("read.nodes is empty while the new version builds")
	}
	generate(t, e, 8, 300)
	waitLive(t, r.Runner, "nodes", 2)
	waitAll(t, e, r.Runner)
	waitDropped(t, e, "read.nodes_v1_b1")
	var def string
	if err := e.app.QueryRow(testCtx(t), `SELECT pg_get_viewdef('read.nodes'::regclass)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if want := "nodes_v2_b2"; !strings.Contains(def, want) {
		t.Fatalf("read.nodes reads %q, want %s", def, want)
	}
	// The analytics view over the nodes was made again after the switch.
	if n := count(t, e.app, `SELECT count(*) FROM analytics.nodes`); n == 0 {
		t.Fatal("analytics.nodes is empty or missing after the switch")
	}
	sameAsReplay(t, e, "nodes", "node_status_periods", "jobs")
}

// RequestRebuild from another process (the CLI) is picked up by the
// running server's runner.
func TestRebuildRequestedByAnotherProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	generate(t, e, 9, 300)
	r := start(t, e, fastOptions())
	waitAll(t, e, r.Runner)
	if err := projections.RequestRebuild(testCtx(t), e.app, "catalog", models.Names()); err != nil {
		t.Fatal(err)
	}
	waitLive(t, r.Runner, "catalog", 2)
	waitDropped(t, e, "read.templates_v1_b1")

	// Before any runner built it, there is nothing to rebuild.
	fresh := newEnv(t)
	if err := projections.RequestRebuild(testCtx(t), fresh.app, "catalog", models.Names()); !errors.Is(err, projections.ErrNoLiveBuild) {
		t.Fatalf("got %v", err)
	}
}

// slow applies slowly, so a rebuild stays under way.
type slow struct{ projections.Projection }

func (s slow) Apply(ctx context.Context, tx pgx.Tx, t projections.Target, evs []projections.Event) error {
	time.Sleep(30 * time.Millisecond)
	return s.Projection.Apply(ctx, tx, t, evs)
}

// Asking for a rebuild while one is under way does not start another.
func TestRebuildUnderWayIsNotRestarted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	generate(t, e, 10, 1000)
	o := fastOptions()
	o.ReadBatch, o.MaxBatch = 50, 50
	r := start(t, e, o, slow{models.EventVolume{}})
	ctx := testCtx(t)
	if err := r.Rebuild(ctx, "event_volume"); err != nil {
		t.Fatal(err)
	}
	if err := r.Rebuild(ctx, "event_volume"); err != nil {
		t.Fatal(err)
	}
	s := statusOf(t, r.Runner, "event_volume", projections.StateBuilding)
	if s == nil || s.Build != 2 {
		t.Fatalf("building: %+v, want build 2", s)
	}
	if s.RebuildRequested {
		t.Fatal("the second request is still pending: it would restart the rebuild later")
	}
	waitLive(t, r.Runner, "event_volume", 2)
	if s := statusOf(t, r.Runner, "event_volume", projections.StateLive); s.Build != 2 {
		t.Fatalf("live build %d, want 2", s.Build)
	}
}
