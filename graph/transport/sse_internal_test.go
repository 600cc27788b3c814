package transport

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// responseRecorder records each write to a response and the flushes.
type responseRecorder struct {
	mu      sync.Mutex
	header  http.Header
	writes  []string
	flushes int
}

func (r *responseRecorder) Header() http.Header { return r.header }
func (r *responseRecorder) WriteHeader(int)     {}
func (r *responseRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, string(p))
	return len(p), nil
}
func (r *responseRecorder) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushes++
}

// A corked event stream writes a burst of results to the response in one
// piece when the last cork comes out, and what completes it after them.
func TestCorkedEventStreamWritesABurstOnce(t *testing.T) {
	t.Parallel()
	w := &responseRecorder{header: http.Header{}}
	s := &sseStream{w: w, flusher: http.NewResponseController(w), buffers: newHeldBuffers()}
	result := func(n string) *graphql.Response { return &graphql.Response{Data: []byte(`{"n":` + n + `}`)} }
	s.cork()
	s.next(result("1"))
	s.cork() // the transport's worker, taking
	s.next(result("2"))
	s.uncork()
	s.next(result("3"))
	if len(w.writes) != 0 || w.flushes != 0 {
		t.Fatalf("%d writes and %d flushes while corked", len(w.writes), w.flushes)
	}
	s.uncork()
	want := "event: next\ndata: {\"data\":{\"n\":1}}\n\n" +
		"event: next\ndata: {\"data\":{\"n\":2}}\n\n" +
		"event: next\ndata: {\"data\":{\"n\":3}}\n\n"
	if len(w.writes) != 1 || w.writes[0] != want || w.flushes != 1 {
		t.Fatalf("writes %q, %d flushes; want one write of three events, one flush", w.writes, w.flushes)
	}
	// Uncorked, a result is written at once; the end follows it.
	s.next(result("4"))
	s.cork()
	s.next(result("5"))
	s.complete()
	got := strings.Join(w.writes, "")
	if !strings.HasSuffix(got, "{\"n\":5}}\n\nevent: complete\n\n") || !strings.Contains(got, "{\"n\":4}}\n\nevent: next") {
		t.Fatalf("the stream ends %q", got[len(want):])
	}
}
