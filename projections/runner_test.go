package projections_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/domain/service"
	"cairn/eventstore"
	"cairn/projections"
	"cairn/projections/models"
)

// The read models agree with the aggregates folded from their streams, and
// with a rebuild from scratch.
func TestReadModelsMatchTheAggregates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	generate(t, e, 1, 1500)
	r := start(t, e, fastOptions())
	generate(t, e, 2, 500) // some while live
	waitAll(t, e, r.Runner)

	ctx := testCtx(t)
	total := logSize(t, e)
	if got := count(t, e.app, `SELECT coalesce(sum(events), 0) FROM read.event_volume`); got != total {
		t.Errorf("event volume counts %d events, the log holds %d", got, total)
	}
	checkAggregates(t, e, ctx)
	sameAsReplay(t, e)
}

func checkAggregates(t *testing.T, e env, ctx context.Context) {
	t.Helper()
	ids := func(sql string) []string {
		rows, err := e.app.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		return out
	}
	for _, id := range ids(`SELECT id FROM read.nodes`) {
		n, _, err := commands.Load[node.Node](ctx, e.store, domain.NodeStream, id)
		if err != nil {
			t.Fatal(err)
		}
		var status string
		var cordoned bool
		if err := e.app.QueryRow(ctx, `SELECT status, cordoned FROM read.nodes WHERE id = $1`, id).Scan(&status, &cordoned); err != nil {
			t.Fatal(err)
		}
		if status != string(n.Status) || cordoned != n.Cordoned {
			t.Errorf("node %s: read model %s/%v, aggregate %s/%v", id, status, cordoned, n.Status, n.Cordoned)
		}
	}
	for _, id := range ids(`SELECT id FROM read.jobs`) {
		j, _, err := commands.Load[job.Job](ctx, e.store, domain.JobStream, id)
		if err != nil {
			t.Fatal(err)
		}
		var state string
		var attempt int
		if err := e.app.QueryRow(ctx, `SELECT state, attempt FROM read.jobs WHERE id = $1`, id).Scan(&state, &attempt); err != nil {
			t.Fatal(err)
		}
		if state != string(j.Status) || attempt != j.Attempt {
			t.Errorf("job %s: read model %s/%d, aggregate %s/%d", id, state, attempt, j.Status, j.Attempt)
		}
	}
	for _, id := range ids(`SELECT id FROM read.services`) {
		s, _, err := commands.Load[service.Service](ctx, e.store, domain.ServiceStream, id)
		if err != nil {
			t.Fatal(err)
		}
		var state, tenant string
		if err := e.app.QueryRow(ctx, `SELECT state, tenant_id FROM read.services WHERE id = $1`, id).Scan(&state, &tenant); err != nil {
			t.Fatal(err)
		}
		if state != string(s.Status) || tenant != s.TenantID {
			t.Errorf("service %s: read model %s/%s, aggregate %s/%s", id, state, tenant, s.Status, s.TenantID)
		}
	}
}

// A runner stopped right after a commit (before it could note its
// progress anywhere but the database) and started again, many times,
// applies every event exactly once.
func TestKilledBetweenBatchesAppliesEachEventOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	generate(t, e, 3, 3000)
	opts := fastOptions()
	opts.ReadBatch, opts.MaxBatch = 97, 150
	for round := 0; ; round++ {
		if round > 200 {
			t.Fatal("never caught up")
		}
		r := projections.NewRunner(e.store, e.app, opts)
		var commits atomic.Int64
		crashed, crash := context.WithCancel(context.Background())
		projections.SetAfterCommit(r, func(string, eventstore.Cursor) {
			// Each round gets a few batches further.
			if commits.Add(1) >= 4 {
				crash() // nothing after the commit runs
			}
		})
		run := startIn(t, crashed, r)
		head := lastCursor(t, e)
		// Wait until it has caught up, or crashed.
		wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
		stopped := make(chan struct{})
		go func() {
			select {
			case <-run.done:
			case <-wctx.Done():
			}
			close(stopped)
			wcancel()
		}()
		caughtUp := r.WaitFor(wctx, head) == nil
		wcancel()
		<-stopped
		run.stop(t)
		crash()
		if caughtUp {
			if round < 2 {
				t.Fatalf("caught up after %d crashes: the test did not crash the runner mid-way", round)
			}
			break
		}
	}
	total := logSize(t, e)
	if got := count(t, e.app, `SELECT sum(events) FROM read.event_volume`); got != total {
		t.Fatalf("event volume counts %d events after restarts, the log holds %d: an event was applied twice or lost", got, total)
	}
	sameAsReplay(t, e)
}

func TestWaitForRefusesUnknownCursorsAndHonoursTheDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	head := generate(t, e, 4, 50)
	r := start(t, e, fastOptions())
	ctx := testCtx(t)
	if err := r.WaitFor(ctx, eventstore.Start); err != nil {
		t.Fatalf("start of log: %v", err)
	}
	if err := r.WaitFor(ctx, head); err != nil {
		t.Fatalf("head: %v", err)
	}
	var unknown *projections.UnknownCursorError
	if err := r.WaitFor(ctx, eventstore.Cursor{TxID: head.TxID + 1000, Position: head.Position + 1000}); !errors.As(err, &unknown) {
		t.Fatalf("unknown cursor: got %v", err)
	}
	// A cursor that exists but a projection that cannot reach it (it was
	// never registered to run): the deadline ends the wait.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	r2 := projections.NewRunner(e.store, e.app, fastOptions())
	if err := r2.WaitFor(short, head); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("runner not running: got %v", err)
	}
}

func TestRebuildOfUnknownProjection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := start(t, e, fastOptions())
	var unknown *projections.UnknownProjectionError
	if err := r.Rebuild(testCtx(t), "nodez"); !errors.As(err, &unknown) || len(unknown.Known) != len(models.All()) {
		t.Fatalf("got %v", err)
	}
	if _, err := r.Parked(testCtx(t), "nodez", 10); !errors.As(err, &unknown) {
		t.Fatalf("parked: got %v", err)
	}
	if err := projections.RequestRebuild(testCtx(t), e.app, "nodez", r.Names()); !errors.As(err, &unknown) {
		t.Fatalf("request: got %v", err)
	}
}

// The generation, which keys the API's answer cache, moves when a read
// model may have changed, here or in another process writing the same read
// models, and stands still while the workers only poll: an idle runner that
// moved it on every poll emptied the cache every second.
func TestGenerationMovesOnlyWithTheReadModels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	generate(t, e, 5, 50)
	opts := fastOptions()
	a := start(t, e, opts)
	b := start(t, e, opts) // another replica's runner on the same read models
	waitAll(t, e, a.Runner)
	waitAll(t, e, b.Runner)
	// Each runner meets the other's last saves a poll or so after both
	// reached the head (a checkpoint moved by another process may have
	// changed a read model): wait until both stood still for three polls,
	// then watch ten more. A generation that moved on every poll never
	// settles.
	settled := func() (uint64, uint64) {
		for deadline := time.Now().Add(10 * time.Second); ; {
			ga, gb := a.Generation(), b.Generation()
			time.Sleep(3 * opts.PollInterval)
			if a.Generation() == ga && b.Generation() == gb {
				return ga, gb
			}
			if time.Now().After(deadline) {
				t.Fatalf("the generations still moved 10 s after both runners reached the head (now %d and %d)", a.Generation(), b.Generation())
			}
		}
	}
	idleA, idleB := settled()
	time.Sleep(10 * opts.PollInterval)
	if g := a.Generation(); g != idleA {
		t.Errorf("the generation moved from %d to %d over ten polls with nothing to apply", idleA, g)
	}
	if g := b.Generation(); g != idleB {
		t.Errorf("the other runner's generation moved from %d to %d over ten polls with nothing to apply", idleB, g)
	}
	generate(t, e, 6, 5)
	waitAll(t, e, a.Runner)
	waitAll(t, e, b.Runner)
	if g := a.Generation(); g == idleA {
		t.Errorf("the generation stayed at %d after new events were applied", g)
	}
	if g := b.Generation(); g == idleB {
		t.Errorf("the other runner's generation stayed at %d after new events were applied by either", g)
	}
}
