package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"

	"cairn/eventstore"
	"cairn/internal/workpool"
)

// keptRun is a run of n kept results of events from position from.
func keptRun(from, n int, data func(i int) string) []pushed {
	run := make([]pushed, n)
	for i := range run {
		run[i] = pushed{shared: true, event: eventstore.Cursor{TxID: uint64(from + i), Position: int64(from + i)}, data: json.RawMessage(data(i))}
	}
	return run
}

// A run framed at once is byte for byte what the transports write result
// by result: as server-sent events and as WebSocket "next" messages, an
// empty result as null and a result with a line break on one line.
func TestKeptRunsAreFramedAsEachResultIs(t *testing.T) {
	t.Parallel()
	results := []string{`{"n":1}`, ``, "{\"n\":\n3}", `{"s":"` + strings.Repeat("x", 70_000) + `"}`}
	run := keptRun(1, len(results), func(i int) string { return results[i] })

	w := &responseRecorder{header: http.Header{}}
	s := &sseStream{w: w, flusher: http.NewResponseController(w), buffers: newHeldBuffers()}
	for _, it := range run {
		s.next(&graphql.Response{Data: it.data})
	}
	if got, want := string(appendEventsNext(nil, run)), strings.Join(w.writes, ""); got != want {
		t.Fatalf("events framed as a run:\n%.300q\none by one:\n%.300q", got, want)
	}

	quoted := []byte(`"7"`)
	var want []byte
	for _, it := range run {
		msg := []byte(`{"id":"7","type":"next","payload":`)
		msg, _ = appendResponse(msg, &graphql.Response{Data: it.data})
		want = appendTextFrame(want, append(msg, '}'))
	}
	if got := appendFramesNext(nil, quoted, run); !bytes.Equal(got, want) {
		t.Fatalf("frames of a run:\n%.300q\none by one:\n%.300q", got, want)
	}
}

// The first subscription to frame a run keeps it for the others of the
// same operation, framing and events; any of those differing frames its
// own. Runs past maxKeptRun are not kept, and the oldest run goes first.
func TestKeptRunsAreSharedByOperationFramingAndEvents(t *testing.T) {
	t.Parallel()
	r := newKeptRuns(2)
	framings := 0
	frame := func(b []byte, run []pushed) []byte {
		framings++
		return append(b, fmt.Sprintf("framing %d of %d results", framings, len(run))...)
	}
	op, other := [32]byte{1}, [32]byte{2}
	small := func(int) string { return `{}` }
	run := keptRun(10, 3, small)
	first := r.framed(op, runFraming{}, run, frame)
	cases := []struct {
		name    string
		op      [32]byte
		framing runFraming
		run     []pushed
		shared  bool
	}{
		{"same run", op, runFraming{}, keptRun(10, 3, small), true},
		{"another operation", other, runFraming{}, run, false},
		{"another framing", op, runFraming{webSocket: true, id: "1"}, run, false},
		{"a longer run", op, runFraming{}, keptRun(10, 4, small), false},
		{"later events", op, runFraming{}, keptRun(11, 3, small), false},
	}
	for _, tc := range cases {
		before := framings
		got := r.framed(tc.op, tc.framing, tc.run, frame)
		if shared := framings == before && &got[0] == &first[0]; shared != tc.shared {
			t.Errorf("%s: shared %v, want %v", tc.name, shared, tc.shared)
		}
	}
	if r.Len() != 2 {
		t.Errorf("%d runs kept, want 2", r.Len())
	}
	long := func(b []byte, run []pushed) []byte { return append(b, make([]byte, maxKeptRun+1)...) }
	before := r.Len()
	r.framed(op, runFraming{}, keptRun(100, 1, small), long)
	if r.Len() != before {
		t.Errorf("a run of %d bytes was kept", maxKeptRun+1)
	}
}

// A Push hands the kept results ready together to its transport as one
// run, in order with the values around them, which are taken one by one.
func TestPushHandsKeptResultsAsRuns(t *testing.T) {
	t.Parallel()
	p := &Push{workers: workpool.New(0), claimed: true}
	p.Sent()
	p.SentKept(Kept{Event: eventstore.Cursor{Position: 1}, Data: json.RawMessage(`1`)}, Kept{Event: eventstore.Cursor{Position: 2}, Data: json.RawMessage(`2`)})
	p.SentKept(Kept{Event: eventstore.Cursor{Position: 3}, Data: json.RawMessage(`3`)})
	p.Sent()
	p.SentKept(Kept{Event: eventstore.Cursor{Position: 4}, Data: json.RawMessage(`4`)})
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	p.arm(func(it pushed) bool {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, "value")
		return false
	}, func(run []pushed) {
		mu.Lock()
		defer mu.Unlock()
		var s []string
		for _, it := range run {
			s = append(s, string(it.data))
		}
		got = append(got, "run "+strings.Join(s, ","))
		if run[len(run)-1].event.Position == 4 {
			close(done)
		}
	})
	<-done
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"value", "run 1,2,3", "value", "run 4"}; strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("taken: %q, want %q", got, want)
	}
}
