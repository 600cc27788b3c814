package eventstore_test

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	"cairn/domain"
	"cairn/eventstore"

	"github.com/jackc/pgx/v5"
)

// TestScanPathsAgree reads the same events through the direct decoding of
// prepared statements' binary rows and through pgx's Scan of a simple
// protocol query's text rows: they must be equal, field for field.
func TestScanPathsAgree(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	appends := []eventstore.AppendRequest{
		one("w-scan-1", eventstore.NoStream, widgetCounted{N: 1}, widgetCounted{N: 2, ID: "ünïcode"}),
		{CommandID: "cmd-scan", Metadata: eventstore.Metadata{Actor: "alice", Tenant: "acme", CorrelationID: "corr"},
			Streams: []eventstore.StreamAppend{{StreamID: "w-scan-2", StreamType: "widget", Expected: eventstore.NoStream,
				Events: []domain.Event{widgetRenamed{Name: "a", Title: "b"}}}}},
		// Escapes in metadata take encoding/json's path.
		{Metadata: eventstore.Metadata{Actor: "quote \" and \\ backslash"},
			Streams: []eventstore.StreamAppend{{StreamID: "w-scan-3", StreamType: "gadget", Expected: eventstore.NoStream,
				Events: []domain.Event{widgetCounted{N: 3}}}}},
	}
	for _, a := range appends {
		if _, err := e.store.Append(c, a); err != nil {
			t.Fatal(err)
		}
	}
	direct, err := e.store.ReadAll(c, eventstore.Start, 100, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(direct) != 4 {
		t.Fatalf("read %d events, want 4", len(direct))
	}
	prepared, err := e.app.Query(c, `SELECT `+eventstore.EventColumns+` FROM events LIMIT 1`)
	if err != nil {
		t.Fatal(err)
	}
	if !eventstore.WireFormatsExpected(prepared.FieldDescriptions()) {
		t.Errorf("a prepared read of the events does not take the direct path: %+v", prepared.FieldDescriptions())
	}
	prepared.Close()
	rows, err := e.app.Query(c, `SELECT position, tx_id, stream_id, stream_type, version, event_type, schema_version,
		payload, metadata, coalesce(command_id, ''), recorded_at, prev_hash, hash FROM events ORDER BY tx_id, position`,
		pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	viaScan, err := eventstore.ScanEvents(rows, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(viaScan) != len(direct) {
		t.Fatalf("simple protocol read %d events, prepared %d", len(viaScan), len(direct))
	}
	for i := range direct {
		if !reflect.DeepEqual(direct[i], viaScan[i]) {
			t.Errorf("event %d differs:\n direct %+v\n   scan %+v", i, direct[i], viaScan[i])
		}
	}
	if got := direct[3].Metadata.Actor; got != `quote " and \ backslash` {
		t.Errorf("escaped actor read as %q", got)
	}
	if direct[2].CommandID != "cmd-scan" || direct[2].Metadata.Tenant != "acme" || direct[0].CommandID != "" {
		t.Errorf("command ids or metadata lost: %+v / %+v", direct[2], direct[0])
	}
}

// TestReadHoldsRoomForWhatCame: a read with a large limit that finds fewer
// events returns a slice sized for them, since callers keep batches.
func TestReadHoldsRoomForWhatCame(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	evs := make([]domain.Event, 100)
	for i := range evs {
		evs[i] = widgetCounted{N: i}
	}
	if _, err := e.store.Append(c, one("w-room", eventstore.NoStream, evs...)); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 10, 100, 150, 10_000, 1_000_000} {
		got, err := e.store.ReadAll(c, eventstore.Start, limit, eventstore.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if want := min(limit, 100); len(got) != want {
			t.Fatalf("limit %d: read %d events, want %d", limit, len(got), want)
		}
		if cap(got) > len(got)+len(got)/4+8 {
			t.Errorf("limit %d: %d events held in room for %d", limit, len(got), cap(got))
		}
	}
	// A poll of the live log that finds one event keeps room for one.
	all, err := e.store.ReadAll(c, eventstore.Start, 100, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	last, err := e.store.ReadAll(c, all[98].Cursor(), 1000, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 1 || cap(last) != 1 {
		t.Errorf("a read of the last event returned %d in room for %d", len(last), cap(last))
	}
}

// TestLongReadMakesRoomOnce: a read of as many events as a catch-up reads
// at once makes room for them once. Growing past the room made, then
// copying into an array of the read's size, allocated three arrays a read
// and slowed catching up by a tenth. Not parallel: it counts the bytes the
// process allocates.
func TestLongReadMakesRoomOnce(t *testing.T) {
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	const n, per = 20_000, 1_000
	for s := range n / per {
		evs := make([]domain.Event, per)
		for i := range evs {
			evs[i] = widgetCounted{N: i}
		}
		if _, err := e.store.Append(c, one(fmt.Sprintf("w-long-%d", s), eventstore.NoStream, evs...)); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := e.store.ReadAll(c, eventstore.Start, n, eventstore.Filter{})
	runtime.ReadMemStats(&after)
	if err != nil || len(got) != n {
		t.Fatalf("read %d events (%v), want %d", len(got), err, n)
	}
	array := uint64(cap(got)) * uint64(unsafe.Sizeof(got[0]))
	// The array once, and each event's bytes and strings (about 100 bytes
	// here, with the reading's own buffers).
	t.Logf("array %d KiB (%d bytes an event), allocated %d KiB", array>>10, unsafe.Sizeof(got[0]), (after.TotalAlloc-before.TotalAlloc)>>10)
	if spent, most := after.TotalAlloc-before.TotalAlloc, array+n*200; spent > most {
		t.Errorf("reading %d events allocated %d KiB; the array they are in is %d KiB, at most %d KiB expected",
			n, spent>>10, array>>10, most>>10)
	}
}
