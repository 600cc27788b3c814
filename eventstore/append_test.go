package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"cairn/domain"
	"cairn/eventstore"
)

func TestExpectedVersions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	if _, err := e.store.Append(c, one("w-1", eventstore.NoStream, widgetCounted{N: 1}, widgetCounted{N: 2})); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		expected eventstore.ExpectedVersion
		wantErr  bool
	}{
		{"no stream on existing stream", eventstore.NoStream, true},
		{"exact wrong version", eventstore.Exactly(1), true},
		{"exact future version", eventstore.Exactly(9), true},
		{"exact right version", eventstore.Exactly(2), false},
		{"any version", eventstore.AnyVersion, false},
	}
	for _, tt := range tests {
		before, _ := e.store.StreamVersion(c, "w-1")
		res, err := e.store.Append(c, one("w-1", tt.expected, widgetCounted{N: 3}))
		after, _ := e.store.StreamVersion(c, "w-1")
		if tt.wantErr {
			var vc *eventstore.VersionConflictError
			if !errors.As(err, &vc) || !errors.Is(err, domain.ErrConflict) {
				t.Fatalf("%s: want a version conflict, got %v", tt.name, err)
			}
			if vc.Actual != before || vc.StreamID != "w-1" {
				t.Fatalf("%s: conflict reports %+v, stream is at %d", tt.name, vc, before)
			}
			if after != before {
				t.Fatalf("%s: a refused append changed the stream from %d to %d", tt.name, before, after)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if after != before+1 || res.Streams[0].Version != after || res.Cursor.IsZero() {
			t.Fatalf("%s: result %+v, version %d -> %d", tt.name, res, before, after)
		}
	}
}

func TestMultiStreamAppendIsAtomic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	if _, err := e.store.Append(c, one("b", eventstore.NoStream, widgetCounted{N: 1})); err != nil {
		t.Fatal(err)
	}
	req := eventstore.AppendRequest{Streams: []eventstore.StreamAppend{
		{StreamID: "a", StreamType: "widget", Expected: eventstore.NoStream, Events: []domain.Event{widgetCounted{N: 1}}},
		{StreamID: "b", StreamType: "widget", Expected: eventstore.NoStream, Events: []domain.Event{widgetCounted{N: 2}}},
	}}
	if _, err := e.store.Append(c, req); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("want conflict on b, got %v", err)
	}
	if v, _ := e.store.StreamVersion(c, "a"); v != 0 {
		t.Fatalf("stream a got %d events although the command failed", v)
	}
	req.Streams[1].Expected = eventstore.Exactly(1)
	res, err := e.store.Append(c, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Streams) != 2 || res.Streams[0].Version != 1 || res.Streams[1].Version != 2 {
		t.Fatalf("unexpected result %+v", res)
	}
}

func TestIdempotentCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	req := one("w-idem", eventstore.AnyVersion, widgetCounted{N: 1}, widgetCounted{N: 2})
	req.CommandID = "cmd-1"
	req.Fingerprint = []byte("input-A")
	first, err := e.store.Append(c, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.store.Append(c, req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate || again.Cursor != first.Cursor || fmt.Sprint(again.Streams) != fmt.Sprint(first.Streams) {
		t.Fatalf("retry returned %+v, first was %+v", again, first)
	}
	if v, _ := e.store.StreamVersion(c, "w-idem"); v != 2 {
		t.Fatalf("retry appended: stream at %d", v)
	}
	req.Fingerprint = []byte("input-B")
	_, err = e.store.Append(c, req)
	var reused *eventstore.CommandReusedError
	if !errors.As(err, &reused) || reused.CommandID != "cmd-1" {
		t.Fatalf("want CommandReusedError, got %v", err)
	}
	// The pre-check command handlers use.
	res, found, err := e.store.CommandResult(c, "cmd-1", []byte("input-A"))
	if err != nil || !found || res.Cursor != first.Cursor {
		t.Fatalf("CommandResult = %+v %v %v", res, found, err)
	}
	if _, found, _ := e.store.CommandResult(c, "cmd-unknown", nil); found {
		t.Fatal("unknown command reported as found")
	}
}

func TestConcurrentRetriesOfOneCommandAppendOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	var wg sync.WaitGroup
	results := make([]eventstore.AppendResult, 20)
	errs := make([]error, 20)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := one("w-race", eventstore.AnyVersion, widgetCounted{N: 7})
			req.CommandID, req.Fingerprint = "cmd-race", []byte("same")
			results[i], errs[i] = e.store.Append(c, req)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("retry %d: %v", i, err)
		}
		if results[i].Cursor != results[0].Cursor {
			t.Fatalf("retries disagree: %+v vs %+v", results[i], results[0])
		}
	}
	if v, _ := e.store.StreamVersion(c, "w-race"); v != 1 {
		t.Fatalf("20 retries of one command appended %d events", v)
	}
}

type unregistered struct{}

func (unregistered) EventType() string { return "test.nobody_registered_me" }

func TestBadAppends(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	_, err := e.store.Append(c, one("w-bad", eventstore.AnyVersion, widgetCounted{N: 1}, unregistered{}))
	var unknown *domain.UnknownEventTypeError
	if !errors.As(err, &unknown) || unknown.EventType != "test.nobody_registered_me" {
		t.Fatalf("want UnknownEventTypeError, got %v", err)
	}
	if _, err := e.store.Append(c, eventstore.AppendRequest{}); !errors.Is(err, eventstore.ErrEmptyAppend) {
		t.Fatalf("want ErrEmptyAppend, got %v", err)
	}
	dup := eventstore.AppendRequest{Streams: []eventstore.StreamAppend{
		{StreamID: "x", StreamType: "widget", Expected: eventstore.AnyVersion},
		{StreamID: "x", StreamType: "widget", Expected: eventstore.AnyVersion},
	}}
	if _, err := e.store.Append(c, dup); err == nil {
		t.Fatal("a stream twice in one request was accepted")
	}
	if _, err := e.store.ReadStream(c, "w-bad", eventstore.ReadStreamOptions{}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a refused append left events: %v", err)
	}
}

func TestEventsAreImmutable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	if _, err := e.store.Append(c, one("w-imm", eventstore.AnyVersion, widgetCounted{N: 1})); err != nil {
		t.Fatal(err)
	}
	app := e.app
	admin := e.db.AdminPool(t)
	for _, tc := range []struct {
		who string
		sql string
	}{
		{"app", `UPDATE events SET payload = '{"n":2}'`},
		{"app", `DELETE FROM events`},
		{"app", `TRUNCATE events`},
		{"owner", `UPDATE events SET payload = '{"n":2}'`},
		{"owner", `DELETE FROM events`},
		{"owner", `TRUNCATE events`},
	} {
		pool := app
		if tc.who == "owner" {
			pool = admin
		}
		if _, err := pool.Exec(c, tc.sql); err == nil {
			t.Errorf("%s could run %q", tc.who, tc.sql)
		}
	}
	evs, err := e.store.ReadStream(c, "w-imm", eventstore.ReadStreamOptions{})
	if err != nil || len(evs) != 1 || string(evs[0].Payload) != `{"n":1}` {
		t.Fatalf("event changed: %v %v", evs, err)
	}
}

// A second process (here: a second store with its own head cache) must get
// the same answers: its cache knows nothing of the first one's appends.
func TestAnotherProcessSeesConflicts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	other := eventstore.New(e.app, testRegistry(), eventstore.Options{})
	t.Cleanup(other.Close)
	if _, err := e.store.Append(c, one("w-two", eventstore.NoStream, widgetCounted{N: 1})); err != nil {
		t.Fatal(err)
	}
	var vc *eventstore.VersionConflictError
	if _, err := other.Append(c, one("w-two", eventstore.NoStream, widgetCounted{N: 2})); !errors.As(err, &vc) || vc.Actual != 1 {
		t.Fatalf("creation of an existing stream from a cold cache: want conflict at 1, got %v", err)
	}
	// Warm caches that fall behind are corrected by the unique index.
	if _, err := other.Append(c, one("w-two", eventstore.Exactly(1), widgetCounted{N: 2})); err != nil {
		t.Fatal(err)
	}
	res, err := e.store.Append(c, one("w-two", eventstore.AnyVersion, widgetCounted{N: 3}))
	if err != nil || res.Streams[0].Version != 3 {
		t.Fatalf("stale cache: %+v %v", res, err)
	}
	if _, err := e.store.Append(c, one("w-two", eventstore.Exactly(2), widgetCounted{N: 4})); !errors.As(err, &vc) || vc.Actual != 3 {
		t.Fatalf("stale expected version: want conflict at 3, got %v", err)
	}
	// A caller that read a version this store's cache has not seen (the
	// other process appended it) is right, and its append lands: the store
	// reads the head again instead of refusing it with its stale cache.
	if _, err := other.Append(c, one("w-two", eventstore.Exactly(3), widgetCounted{N: 4})); err != nil {
		t.Fatal(err)
	}
	res, err = e.store.Append(c, one("w-two", eventstore.Exactly(4), widgetCounted{N: 5}))
	if err != nil || res.Streams[0].Version != 5 {
		t.Fatalf("an expected version ahead of the cache: %+v %v", res, err)
	}
	// One that expects a version the stream never reached is still refused.
	if _, err := e.store.Append(c, one("w-two", eventstore.Exactly(9), widgetCounted{N: 6})); !errors.As(err, &vc) || vc.Actual != 5 {
		t.Fatalf("an expected version beyond the stream: want conflict at 5, got %v", err)
	}
	if rep, err := e.store.Verify(c, "w-two"); err != nil || !rep.OK() || rep.Events != 5 {
		t.Fatalf("chain after two writers: %+v %v", rep, err)
	}
}

// An append whose stream this store has cached behind (another process
// appended since) lands even when it shares a batch with others that
// commit first: the batch must not put the stale head back in the cache.
func TestStaleHeadInABusyBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{AppendWorkers: 1})
	c := ctx(t)
	other := eventstore.New(e.app, testRegistry(), eventstore.Options{})
	t.Cleanup(other.Close)
	for round := range 10 {
		stream := fmt.Sprintf("w-busy-%d", round)
		if _, err := e.store.Append(c, one(stream, eventstore.NoStream, widgetCounted{N: 1})); err != nil {
			t.Fatal(err)
		}
		// e.store caches version 1; the other process moves it to 2.
		if _, err := other.Append(c, one(stream, eventstore.Exactly(1), widgetCounted{N: 2})); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.store.Append(c, one(fmt.Sprintf("%s-neighbour-%d", stream, i), eventstore.NoStream, widgetCounted{N: i}))
				errs <- err
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.store.Append(c, one(stream, eventstore.Exactly(2), widgetCounted{N: 3}))
			if err != nil {
				err = fmt.Errorf("round %d: the append that read version 2: %w", round, err)
			}
			errs <- err
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// lockedFence holds its append until the test lets go of an advisory lock.
type lockedFence struct{ key int64 }

func (f lockedFence) Key() string { return fmt.Sprint("locked-", f.key) }
func (f lockedFence) Check(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, f.key)
	return err
}

// A few appends that arrive while a batch is in flight wait to share one
// transaction rather than each start its own beside it, but not for longer
// than SideBatchAfter: a long append holds nobody up.
func TestSmallAppendsShareOneBatchBesideALongOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{SideBatchAfter: 300 * time.Millisecond})
	c := ctx(t)
	const key = 7201
	holder, err := e.app.Acquire(c)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(c, `SELECT pg_advisory_lock($1)`, key); err != nil {
		t.Fatal(err)
	}
	long := make(chan error, 1)
	go func() {
		req := one("held", eventstore.NoStream, widgetCounted{N: 1})
		req.Fence = lockedFence{key: key}
		_, err := e.store.Append(c, req)
		long <- err
	}()
	for e.store.Stats().Batches < 1 {
		time.Sleep(time.Millisecond)
	}
	const small = 3
	var beside errgroup.Group
	start := time.Now()
	for i := range small {
		beside.Go(func() error {
			_, err := e.store.Append(c, one(fmt.Sprint("beside-", i), eventstore.NoStream, widgetCounted{N: i}))
			return err
		})
	}
	if err := beside.Wait(); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("the small appends committed after %s, before the batch in flight ran for SideBatchAfter", waited)
	}
	select {
	case err := <-long:
		t.Fatalf("the held append finished (%v) before its lock was let go", err)
	default:
	}
	if got := e.store.Stats().Batches; got != 2 {
		t.Errorf("%d batches for one held append and %d small ones arriving together, want 2", got, small)
	}
	if _, err := holder.Exec(c, `SELECT pg_advisory_unlock($1)`, key); err != nil {
		t.Fatal(err)
	}
	if err := <-long; err != nil {
		t.Fatal(err)
	}
}

// Writers that append over and over share transactions rather than split
// into cohorts that alternate: with no batch in flight, the requests queued
// wait, up to GatherFor, for appends to as many streams as were seen
// waiting at once lately. A writer that does not come back holds the others up no longer
// than that, and a lone writer never waits.
func TestAppendsOfACrowdGatherIntoOneBatch(t *testing.T) {
	t.Parallel()
	// Long enough that a writer the machine is slow to run (the whole
	// suite shares two cores) still arrives within it.
	const gather = time.Second
	e := newEnv(t, eventstore.Options{GatherFor: gather})
	c := ctx(t)
	round := func(r, writers int) (int64, time.Duration) {
		before := e.store.Stats().Batches
		var g errgroup.Group
		var ready sync.WaitGroup
		ready.Add(writers)
		begin := make(chan struct{})
		for w := range writers {
			g.Go(func() error {
				ready.Done()
				<-begin // the writers set off together
				_, err := e.store.Append(c, one(fmt.Sprintf("crowd-%d-%d", r, w), eventstore.NoStream, widgetCounted{N: w}))
				return err
			})
		}
		ready.Wait()
		start := time.Now()
		close(begin)
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		return e.store.Stats().Batches - before, time.Since(start)
	}
	round(0, 4) // the store sees four writers waiting at once
	const rounds = 8
	var batches int64
	for r := 1; r <= rounds; r++ {
		n, took := round(r, 4)
		batches += n
		if took >= gather {
			t.Errorf("round %d: four writers of a crowd of four took %s, as if one waited for a writer that did not come", r, took)
		}
	}
	// Without gathering, the first writer of a round runs alone and the
	// other three follow in a second transaction: 16.
	if batches > rounds+2 {
		t.Errorf("%d rounds of four appends arriving together took %d transactions, want about one each", rounds, batches)
	}

	if n, took := round(rounds+1, 3); took < gather/2 || took > 5*gather || n != 1 {
		t.Errorf("three of a crowd of four: %d transactions after %s, want one after about %s", n, took, gather)
	}

	lone := newEnv(t, eventstore.Options{GatherFor: gather})
	start := time.Now()
	for i := range 10 {
		if _, err := lone.store.Append(c, one(fmt.Sprint("lone-", i), eventstore.NoStream, widgetCounted{N: i})); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > 2*gather {
		t.Errorf("a lone writer's ten appends took %s: it waited for writers that were never there", took)
	}
}

// Writers of one stream cannot share a batch, so gathering them would only
// hold each batch up: they never wait for the crowd.
func TestAppendsToOneStreamDoNotGather(t *testing.T) {
	t.Parallel()
	const gather = time.Second
	e := newEnv(t, eventstore.Options{GatherFor: gather})
	c := ctx(t)
	start := time.Now()
	var g errgroup.Group
	for w := range 4 {
		g.Go(func() error {
			for i := range 5 {
				if _, err := e.store.Append(c, one("one-hot-stream", eventstore.AnyVersion, widgetCounted{N: w*10 + i})); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= gather {
		t.Errorf("four writers' twenty appends to one stream took %s: batches waited for writers that could not join them", took)
	}
}
