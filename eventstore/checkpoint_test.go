package eventstore_test

import (
	"bytes"
	"strings"
	"testing"

	"cairn/eventstore"
)

// Removing events leaves no broken link when they were a stream's last or
// the log's last; a chain checkpoint taken before remembers them, and
// Verify names what is missing.
func TestVerifyFindsRemovedTails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		remove  string // SQL deleting events (as a superuser past the trigger)
		stream  string // the stream named, "" for the log as a whole
		reasons []string
	}{
		{"a stream's last event", `DELETE FROM events WHERE stream_id = 'w-a' AND version = 3`, "w-a", []string{"versions 3 to 3 are missing"}},
		{"a whole stream", `DELETE FROM events WHERE stream_id = 'w-a'`, "w-a", []string{"the whole stream is missing"}},
		{"the log's tail", `DELETE FROM events WHERE position = (SELECT max(position) FROM events)`, "", []string{"events were removed", "versions 3 to 3 are missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
			cp, took, err := e.store.TakeCheckpoint(c)
			if err != nil || !took || cp.Events != 6 || cp.Streams != 2 {
				t.Fatalf("checkpoint %+v, taken %v: %v", cp, took, err)
			}
			if _, again, err := e.store.TakeCheckpoint(c); err != nil || again {
				t.Fatalf("a second checkpoint of nothing new: taken %v, %v", again, err)
			}
			if rep, err := e.store.Verify(c, ""); err != nil || !rep.OK() || rep.Checkpoint == nil {
				t.Fatalf("before: %+v %v", rep, err)
			}
			conn, err := e.db.AdminPool(t).Acquire(c)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			for _, sql := range []string{`SET session_replication_role = replica`, tt.remove, `RESET session_replication_role`} {
				if _, err := conn.Exec(c, sql); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := e.store.Verify(c, "")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range rep.Breaks {
				got = append(got, b.StreamID+": "+b.Reason)
			}
			for _, want := range tt.reasons {
				if !strings.Contains(strings.Join(got, "\n"), want) {
					t.Errorf("breaks %q, want one saying %q", got, want)
				}
			}
			if tt.stream != "" {
				if one, err := e.store.Verify(c, tt.stream); err != nil || one.OK() {
					t.Errorf("verifying %s alone: %+v %v", tt.stream, one.Breaks, err)
				}
			}
		})
	}
}

// A checkpoint reads only each event's stream, version and hash, a page at
// a time: every event of the range comes, once, in global order, whatever
// the page size.
func TestCheckpointReadsEveryLinkOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	for i := 1; i <= 4; i++ {
		for _, s := range []string{"w-a", "w-b"} {
			if _, err := e.store.Append(c, one(s, eventstore.AnyVersion, widgetCounted{N: i})); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := e.store.ReadAll(c, eventstore.Start, 100, eventstore.Filter{})
	if err != nil || len(all) != 8 {
		t.Fatalf("read %d events: %v", len(all), err)
	}
	from, to := all[0].Cursor(), all[6].Cursor() // the second to the seventh
	for _, page := range []int{1, 2, 5, 6, 1000} {
		heads, streams, err := e.store.ReadLinks(c, from, to, page)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if len(heads) != 6 {
			t.Fatalf("page %d: %d links, want 6", page, len(heads))
		}
		for i, h := range heads {
			want := all[i+1]
			if streams[i] != want.StreamID || h.Version != want.Version || !bytes.Equal(h.Hash, want.Hash) {
				t.Fatalf("page %d: link %d is %s v%d, want %s v%d with its hash", page, i, streams[i], h.Version, want.StreamID, want.Version)
			}
		}
	}
}
