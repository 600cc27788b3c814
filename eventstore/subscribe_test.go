package eventstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"cairn/domain"
	"cairn/eventstore"
	"cairn/internal/database"
	"cairn/internal/testdb"
)

func TestSubscribeCatchUpThenLiveByNotify(t *testing.T) {
	t.Parallel()
	// A poll interval of a minute: only notifications can wake it in time.
	e := newEnv(t, eventstore.Options{PollInterval: time.Minute})
	c := ctx(t)
	for i := 0; i < 5; i++ {
		if _, err := e.store.Append(c, one("w-sub", eventstore.AnyVersion, widgetCounted{N: i})); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan eventstore.RecordedEvent, 100)
	sctx, cancel := context.WithCancel(c)
	defer cancel()
	go func() {
		_ = e.store.Subscribe(sctx, eventstore.SubscribeOptions{BatchSize: 2}, func(_ context.Context, b eventstore.Batch) error {
			for _, ev := range b.Events {
				got <- ev
			}
			return nil
		})
	}()
	for i := 0; i < 5; i++ {
		select {
		case <-got:
		case <-time.After(30 * time.Second):
			t.Fatalf("catch-up delivered %d of 5", i)
		}
	}
	// Most likely live and waiting by now; if a slow machine has it still
	// reading, the event arrives all the same.
	time.Sleep(100 * time.Millisecond)
	if _, err := e.store.Append(c, one("w-sub", eventstore.AnyVersion, widgetCounted{N: 99})); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-got:
		if ev.Version != 6 {
			t.Fatalf("live event %+v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("live event not delivered: notification did not wake the subscriber")
	}
}

func TestSubscriberCheckpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	cur, err := e.store.LoadCheckpoint(c, "pm")
	if err != nil || !cur.IsZero() {
		t.Fatalf("fresh checkpoint %v %v", cur, err)
	}
	want := eventstore.Cursor{TxID: 42, Position: 7}
	if err := e.store.SaveCheckpoint(c, "pm", want); err != nil {
		t.Fatal(err)
	}
	if got, err := e.store.LoadCheckpoint(c, "pm"); err != nil || got != want {
		t.Fatalf("checkpoint %v %v", got, err)
	}
}

// The safety test of SPEC §11: writers that commit, writers that roll back,
// and one transaction held open while the others commit; a subscriber from
// the start must see every committed event exactly once, in cursor order.
func TestSubscriberSeesEveryCommittedEventOnceInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{PollInterval: 50 * time.Millisecond})
	c := ctx(t)
	pool := e.app

	var (
		mu        sync.Mutex
		committed = map[string]bool{}
		rolled    = map[string]bool{}
		seq       atomic.Int64
	)
	id := func() string { return "e-" + itoa(seq.Add(1)) }

	var writers sync.WaitGroup
	stop := time.Now().Add(4 * time.Second)
	// The long transaction: appends, then stays open two seconds.
	writers.Add(1)
	go func() {
		defer writers.Done()
		time.Sleep(300 * time.Millisecond)
		ids := []string{id(), id()}
		err := pgx.BeginFunc(c, pool, func(tx pgx.Tx) error {
			if _, err := e.store.AppendInTx(c, tx, one("w-long", eventstore.AnyVersion, widgetCounted{N: 1, ID: ids[0]}, widgetCounted{N: 2, ID: ids[1]})); err != nil {
				return err
			}
			time.Sleep(2 * time.Second)
			return nil
		})
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		committed[ids[0]], committed[ids[1]] = true, true
		mu.Unlock()
	}()
	for w := 0; w < 16; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; time.Now().Before(stop); i++ {
				stream := "w-" + itoa(int64(w)) + "-" + itoa(int64(rng.IntN(5)))
				ev := widgetCounted{N: i, ID: id()}
				if w%2 == 0 { // half the writers go through the batcher
					if _, err := e.store.Append(c, one(stream, eventstore.AnyVersion, ev)); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					committed[ev.ID] = true
					mu.Unlock()
					continue
				}
				rollback := rng.IntN(10) == 0
				tx, err := pool.Begin(c)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = e.store.AppendInTx(c, tx, one(stream, eventstore.AnyVersion, ev))
				if err == nil && rng.IntN(3) == 0 {
					time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
				}
				if err != nil || rollback {
					_ = tx.Rollback(c)
					mu.Lock()
					rolled[ev.ID] = true
					mu.Unlock()
					continue
				}
				if err := tx.Commit(c); err != nil {
					mu.Lock()
					rolled[ev.ID] = true
					mu.Unlock()
					continue
				}
				mu.Lock()
				committed[ev.ID] = true
				mu.Unlock()
			}
		}()
	}

	seen := map[string]int{}
	var order []eventstore.Cursor
	sctx, cancel := context.WithCancel(c)
	defer cancel()
	subDone := make(chan error, 1)
	writersDone := make(chan struct{})
	go func() { writers.Wait(); close(writersDone) }()
	go func() {
		subDone <- e.store.Subscribe(sctx, eventstore.SubscribeOptions{BatchSize: 100}, func(_ context.Context, b eventstore.Batch) error {
			for _, ev := range b.Events {
				order = append(order, ev.Cursor())
				d, err := e.store.Decode(ev)
				if err != nil {
					return err
				}
				mu.Lock()
				seen[d.(widgetCounted).ID]++
				mu.Unlock()
			}
			return nil
		})
	}()
	<-writersDone
	head, err := e.store.Head(c)
	if err != nil {
		t.Fatal(err)
	}
	// Well inside ctx's minute: a loaded machine may read thousands of
	// events slowly, and giving up early would count them as never seen.
	deadline := time.Now().Add(45 * time.Second)
	for {
		time.Sleep(50 * time.Millisecond)
		cancelNow := false
		mu.Lock()
		if len(seen) >= len(committed) || time.Now().After(deadline) {
			cancelNow = true
		}
		mu.Unlock()
		if cancelNow {
			break
		}
	}
	cancel()
	<-subDone
	if len(rolled) == 0 {
		t.Fatal("the test rolled back nothing; it proves less than it claims")
	}
	for id := range committed {
		if seen[id] != 1 {
			t.Errorf("committed event %s seen %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if !committed[id] {
			t.Errorf("event %s seen %d times but never committed (rolled back: %v)", id, n, rolled[id])
		}
	}
	for i := 1; i < len(order); i++ {
		if !order[i-1].Less(order[i]) {
			t.Fatalf("out of order at %d: %s then %s", i, order[i-1], order[i])
		}
	}
	if len(order) > 0 && order[len(order)-1].Less(head) {
		t.Fatalf("subscriber stopped at %s before head %s", order[len(order)-1], head)
	}
	t.Logf("%d committed, %d rolled back, all seen once in order", len(committed), len(rolled))
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// A transaction open in another database of the cluster must not hold this
// database's readers back: it cannot write events here.
func TestOtherDatabasesDoNotHoldReadersBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	other := testdb.New(t).AdminPool(t)
	tx, err := other.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(c)
	if _, err := tx.Exec(c, `SELECT pg_current_xact_id()`); err != nil { // takes an xid
		t.Fatal(err)
	}
	res, err := e.store.Append(c, one("w-foreign", eventstore.AnyVersion, widgetCounted{N: 1}))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(c, 30*time.Second)
	defer cancel()
	if err := e.store.WaitVisible(wctx, res.Cursor); err != nil {
		t.Fatalf("an open transaction in another database held this one's readers back: %v", err)
	}
	// One in this database still does: that is what keeps readers gap-free.
	own, err := e.db.AdminPool(t).Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Rollback(c)
	if _, err := own.Exec(c, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	res, err = e.store.Append(c, one("w-foreign", eventstore.AnyVersion, widgetCounted{N: 2}))
	if err != nil {
		t.Fatal(err)
	}
	wctx2, cancel2 := context.WithTimeout(c, 300*time.Millisecond)
	defer cancel2()
	if err := e.store.WaitVisible(wctx2, res.Cursor); err == nil {
		t.Fatal("an event behind an open transaction of this database was visible")
	}
}

// A read-model session (eventstore.ReadModelAppName) may not append events,
// so its open transactions do not hold readers back; any other open
// transaction of the database still does (see the test above).
func TestReadModelSessionsDoNotHoldReadersBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	rm, err := database.Open(c, e.db.ConnString, database.Options{Role: database.AppRole, AppName: eventstore.ReadModelAppName, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()

	// It may not append: readers would not wait for its events.
	rmStore := eventstore.New(rm, testRegistry(), eventstore.Options{})
	defer rmStore.Close()
	if _, err := rmStore.Append(c, one("w-rm", eventstore.AnyVersion, widgetCounted{N: 0})); err == nil {
		t.Fatal("a read-model session appended an event")
	}

	tx, err := rm.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(c)
	if _, err := tx.Exec(c, `CREATE TEMP TABLE rm_write (n int); INSERT INTO rm_write VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	var xid string
	if err := tx.QueryRow(c, `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	res, err := e.store.Append(c, one("w-rm", eventstore.AnyVersion, widgetCounted{N: 1}))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(c, 30*time.Second)
	defer cancel()
	if err := e.store.WaitVisible(wctx, res.Cursor); err != nil {
		t.Fatalf("an open read-model transaction (xid %s) held readers back: %v", xid, err)
	}
}

// Subscriptions waiting at the head share their reads of it, and each still
// gets every event, in order, woken by notifications alone.
func TestSubscriptionsAtTheHeadShareTheirReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{PollInterval: time.Minute})
	const subscribers, writers, appends = 8, 4, 50
	followTheWriters(t, e.store, 0, make([]time.Duration, subscribers), "shared-", writers, appends)
	st := e.store.Stats()
	ran, joined := st.TailReads, st.TailReadsShared
	t.Logf("reads of the tail: %d made, %d shared", ran, joined)
	if joined < ran {
		t.Errorf("%d reads of the tail made and only %d shared by %d subscriptions at the head", ran, joined, subscribers)
	}
}

// A subscriber far behind is read to in reads of several batches, and
// still handed at most its batch size at a time, every event once, in
// order, each batch's cursor its last event's.
func TestSubscribeCatchUpHandsBatchesOfItsSize(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{PollInterval: time.Minute})
	c := ctx(t)
	const events, batch = 60, 3
	for i := range events {
		if _, err := e.store.Append(c, one("w-big", eventstore.AnyVersion, widgetCounted{N: i})); err != nil {
			t.Fatal(err)
		}
	}
	sctx, cancel := context.WithCancel(c)
	defer cancel()
	var seen int64
	err := e.store.Subscribe(sctx, eventstore.SubscribeOptions{BatchSize: batch}, func(_ context.Context, b eventstore.Batch) error {
		if len(b.Events) == 0 || len(b.Events) > batch {
			return fmt.Errorf("a batch of %d events, want 1 to %d", len(b.Events), batch)
		}
		if b.Cursor != b.Events[len(b.Events)-1].Cursor() {
			return fmt.Errorf("batch cursor %s, its last event at %s", b.Cursor, b.Events[len(b.Events)-1].Cursor())
		}
		for _, ev := range b.Events {
			seen++
			if ev.Version != seen {
				return fmt.Errorf("event %d of the stream arrived as the %dth", ev.Version, seen)
			}
		}
		if seen == events {
			cancel()
		}
		return nil
	})
	if seen != events {
		t.Fatalf("%d of %d events delivered: %v", seen, events, err)
	}
}

// A subscription a little behind the others is given what they read out of
// the window of recent events, and still gets every event once, in order,
// the same as one at the head.
func TestSubscriptionsBehindAreServedFromRecentEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{PollInterval: time.Minute})
	const writers, appends = 4, 100
	// One at the head, and two that take a while over each batch (a read
	// model's transaction, say), so they fall behind and catch up.
	delays := []time.Duration{0, 2 * time.Millisecond, 5 * time.Millisecond}
	followTheWriters(t, e.store, 16, delays, "recent-", writers, appends)
	served := e.store.Stats().RecentServed
	t.Logf("%d events of %d given out of the window of recent events", served, len(delays)*writers*appends)
	if served == 0 {
		t.Error("no subscription behind was given an event out of the window of recent events")
	}
}

// Subscriptions woken by one large commit read it from the database about
// once between them, whatever their batch sizes: a read of the same events
// under way is waited for and taken from the window of recent events. Each
// read it on its own before, as many times over as there were
// subscriptions.
func TestSubscriptionsReadALargeCommitOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{PollInterval: time.Minute})
	c := ctx(t)
	head, err := e.store.Head(c)
	if err != nil {
		t.Fatal(err)
	}
	const events = 3000
	sizes := []int{100, 150, 250, 400, 500, 1000}
	var received atomic.Int64
	stop := subscribeEach(c, e.store, head, sizes, func(_ int, b eventstore.Batch) {
		received.Add(int64(len(b.Events)))
	})
	defer stop()
	// One event first, read by all: they wait at the head, and the window
	// of recent events holds it, as in a process that has been running.
	if _, err := e.store.Append(c, one("large-commit-before", eventstore.NoStream, widgetCounted{})); err != nil {
		t.Fatal(err)
	}
	waitUntil(func() bool { return received.Load() >= int64(len(sizes)) })
	evs := make([]domain.Event, events)
	for i := range evs {
		evs[i] = widgetCounted{N: i}
	}
	// Sharing rests on the subscriptions waking together; on a machine
	// the whole suite loads, one commit in a few finds them apart. Without
	// sharing every commit is read once per subscription, so three tries
	// that all read it again still fail.
	var reads []int64
	for try := range 3 {
		received.Store(0)
		before := e.store.Stats().EventsRead
		if _, err := e.store.Append(c, one(fmt.Sprint("large-commit-", try), eventstore.NoStream, evs...)); err != nil {
			t.Fatal(err)
		}
		waitUntil(func() bool { return received.Load() >= int64(len(sizes)*events) })
		if got := received.Load(); got != int64(len(sizes)*events) {
			t.Fatalf("%d subscriptions received %d events, want %d each", len(sizes), got, events)
		}
		read := e.store.Stats().EventsRead - before
		t.Logf("%d subscriptions read %d events from the database for a commit of %d", len(sizes), read, events)
		if read <= events*3/2 {
			return
		}
		reads = append(reads, read)
	}
	t.Errorf("%d subscriptions read %v events from the database for three commits of %d: each read them again", len(sizes), reads, events)
}

// followTheWriters subscribes from the head once for each of delays (how
// long each takes over a batch of up to batch events), has writers append
// appends events each, and checks that every subscription got every event
// once, in the same order.
func followTheWriters(t *testing.T, store *eventstore.Store, batch int, delays []time.Duration, prefix string, writers, appends int) {
	t.Helper()
	c := ctx(t)
	head, err := store.Head(c)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]eventstore.Cursor, len(delays))
	var received atomic.Int64
	batches := make([]int, len(delays))
	for i := range batches {
		batches[i] = batch
	}
	stop := subscribeEach(c, store, head, batches, func(i int, b eventstore.Batch) {
		for _, ev := range b.Events {
			got[i] = append(got[i], ev.Cursor())
		}
		received.Add(int64(len(b.Events)))
		time.Sleep(delays[i])
	})
	appendConcurrently(t, store, prefix, writers, appends)
	want := writers * appends
	waitUntil(func() bool { return received.Load() >= int64(len(delays)*want) })
	stop()
	for i, cursors := range got {
		if len(cursors) != want {
			t.Fatalf("subscriber %d got %d events, want %d: a wake-up was missed", i, len(cursors), want)
		}
		for j := 1; j < len(cursors); j++ {
			if !cursors[j-1].Less(cursors[j]) {
				t.Fatalf("subscriber %d got %s after %s", i, cursors[j], cursors[j-1])
			}
		}
		if !slices.Equal(cursors, got[0]) {
			t.Fatalf("subscriber %d got other events than the first", i)
		}
	}
}

// subscribeEach subscribes from from once for each of batches (its batch
// size), handing subscription i's batches to handle; stop ends them all and
// waits for them.
func subscribeEach(ctx context.Context, store *eventstore.Store, from eventstore.Cursor, batches []int,
	handle func(i int, b eventstore.Batch)) (stop func()) {
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, size := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = store.Subscribe(sctx, eventstore.SubscribeOptions{From: from, BatchSize: size}, func(_ context.Context, b eventstore.Batch) error {
				handle(i, b)
				return nil
			})
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// waitUntil waits up to 30 s for done; the caller checks what it got.
func waitUntil(done func() bool) {
	deadline := time.Now().Add(30 * time.Second)
	for !done() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// A subscription catching up reads ahead on its own: the events it reads
// are not kept for others to share, which would hold a whole catch-up (a
// read model's rebuild, say) in memory until the next commit.
func TestCatchingUpKeepsNoReadsForOthers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{PollInterval: time.Minute})
	c := ctx(t)
	const streams, each = 60, 100
	for s := range streams {
		var evs []domain.Event
		for n := range each {
			evs = append(evs, widgetCounted{N: n})
		}
		if _, err := e.store.Append(c, one(fmt.Sprint("catch-up-", s), eventstore.NoStream, evs...)); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		sctx, stop := context.WithCancel(c)
		var n int
		last := eventstore.Start
		err := e.store.Subscribe(sctx, eventstore.SubscribeOptions{From: eventstore.Start, BatchSize: 100}, func(_ context.Context, b eventstore.Batch) error {
			for _, ev := range b.Events {
				if !last.Less(ev.Cursor()) {
					return fmt.Errorf("event %s after %s", ev.Cursor(), last)
				}
				last = ev.Cursor()
			}
			if n += len(b.Events); n >= streams*each {
				stop()
			}
			return nil
		})
		if n < streams*each {
			t.Fatalf("round %d: caught up with %d of %d events: %v", round, n, streams*each, err)
		}
		if kept := e.store.TailReadsKept(); kept > 2 {
			t.Errorf("round %d: %d reads of the log kept for sharing after catching up on %d events in batches of 100", round, kept, streams*each)
		}
	}
}

// appendConcurrently has writers append appends events each, one at a time,
// to a stream of their own named after prefix, and waits for them.
func appendConcurrently(t *testing.T, store *eventstore.Store, prefix string, writers, appends int) {
	t.Helper()
	c := ctx(t)
	var ww sync.WaitGroup
	for w := range writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for n := range appends {
				if _, err := store.Append(c, one(fmt.Sprint(prefix, w), eventstore.AnyVersion, widgetCounted{N: n})); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	ww.Wait()
}
