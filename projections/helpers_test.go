package projections_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/internal/testdb"
	"cairn/projections"
	"cairn/projections/eventgen"
	"cairn/projections/models"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type env struct {
	db    testdb.DB
	app   *pgxpool.Pool
	admin *pgxpool.Pool
	store *eventstore.Store
}

func newEnv(t *testing.T) env {
	t.Helper()
	db := testdb.New(t)
	app := db.AppPool(t)
	s := eventstore.New(app, events.Registry(), eventstore.Options{PollInterval: 100 * time.Millisecond})
	t.Cleanup(s.Close)
	return env{db: db, app: app, admin: db.AdminPool(t), store: s}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func fastOptions() projections.Options {
	return projections.Options{
		Log:     zerolog.Nop(),
		Backoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxAttempts: 3,
		PollInterval: 50 * time.Millisecond, ControlInterval: 50 * time.Millisecond, SaveInterval: 50 * time.Millisecond,
		Views: models.AnalyticsViews(),
	}
}

// running is a runner started in the background.
type running struct {
	*projections.Runner
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned, with err
	err    error
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("runner: %v", r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("runner did not stop")
	}
}

func start(t *testing.T, e env, opts projections.Options, ps ...projections.Projection) *running {
	t.Helper()
	return startWith(t, projections.NewRunner(e.store, e.app, opts), ps...)
}

func startWith(t *testing.T, r *projections.Runner, ps ...projections.Projection) *running {
	t.Helper()
	return startIn(t, context.Background(), r, ps...)
}

// startIn runs r until parent ends (or the test does).
func startIn(t *testing.T, parent context.Context, r *projections.Runner, ps ...projections.Projection) *running {
	t.Helper()
	if len(ps) == 0 {
		ps = models.All()
	}
	if err := r.Register(ps...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(parent)
	run := &running{Runner: r, cancel: cancel, done: make(chan struct{})}
	go func() {
		run.err = r.Run(ctx)
		close(run.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-run.done:
		case <-time.After(20 * time.Second):
		}
	})
	select {
	case <-r.Ready():
	case <-run.done:
		if parent.Err() == nil {
			t.Fatalf("runner stopped during setup: %v", run.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runner not ready")
	}
	return run
}

func generate(t *testing.T, e env, seed uint64, n int) eventstore.Cursor {
	t.Helper()
	items := eventgen.New(eventgen.Options{Seed: seed, Prefix: fmt.Sprintf("g%d", seed), Nodes: 20}).Take(n)
	c, err := eventgen.Append(testCtx(t), e.store, items)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lastCursor is the cursor of the last event committed so far. Head may
// still be behind it while an older transaction runs anywhere in the
// cluster: gap-safe readers do not see past such a transaction yet.
func lastCursor(t *testing.T, e env) eventstore.Cursor {
	t.Helper()
	c, err := e.store.Last(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitAll waits until every projection applied every event committed so far.
func waitAll(t *testing.T, e env, r *projections.Runner) eventstore.Cursor {
	t.Helper()
	c := lastCursor(t, e)
	if err := r.WaitFor(testCtx(t), c); err != nil {
		t.Fatalf("wait for %s: %v", c, err)
	}
	return c
}

// readTables are every stable view with the columns that identify a row's
// content, for comparing two builds.
var readTables = map[string]string{
	"nodes":               "id",
	"node_status_periods": "node_id, started_at, status",
	"jobs":                "id",
	"templates":           "id",
	"services":            "id",
	"resources":           "id",
	"tenants":             "id",
	"users":               "id",
	"api_tokens":          "id",
	"locations":           "id",
	"event_volume":        "day, stream_type, event_type",
}

// sameRows fails unless two relations hold the same multiset of rows.
func sameRows(t *testing.T, db *pgxpool.Pool, a, b string) {
	t.Helper()
	var diff int64
	// Rows compare as text: json columns have no equality operator.
	err := db.QueryRow(testCtx(t), fmt.Sprintf(`SELECT count(*) FROM (
		(SELECT x::text FROM %[1]s x EXCEPT ALL SELECT y::text FROM %[2]s y)
		UNION ALL (SELECT y::text FROM %[2]s y EXCEPT ALL SELECT x::text FROM %[1]s x)) d`, a, b)).Scan(&diff)
	if err != nil {
		t.Fatalf("compare %s with %s: %v", a, b, err)
	}
	if diff != 0 {
		rows, _ := db.Query(testCtx(t), fmt.Sprintf(`
			(SELECT 'only in first', x::text FROM %[1]s x EXCEPT ALL SELECT 'only in first', y::text FROM %[2]s y)
			UNION ALL (SELECT 'only in second', y::text FROM %[2]s y EXCEPT ALL SELECT 'only in second', x::text FROM %[1]s x)
			ORDER BY 2 LIMIT 6`, a, b))
		var sample []string
		for rows.Next() {
			var side, row string
			_ = rows.Scan(&side, &row)
			sample = append(sample, side+": "+row)
		}
		rows.Close()
		t.Errorf("%s and %s differ in %d rows, e.g.\n%s", a, b, diff, strings.Join(sample, "\n"))
	}
}

// replayed rebuilds every projection from scratch into a scratch schema.
func replayed(t *testing.T, e env) string {
	t.Helper()
	// Up to the last event committed: the visible head may lag behind it
	// while a transaction runs, and the read models hold every event.
	res, err := projections.Replay(testCtx(t), e.store, e.app, projections.ReplayOptions{Projections: models.All(), Views: models.AnalyticsViews(),
		Until: lastCursor(t, e)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) > 0 {
		t.Fatalf("replay failed on %d events: %+v", len(res.Failed), res.Failed[0])
	}
	return res.Schema
}

// sameAsReplay compares every read view with a rebuild from scratch.
func sameAsReplay(t *testing.T, e env, only ...string) {
	t.Helper()
	schema := replayed(t, e)
	for table := range readTables {
		if len(only) > 0 && !slices.Contains(only, table) {
			continue
		}
		sameRows(t, e.app, pgx.Identifier{"read", table}.Sanitize(), pgx.Identifier{schema, table}.Sanitize())
	}
}

func count(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(testCtx(t), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", strings.TrimSpace(sql), err)
	}
	return n
}

// logSize counts the events in the log.
func logSize(t *testing.T, e env) int64 {
	t.Helper()
	n, err := e.store.Count(testCtx(t), eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func statusOf(t *testing.T, r *projections.Runner, name, state string) *projections.Status {
	t.Helper()
	sts, err := r.Status(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range sts {
		if sts[i].Name == name && sts[i].State == state {
			return &sts[i]
		}
	}
	return nil
}
