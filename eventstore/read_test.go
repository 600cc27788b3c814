package eventstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn/domain"
	"cairn/eventstore"
)

func TestReadStreamAsOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e := newEnv(t, eventstore.Options{Clock: clock})
	c := ctx(t)
	var cursors []eventstore.Cursor
	for i := 1; i <= 4; i++ {
		now = now.Add(time.Minute)
		res, err := e.store.Append(c, one("w-asof", eventstore.Exactly(int64(i-1)), widgetCounted{N: i}))
		if err != nil {
			t.Fatal(err)
		}
		cursors = append(cursors, res.Cursor)
	}
	tests := []struct {
		name string
		opts eventstore.ReadStreamOptions
		want []int
	}{
		{"all", eventstore.ReadStreamOptions{}, []int{1, 2, 3, 4}},
		{"from version 3", eventstore.ReadStreamOptions{FromVersion: 3}, []int{3, 4}},
		{"as of version 2", eventstore.ReadStreamOptions{AsOfVersion: 2}, []int{1, 2}},
		{"as of cursor of 3rd", eventstore.ReadStreamOptions{AsOf: cursors[2]}, []int{1, 2, 3}},
		{"as of time of 2nd", eventstore.ReadStreamOptions{AsOfTime: time.Date(2026, 1, 1, 12, 2, 30, 0, time.UTC)}, []int{1, 2}},
	}
	for _, tt := range tests {
		evs, err := e.store.ReadStream(c, "w-asof", tt.opts)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []int
		for _, ev := range evs {
			d, err := e.store.Decode(ev)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, d.(widgetCounted).N)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("%s: got %v, want %v", tt.name, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Fatalf("%s: got %v, want %v", tt.name, got, tt.want)
			}
		}
	}
	_, err := e.store.ReadStream(c, "w-asof", eventstore.ReadStreamOptions{AsOfTime: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)})
	if !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("before the first event: want not found, got %v", err)
	}
	var nf *eventstore.StreamNotFoundError
	if _, err := e.store.ReadStream(c, "nope", eventstore.ReadStreamOptions{}); !errors.As(err, &nf) || nf.StreamID != "nope" {
		t.Fatalf("unknown stream: %v", err)
	}
}

func TestUpcastOnRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	// An event written by an older build, at schema version 1.
	admin := e.db.AdminPool(t)
	if _, err := admin.Exec(c, `INSERT INTO events (stream_id, stream_type, version, event_type, schema_version, payload, metadata, recorded_at, prev_hash, hash)
		VALUES ('w-old', 'widget', 1, 'test.widget_renamed', 1, '{"name":"old"}', '{}', now(), '\x00', '\x00')`); err != nil {
		t.Fatal(err)
	}
	evs, err := e.store.ReadStream(c, "w-old", eventstore.ReadStreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.store.Decode(evs[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := d.(widgetRenamed); got.Name != "old" || got.Title != "untitled" {
		t.Fatalf("upcast gave %+v", got)
	}
	// A payload that does not decode is a typed error naming the type.
	bad := evs[0]
	bad.SchemaVersion = 2
	bad.Payload = json.RawMessage(`{"name": 5}`)
	var de *domain.DecodeError
	if _, err := e.store.Decode(bad); !errors.As(err, &de) || de.EventType != "test.widget_renamed" {
		t.Fatalf("want DecodeError, got %v", err)
	}
	bad.Type = "test.unknown"
	var ue *domain.UnknownEventTypeError
	if _, err := e.store.Decode(bad); !errors.As(err, &ue) {
		t.Fatalf("want UnknownEventTypeError, got %v", err)
	}
}

func TestReadAllPagesInGlobalOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	var lastAppend eventstore.Cursor
	for i := 0; i < 25; i++ {
		res, err := e.store.Append(c, one("w-page", eventstore.AnyVersion, widgetCounted{N: i}))
		if err != nil {
			t.Fatal(err)
		}
		lastAppend = res.Cursor
	}
	// Other tests' transactions in the same cluster may still be open.
	if err := e.store.WaitVisible(c, lastAppend); err != nil {
		t.Fatal(err)
	}
	var seen []int
	cur := eventstore.Start
	// A read's horizon can dip below an event already seen as visible: a
	// transaction of another database that ends while the statement runs is
	// no longer named in pg_stat_activity, so it counts. An empty page is
	// therefore "nothing yet", not "nothing more": page until the last
	// append is read, as subscribers do.
	for cur != lastAppend {
		page, err := e.store.ReadAll(c, cur, 10, eventstore.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			if err := e.store.WaitVisible(c, lastAppend); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for _, ev := range page {
			if !cur.Less(ev.Cursor()) {
				t.Fatalf("cursor went backwards: %s then %s", cur, ev.Cursor())
			}
			cur = ev.Cursor()
			d, _ := e.store.Decode(ev)
			seen = append(seen, d.(widgetCounted).N)
		}
	}
	if len(seen) != 25 || seen[0] != 0 || seen[24] != 24 {
		t.Fatalf("paged read saw %v", seen)
	}
	parsed, err := eventstore.ParseCursor(cur.String())
	if err != nil || parsed != cur {
		t.Fatalf("cursor round trip: %v %v", parsed, err)
	}
	for _, bad := range []string{"x", "1-", "-1", "1-0", "a-b", "1-2-3"} {
		var mc *eventstore.MalformedCursorError
		if _, err := eventstore.ParseCursor(bad); !errors.As(err, &mc) {
			t.Errorf("ParseCursor(%q) = %v, want MalformedCursorError", bad, err)
		}
	}
	for {
		head, err := e.store.Head(c)
		if err != nil {
			t.Fatal(err)
		}
		if head == cur {
			break
		}
		if cur.Less(head) || c.Err() != nil {
			t.Fatalf("head %s, last read %s", head, cur)
		}
		time.Sleep(10 * time.Millisecond) // the same dip as above
	}
}

func TestVerifyNamesTamperedEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	for i := 1; i <= 3; i++ {
		for _, s := range []string{"w-a", "w-b"} {
			if _, err := e.store.Append(c, one(s, eventstore.AnyVersion, widgetCounted{N: i})); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, err := e.store.Verify(c, "")
	if err != nil || !rep.OK() || rep.Events != 6 || rep.Streams != 2 {
		t.Fatalf("clean log: %+v %v", rep, err)
	}
	evs, _ := e.store.ReadStream(c, "w-b", eventstore.ReadStreamOptions{})
	target := evs[1]
	// A superuser can get past the trigger; the chain still tells.
	admin := e.db.AdminPool(t)
	conn, err := admin.Acquire(c)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(c, `SET session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(c, `UPDATE events SET payload = '{"n":999}' WHERE position = $1`, target.Position); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(c, `RESET session_replication_role`); err != nil {
		t.Fatal(err)
	}
	rep, err = e.store.Verify(c, "")
	if err != nil {
		t.Fatal(err)
	}
	first := rep.First()
	if first == nil || first.Position != target.Position || first.StreamID != "w-b" || first.Version != 2 {
		t.Fatalf("verify named %+v, altered event was %d", first, target.Position)
	}
	if len(rep.Breaks) != 1 {
		t.Fatalf("one altered event, breaks %+v", rep.Breaks)
	}
	if rep, _ := e.store.Verify(c, "w-a"); !rep.OK() {
		t.Fatalf("untouched stream reported broken: %+v", rep.Breaks)
	}

	// Changing only the indexed copy of a metadata field is caught too.
	evsA, _ := e.store.ReadStream(c, "w-a", eventstore.ReadStreamOptions{})
	other := evsA[0]
	if _, err := conn.Exec(c, `SET session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(c, `UPDATE events SET actor = 'someone-else' WHERE position = $1`, other.Position); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(c, `RESET session_replication_role`); err != nil {
		t.Fatal(err)
	}
	rep, err = e.store.Verify(c, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Breaks) != 2 || rep.Breaks[0].Position != other.Position || rep.Breaks[1].Position != target.Position {
		t.Fatalf("altered actor column not named: %+v", rep.Breaks)
	}
}

// A range read up to an event returns every event up to it, even when a
// transaction that began earlier is still open: it waits for that
// transaction rather than taking an empty page for the end of the range.
func TestReadRangeWaitsForEarlierTransactions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	older, err := e.db.AdminPool(t).Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = older.Rollback(c) }()
	if _, err := older.Exec(c, `SELECT pg_current_xact_id()`); err != nil { // take a transaction id now
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := e.store.Append(c, one("w-range", eventstore.AnyVersion, widgetCounted{N: i})); err != nil {
			t.Fatal(err)
		}
	}
	last, err := e.store.Last(c)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   []int
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = e.store.ReadRange(c, eventstore.Start, last, 2, eventstore.Filter{}, func(evs []eventstore.RecordedEvent) error {
			for _, ev := range evs {
				d, err := e.store.Decode(ev)
				if err != nil {
					return err
				}
				r.n = append(r.n, d.(widgetCounted).N)
			}
			return nil
		})
		done <- r
	}()
	select {
	case r := <-done:
		t.Fatalf("the range read returned %v (%v) while an earlier transaction was still open", r.n, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := older.Rollback(c); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.n) != 5 || r.n[0] != 0 || r.n[4] != 4 {
		t.Fatalf("range read gave %v (%v), want 0..4", r.n, r.err)
	}
}

// ReadBefore pages the history backwards, newest first, with the same
// filters as ReadAll.
func TestReadBeforePagesNewestFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	var last eventstore.Cursor
	for i := range 7 {
		req := one("w-back", eventstore.AnyVersion, widgetCounted{N: i})
		req.Metadata.Actor = map[bool]string{true: "even", false: "odd"}[i%2 == 0]
		res, err := e.store.Append(c, req)
		if err != nil {
			t.Fatal(err)
		}
		last = res.Cursor
	}
	if err := e.store.WaitVisible(c, last); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    eventstore.Filter
		want []int
	}{
		{"all", eventstore.Filter{}, []int{6, 5, 4, 3, 2, 1, 0}},
		{"by actor", eventstore.Filter{Actor: "odd"}, []int{5, 3, 1}},
		{"no match", eventstore.Filter{StreamIDs: []string{"w-none"}}, nil},
	}
	for _, tt := range tests {
		var got []int
		before := eventstore.Start // from the head
		for {
			page, err := e.store.ReadBefore(c, before, 3, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range page {
				d, _ := e.store.Decode(ev)
				got = append(got, d.(widgetCounted).N)
				before = ev.Cursor()
			}
			if len(page) < 3 {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestReadAllWalksTheIndex: a backlog read takes the events in index order
// up to its limit even when the table's statistics are behind, as they are
// while a backlog builds (autovacuum analyzes a table after a tenth of it
// changed), and index scans look dear, as they did on a table written by
// many writers at once. It used to read every event after the cursor and
// sort them: 300 ms a page instead of 4.
func TestReadAllWalksTheIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	appendMany := func(from, to int) {
		for i := from; i < to; i += 500 {
			evs := make([]domain.Event, 500)
			for j := range evs {
				evs[j] = widgetCounted{N: i + j}
			}
			if _, err := e.store.Append(c, one(fmt.Sprintf("w-plan-%d", i), eventstore.NoStream, evs...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendMany(0, 2_000)
	if _, err := e.db.AdminPool(t).Exec(c, `ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	appendMany(2_000, 40_000)
	conn, err := e.app.Acquire(c)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(c, `SET random_page_cost = 40`); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(c, `RESET random_page_cost`) }()
	q, args := e.store.ReadAllQuery(eventstore.Start, 5000, eventstore.Filter{})
	rows, err := conn.Query(c, `EXPLAIN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if p := plan.String(); !strings.Contains(p, "Index Scan using events_global_order") || strings.Contains(p, "Sort") {
		t.Fatalf("a backlog read does not walk the global order index:\n%s", p)
	}
}
