package audit_test

import (
	"bytes"
	"strings"
	"testing"

	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/internal/testdb"
	"cairn/projections/audit"
	"cairn/projections/eventgen"
)

// removeLast removes the last event of a node's stream ($node).
const removeLast = `DELETE FROM events WHERE stream_id = '$node' AND version = (SELECT max(version) FROM events WHERE stream_id = '$node')`

// Events removed from the log before an export leave a file whose lines all
// chain; the chain checkpoint it carries still names what is missing.
func TestExportOfALogWithRemovedEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		remove string
		stream string // export one stream only
		want   string
	}{
		{"a stream's last event", removeLast, "", "is not in the file"},
		{"the log's tail", `DELETE FROM events WHERE position > (SELECT max(position) - 5 FROM events)`, "", "events were removed"},
		{"a stream's last event, exporting that stream", removeLast, "$node", "is not in the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			pool := db.AppPool(t)
			store := eventstore.New(pool, events.Registry(), eventstore.Options{})
			t.Cleanup(store.Close)
			last, err := eventgen.Append(ctx(t), store, eventgen.New(eventgen.Options{Seed: 3, Nodes: 5, Tenants: 2}).Take(200))
			if err != nil {
				t.Fatal(err)
			}
			if err := store.WaitVisible(ctx(t), last); err != nil {
				t.Fatal(err)
			}
			if _, _, err := store.TakeCheckpoint(ctx(t)); err != nil {
				t.Fatal(err)
			}
			first, err := store.ReadAll(ctx(t), eventstore.Start, 1, eventstore.Filter{StreamTypes: []string{"node"}})
			if err != nil || len(first) == 0 {
				t.Fatalf("a node's stream: %v", err)
			}
			node := first[0].StreamID
			if tt.stream == "$node" {
				tt.stream = node
			}
			var clean bytes.Buffer
			if _, err := audit.Export(ctx(t), store, &clean, audit.ExportOptions{StreamID: tt.stream}); err != nil {
				t.Fatal(err)
			}
			if rep, err := audit.VerifyFile(bytes.NewReader(clean.Bytes())); err != nil || !rep.OK() || rep.Checkpoint == nil {
				t.Fatalf("before: %+v %v", rep.Problems, err)
			}
			conn, err := db.AdminPool(t).Acquire(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			for _, sql := range []string{`SET session_replication_role = replica`, strings.ReplaceAll(tt.remove, "$node", node), `RESET session_replication_role`} {
				if _, err := conn.Exec(ctx(t), sql); err != nil {
					t.Fatal(err)
				}
			}
			var tampered bytes.Buffer
			if _, err := audit.Export(ctx(t), store, &tampered, audit.ExportOptions{StreamID: tt.stream}); err != nil {
				t.Fatal(err)
			}
			rep, err := audit.VerifyFile(bytes.NewReader(tampered.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.Error())
			}
			if !strings.Contains(strings.Join(got, "\n"), tt.want) {
				t.Fatalf("problems %q, want one saying %q", got, tt.want)
			}
		})
	}
}
