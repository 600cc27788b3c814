package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/node"
	"cairn/eventstore"
	"cairn/internal/testdb"
	"cairn/projections"
	"cairn/projections/audit"
	"cairn/projections/eventgen"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type env struct {
	pool  *pgxpool.Pool
	store *eventstore.Store
	mid   eventstore.Cursor // the last event of the first half
	last  eventstore.Cursor
}

func newEnv(t *testing.T) env {
	t.Helper()
	db := testdb.New(t)
	pool := db.AppPool(t)
	store := eventstore.New(pool, events.Registry(), eventstore.Options{})
	t.Cleanup(store.Close)
	g := eventgen.New(eventgen.Options{Seed: 7, Nodes: 10, Tenants: 3})
	mid, err := eventgen.Append(ctx(t), store, g.Take(600))
	if err != nil {
		t.Fatal(err)
	}
	last, err := eventgen.Append(ctx(t), store, g.Take(600))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.WaitVisible(ctx(t), last); err != nil {
		t.Fatal(err)
	}
	return env{pool: pool, store: store, mid: mid, last: last}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	t.Cleanup(cancel)
	return c
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(ctx(t), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func export(t *testing.T, e env, o audit.ExportOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := audit.Export(ctx(t), e.store, &buf, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestAudit(t *testing.T) {
	e := newEnv(t)
	t.Run("export verifies offline and against the log", func(t *testing.T) { testExportVerifies(t, e) })
	t.Run("tampering is caught with the line named", func(t *testing.T) { testTampering(t, e) })
	t.Run("export ranges", func(t *testing.T) { testExportRanges(t, e) })
	t.Run("bad points", func(t *testing.T) { testBadPoints(t, e) })
	t.Run("entities as of a moment and their diff", func(t *testing.T) { testAsOf(t, e) })
	t.Run("replay as of a cursor", func(t *testing.T) { testReplay(t, e) })
}

func testExportVerifies(t *testing.T, e env) {
	file := export(t, e, audit.ExportOptions{})
	rep, err := audit.VerifyFile(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("a fresh export fails: %v", rep.First())
	}
	if total := count(t, e.pool, `SELECT count(*) FROM events`); rep.Events != total || rep.Trailer.Events != total {
		t.Fatalf("verified %d events, trailer %d, log %d", rep.Events, rep.Trailer.Events, total)
	}
	if problems, err := audit.VerifyAgainst(ctx(t), e.store, rep); err != nil || len(problems) > 0 {
		t.Fatalf("against the log: %v %v", problems, err)
	}
}

// lines splits an export into its lines (with their line ends).
func lines(file []byte) [][]byte {
	var out [][]byte
	for _, l := range bytes.SplitAfter(file, []byte("\n")) {
		if len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// lineOf finds the line of an event: the n-th event line of stream (0-based).
func lineOf(t *testing.T, ls [][]byte, stream string, n int) int {
	t.Helper()
	for i, l := range ls {
		if bytes.Contains(l, []byte(`"stream":"`+stream+`"`)) {
			if n == 0 {
				return i
			}
			n--
		}
	}
	t.Fatalf("no event %d of %s", n, stream)
	return 0
}

func streamOf(line []byte) string {
	var l audit.ExportLine
	_ = json.Unmarshal(line, &l)
	return l.Stream
}

func rehash(t *testing.T, line []byte, prev []byte) []byte {
	t.Helper()
	var l audit.ExportLine
	if err := json.Unmarshal(line, &l); err != nil {
		t.Fatal(err)
	}
	at, _ := time.Parse(time.RFC3339Nano, l.RecordedAt)
	if prev != nil {
		l.PrevHash = hex.EncodeToString(prev)
	}
	p, _ := hex.DecodeString(l.PrevHash)
	h := eventstore.Hash(eventstore.HashInput{PrevHash: p, StreamID: l.Stream, StreamType: l.StreamType, Version: l.Version,
		Type: l.Type, SchemaVersion: l.SchemaVersion, Payload: l.Payload, Metadata: l.Metadata, CommandID: l.CommandID, RecordedAt: at})
	l.Hash = hex.EncodeToString(h)
	b, _ := json.Marshal(l)
	return append(b, '\n')
}

func testTampering(t *testing.T, e env) {
	file := export(t, e, audit.ExportOptions{})
	ls := lines(file)
	n := len(ls) // the last line is the trailer
	stream := "node-node-20"
	first, second := lineOf(t, ls, stream, 1), lineOf(t, ls, stream, 2)
	// Two neighbouring lines of different streams.
	swap := first
	for streamOf(ls[swap]) == streamOf(ls[swap+1]) {
		swap++
	}
	lastOfStream := -1
	for i := range ls {
		if bytes.Contains(ls[i], []byte(`"stream":"`+stream+`"`)) {
			lastOfStream = i
		}
	}

	cases := []struct {
		name   string
		tamper func(ls [][]byte) [][]byte
		line   int // 1-based line of the first problem
		reason string
	}{
		{"payload edited", func(ls [][]byte) [][]byte {
			ls[first] = bytes.Replace(ls[first], []byte(`"nodeId":"node-20"`), []byte(`"nodeId":"node-21"`), 1)
			return ls
		}, first + 1, "altered"},
		{"time edited", func(ls [][]byte) [][]byte {
			ls[first] = bytes.Replace(ls[first], []byte(`"recordedAt":"20`), []byte(`"recordedAt":"19`), 1)
			return ls
		}, first + 1, "altered"},
		{"edited and rehashed: the next event's link breaks", func(ls [][]byte) [][]byte {
			edited := bytes.Replace(ls[first], []byte(`"nodeId":"node-20"`), []byte(`"nodeId":"node-21"`), 1)
			ls[first] = rehash(t, edited, nil)
			return ls
		}, second + 1, "previous-hash link"},
		{"an event removed", func(ls [][]byte) [][]byte {
			return append(ls[:first:first], ls[first+1:]...)
		}, first + 1, "jumps from version"},
		{"two events of different streams swapped", func(ls [][]byte) [][]byte {
			ls[swap], ls[swap+1] = ls[swap+1], ls[swap]
			return ls
		}, swap + 2, "out of order"},
		{"an event moved later", func(ls [][]byte) [][]byte {
			moved := ls[first]
			rest := append(ls[:first:first], ls[first+1:n-1]...)
			return append(append(rest, moved), ls[n-1])
		}, first + 1, "jumps from version"},
		{"the trailer cut off", func(ls [][]byte) [][]byte { return ls[:n-1] }, n - 1, "without its trailer"},
		{"cut in the middle of a line", func(ls [][]byte) [][]byte {
			return append(ls[:n-2:n-2], ls[n-2][:20])
		}, n - 1, "cut short"},
		{"the end of one stream removed, the digest fixed up", func(ls [][]byte) [][]byte {
			out := append(ls[:lastOfStream:lastOfStream], ls[lastOfStream+1:]...)
			var tr struct {
				Trailer audit.Trailer `json:"trailer"`
			}
			_ = json.Unmarshal(out[len(out)-1], &tr)
			d := sha256sum(out[:len(out)-1])
			tr.Trailer.Digest, tr.Trailer.Events = d, tr.Trailer.Events-1
			b, _ := json.Marshal(tr)
			out[len(out)-1] = append(b, '\n')
			return out
		}, n - 1, "events at its end were removed"},
		{"a line appended after the trailer", func(ls [][]byte) [][]byte { return append(ls, ls[0]) }, n + 1, "after the trailer"},
		{"garbage line", func(ls [][]byte) [][]byte { ls[3] = []byte("hello\n"); return ls }, 4, "not a JSON object"},
		{"a line of JSON that is no event, late in the file", func(ls [][]byte) [][]byte {
			ls[n-3] = []byte(`{"position":"seven"}` + "\n")
			return ls
		}, n - 2, "not an event line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			copied := make([][]byte, len(ls))
			for i := range ls {
				copied[i] = bytes.Clone(ls[i])
			}
			rep, err := audit.VerifyFile(bytes.NewReader(bytes.Join(c.tamper(copied), nil)))
			if err != nil {
				t.Fatal(err)
			}
			p := rep.First()
			if p == nil {
				t.Fatal("the tampered file verified")
			}
			if p.Line != c.line || !strings.Contains(p.Reason, c.reason) {
				t.Fatalf("first problem %q; want line %d, %q", p.Error(), c.line, c.reason)
			}
		})
	}

	// A forger who recomputes every hash, the digest and the heads passes
	// offline verification; the log disagrees.
	t.Run("rewritten consistently, caught against the log", func(t *testing.T) {
		out := make([][]byte, 0, n)
		prev := map[string][]byte{}
		heads := map[string]audit.Head{}
		for i, l := range ls[:n-1] {
			if i == first {
				l = bytes.Replace(l, []byte(`"nodeId":"node-20"`), []byte(`"nodeId":"node-21"`), 1)
			}
			var el audit.ExportLine
			_ = json.Unmarshal(l, &el)
			l = rehash(t, l, prev[el.Stream])
			_ = json.Unmarshal(l, &el)
			h, _ := hex.DecodeString(el.Hash)
			prev[el.Stream] = h
			heads[el.Stream] = audit.Head{Version: el.Version, Hash: el.Hash}
			out = append(out, l)
		}
		var tr struct {
			Trailer audit.Trailer `json:"trailer"`
		}
		_ = json.Unmarshal(ls[n-1], &tr)
		tr.Trailer.Digest, tr.Trailer.Heads = sha256sum(out), heads
		b, _ := json.Marshal(tr)
		out = append(out, append(b, '\n'))
		rep, err := audit.VerifyFile(bytes.NewReader(bytes.Join(out, nil)))
		if err != nil || !rep.OK() {
			t.Fatalf("the consistent forgery should pass offline: %v %v", rep.First(), err)
		}
		problems, err := audit.VerifyAgainst(ctx(t), e.store, rep)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) == 0 || problems[0].StreamID != stream {
			t.Fatalf("against the log: %v", problems)
		}
	})
}

func sha256sum(ls [][]byte) string {
	h := sha256.New()
	for _, l := range ls {
		h.Write(l)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func testExportRanges(t *testing.T, e env) {
	var midAt time.Time
	if err := e.pool.QueryRow(ctx(t), `SELECT recorded_at FROM events WHERE position = $1`, e.mid.Position).Scan(&midAt); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    audit.ExportOptions
		want string
		args []any
	}{
		{"after a cursor", audit.ExportOptions{From: audit.Point{Cursor: e.mid}},
			`SELECT count(*) FROM events WHERE (tx_id, position) > ($1::xid8, $2)`, []any{e.mid.TxID, e.mid.Position}},
		{"up to a cursor", audit.ExportOptions{To: audit.Point{Cursor: e.mid}},
			`SELECT count(*) FROM events WHERE (tx_id, position) <= ($1::xid8, $2)`, []any{e.mid.TxID, e.mid.Position}},
		{"up to a time", audit.ExportOptions{To: audit.Point{Time: midAt}},
			`SELECT count(*) FROM events WHERE recorded_at <= $1`, []any{midAt}},
		{"one stream, from a time", audit.ExportOptions{StreamID: "node-node-20", From: audit.Point{Time: midAt}},
			`SELECT count(*) FROM events WHERE stream_id = 'node-node-20' AND recorded_at >= $1`, []any{midAt}},
		{"a stream that does not exist", audit.ExportOptions{StreamID: "node-nope"}, `SELECT 0`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := audit.VerifyFile(bytes.NewReader(export(t, e, c.o)))
			if err != nil || !rep.OK() {
				t.Fatalf("%v %v", rep.First(), err)
			}
			if want := count(t, e.pool, c.want, c.args...); rep.Events != want {
				t.Fatalf("exported %d events, want %d", rep.Events, want)
			}
		})
	}
}

func testBadPoints(t *testing.T, e env) {
	for _, s := range []string{"", "yesterday", "12-", "-4", "2025-13-45"} {
		var bad *audit.MalformedPointError
		if _, err := audit.ParsePoint(s); !errors.As(err, &bad) || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%q: got %v", s, err)
		}
	}
	unknown := audit.Point{Cursor: eventstore.Cursor{TxID: e.last.TxID + 100, Position: 1}}
	before := audit.Point{Time: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
	var uc *projections.UnknownCursorError
	var bf *projections.BeforeFirstEventError
	if _, err := audit.AsOf(ctx(t), e.store, audit.NodeKind, "node-20", unknown); !errors.As(err, &uc) {
		t.Errorf("unknown cursor: %v", err)
	}
	// Before the log began, every entity did not exist yet.
	if st, err := audit.AsOf(ctx(t), e.store, audit.NodeKind, "node-20", before); err != nil || st.Exists() {
		t.Errorf("time before the log: %+v, %v", st, err)
	}
	if _, err := audit.Export(ctx(t), e.store, &bytes.Buffer{}, audit.ExportOptions{To: unknown}); !errors.As(err, &uc) {
		t.Errorf("export to an unknown cursor: %v", err)
	}
	if _, err := audit.Replay(ctx(t), e.store, e.pool, before); !errors.As(err, &bf) {
		t.Errorf("replay before the log: %v", err)
	}
	if _, err := audit.Replay(ctx(t), e.store, e.pool, audit.Point{Start: true}); !errors.Is(err, audit.ErrEmptyReplay) {
		t.Errorf("replay to the start: %v", err)
	}
	var nf *domain.NotFoundError
	if _, err := audit.AsOf(ctx(t), e.store, audit.NodeKind, "no-such-node", audit.Point{}); !errors.As(err, &nf) {
		t.Errorf("unknown node: %v", err)
	}
}

func testAsOf(t *testing.T, e env) {
	const id = "node-20"
	stream := "node-" + id
	evs, err := e.store.ReadStream(ctx(t), stream, eventstore.ReadStreamOptions{})
	if err != nil || len(evs) < 4 {
		t.Fatalf("stream %s: %d events, %v", stream, len(evs), err)
	}
	at := evs[2].Cursor()
	st, err := audit.AsOf(ctx(t), e.store, audit.NodeKind, id, audit.Point{Cursor: at})
	if err != nil {
		t.Fatal(err)
	}
	var want node.Node
	for _, r := range evs[:3] {
		ev, _ := e.store.Decode(r)
		want.Apply(ev)
	}
	got, ok := st.Entity.(*node.Node)
	if !ok || st.Version != 3 || st.Cursor != at || got.Status != want.Status || got.UpdatedAt != want.UpdatedAt {
		t.Fatalf("as of %s: %+v, want %+v", at, st, want)
	}
	// Before the node was enrolled (the log's first event is earlier).
	if st, err := audit.AsOf(ctx(t), e.store, audit.NodeKind, id, audit.Point{Start: true}); err != nil || st.Exists() {
		t.Fatalf("at the start: %+v %v", st, err)
	}
	d, err := audit.DiffOf(ctx(t), e.store, audit.NodeKind, id, audit.Point{}, audit.Point{Cursor: evs[0].Cursor()})
	if err != nil {
		t.Fatal(err)
	}
	if d.From.Version != 1 || d.To.Version != int64(len(evs)) || len(d.Events) != len(evs)-1 || len(d.Changes) == 0 {
		t.Fatalf("diff from v%d to v%d, %d events, %d changes", d.From.Version, d.To.Version, len(d.Events), len(d.Changes))
	}
	for _, c := range d.Changes {
		if c.Path == "updatedAt" {
			return
		}
	}
	t.Fatalf("diff misses updatedAt: %+v", d.Changes)
}

func testReplay(t *testing.T, e env) {
	res, err := audit.Replay(ctx(t), e.store, e.pool, audit.Point{Cursor: e.mid})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := audit.DropReplay(context.Background(), e.pool, res.Schema); err != nil {
			t.Error(err)
		}
	}()
	if res.Cursor != e.mid || len(res.Failed) > 0 {
		t.Fatalf("replayed to %s (want %s), failed %v", res.Cursor, e.mid, res.Failed)
	}
	nodes := pgx.Identifier{res.Schema, "nodes"}.Sanitize()
	rows, err := e.pool.Query(ctx(t), `SELECT id, status FROM `+nodes)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			t.Fatal(err)
		}
		got[id] = status
	}
	rows.Close()
	if len(got) == 0 {
		t.Fatal("no nodes in the replay")
	}
	for id, status := range got {
		st, err := audit.AsOf(ctx(t), e.store, audit.NodeKind, id, audit.Point{Cursor: e.mid})
		if err != nil {
			t.Fatal(err)
		}
		if n := st.Entity.(*node.Node); string(n.Status) != status {
			t.Errorf("node %s: replay says %s, its stream as of %s says %s", id, status, e.mid, n.Status)
		}
	}
	want := count(t, e.pool, `SELECT count(*) FROM events WHERE (tx_id, position) <= ($1::xid8, $2)`, e.mid.TxID, e.mid.Position)
	if n := count(t, e.pool, `SELECT sum(events) FROM `+pgx.Identifier{res.Schema, "analytics_event_volume_daily"}.Sanitize()); n != want {
		t.Errorf("replay's event volume %d, want %d", n, want)
	}
	if err := audit.DropReplay(ctx(t), e.pool, "public"); err == nil {
		t.Error("dropping a schema that is not a replay's was allowed")
	}
}
