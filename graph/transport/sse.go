package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"cairn/graph/apierr"
)

// sseTransport serves GraphQL over server-sent events in the form gqlgen's
// transport does: a comment line first, each result as "event: next" with
// its JSON on one data line, "event: complete" at the end, and ": ping"
// while the stream is quiet. (A result's data is written as the executor
// made it, so <, > and & in its strings are not escaped as \u003c and so
// on, as marshalling it again did: the same JSON either way.)
//
// It exists for what a subscriber costs under a flood of events. The
// results a pushing subscription (Pushed) has ready at once are written
// together and flushed once, not one flush (a system call) each; the
// keep-alive runs from a timer, not a goroutine per stream; and a result
// is written as gqlgen made it, not marshalled a second time.
type sseTransport struct{ h *Handler }

var _ graphql.Transport = sseTransport{}

func (sseTransport) Supports(r *http.Request) bool {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return false
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && r.Method == http.MethodPost && mediaType == "application/json"
}

func (t sseTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	req, _ := ctx.Value(requestKey{}).(*request)
	if req == nil {
		writeHTTPError(w, http.StatusBadRequest, apierr.CodeBadRequest, "the request could not be read")
		return
	}
	params := req.params
	params.Headers = r.Header
	start := graphql.Now()
	params.ReadTime = graphql.TraceTiming{Start: start, End: start}
	rc, opErr := exec.CreateOperationContext(ctx, &params)
	ctx = graphql.WithOperationContext(ctx, rc)

	header := w.Header()
	header.Set("Cache-Control", "no-cache")
	header.Set("Content-Type", "text/event-stream")
	if r.ProtoMajor == 1 {
		// The stream is the connection's last response, ended by closing
		// it, as the server-sent events recommendation sets it up: not
		// chunked, a burst of events leaves in one write, where each chunk
		// took three (its size, its bytes, its end) once it outgrew the
		// connection's buffer.
		header.Set("Transfer-Encoding", "identity")
	}
	s := &sseStream{w: w, flusher: http.NewResponseController(w), interval: t.h.opts.KeepAlive, buffers: t.h.heldBuffers}
	s.open()
	defer s.close()
	if opErr != nil {
		s.next(exec.DispatchError(ctx, opErr))
		s.complete()
		return
	}
	var push *Push
	if rc.Operation != nil && rc.Operation.Operation == ast.Subscription {
		push = newPush(ctx, t.h.deps.Workers, t.h.shared)
		push.busy, push.idle = s.cork, s.uncork
		ctx = context.WithValue(ctx, pushKey{}, push)
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	if push != nil {
		// The request's goroutine waits while a worker writes what the
		// subscription makes ready; after the client left, the stream is
		// closed and a late result is dropped.
		finished := make(chan struct{})
		take := func(it pushed) (done bool) {
			defer func() {
				if p := recover(); p != nil {
					s.next(&graphql.Response{Errors: gqlerror.List{gqlerror.Errorf("%s", t.h.recoverPanic(ctx, p).Error())}})
					done = true
				}
				if done {
					close(finished)
				}
			}()
			resp := push.result(ctx, it, responses)
			if resp == nil {
				return true
			}
			s.next(resp)
			return false
		}
		takeKept := func(run []pushed) {
			s.nextFramed(t.h.keptRuns.framed(push.op, runFraming{}, run, appendEventsNext))
		}
		if push.arm(take, takeKept) {
			select {
			case <-finished:
				s.complete()
			case <-ctx.Done():
			}
			return
		}
	}
	for {
		resp := responses(ctx)
		if resp == nil {
			break
		}
		s.next(resp)
		s.flush()
	}
	s.complete()
}

// sseStream writes one stream's events. Results, keep-alives and flushes
// come from different goroutines; once the request's handler returns, the
// stream is closed and writes nothing more.
type sseStream struct {
	w        http.ResponseWriter
	flusher  *http.ResponseController
	interval time.Duration // of the keep-alive; 0: none

	buffers *heldBuffers // a stream's while it holds events back

	mu      sync.Mutex
	closed  bool
	pending bool      // written since the last flush
	corks   int       // flushes wait until as many uncork calls
	last    time.Time // of the last flush
	timer   *time.Timer
	// held is the events not yet written: while corked, a burst is put
	// together here and written to the response in one piece (each write
	// to a response cost more than the event's bytes); nil when none.
	held *[]byte
}

// open starts the stream as gqlgen's transport does, with a comment line.
func (s *sseStream) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeLocked([]byte(":\n\n"))
	s.flushLocked()
	if s.interval > 0 {
		s.timer = time.AfterFunc(s.interval, s.keepAlive)
	}
}

// next writes one result; a flush sends it.
func (s *sseStream) next(resp *graphql.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdLocked(func(b []byte) []byte { return appendEvent(b, resp) })
}

// nextFramed writes results framed already as events (keptRuns); a flush
// sends them.
func (s *sseStream) nextFramed(framed []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdLocked(func(b []byte) []byte { return append(b, framed...) })
}

// holdLocked adds what add appends to the events held back, and writes
// them unless the stream is corked and holds less than corkLimit.
func (s *sseStream) holdLocked(add func([]byte) []byte) {
	if s.closed {
		return
	}
	if s.held == nil {
		s.held = s.buffers.get()
	}
	*s.held = add(*s.held)
	if s.corks == 0 || len(*s.held) >= corkLimit {
		s.writeHeldLocked()
	}
}

// appendEvent appends a result as a "next" event.
func appendEvent(b []byte, resp *graphql.Response) []byte {
	const head = "event: next\ndata: "
	start := len(b)
	b = append(b, head...)
	b, err := appendResponse(b, resp)
	if err != nil {
		b = append(b[:start], head...)
		b, _ = appendResponse(b, &graphql.Response{Errors: gqlerror.List{gqlerror.Errorf("could not encode a result: %v", err)}})
	}
	return append(compactLine(b, start+len(head)), "\n\n"...)
}

// compactLine makes b[dataAt:], an event's data, one line: gqlgen's
// results have no line breaks, but a result with one (a JSON value written
// as it was stored) would end the event early.
func compactLine(b []byte, dataAt int) []byte {
	if bytes.IndexByte(b[dataAt:], '\n') >= 0 {
		var compact bytes.Buffer
		if json.Compact(&compact, b[dataAt:]) == nil {
			b = append(b[:dataAt], compact.Bytes()...)
		}
	}
	return b
}

// writeHeldLocked writes the events held back to the response.
func (s *sseStream) writeHeldLocked() {
	if s.held == nil {
		return
	}
	b := s.held
	s.held = nil
	s.writeLocked(*b)
	s.buffers.put(b)
}

// complete ends the stream's events and sends what is left.
func (s *sseStream) complete() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeHeldLocked()
	s.writeLocked([]byte("event: complete\n\n"))
	s.flushLocked()
}

func (s *sseStream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

// cork holds back the flushes of results until as many uncork calls have
// been made; the last one flushes.
func (s *sseStream) cork() {
	s.mu.Lock()
	s.corks++
	s.mu.Unlock()
}

func (s *sseStream) uncork() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corks--
	if s.corks == 0 {
		s.flushLocked()
	}
}

// keepAlive pings a stream that sent nothing for the keep-alive interval.
func (s *sseStream) keepAlive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if wait := s.interval - time.Since(s.last); wait > 0 {
		s.timer.Reset(wait)
		return
	}
	s.writeLocked([]byte(": ping\n\n"))
	s.flushLocked()
	s.timer.Reset(s.interval)
}

// close stops the stream: the response is the handler's no more.
func (s *sseStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.writeHeldLocked() // writes nothing now: gives the buffer back
	if s.timer != nil {
		s.timer.Stop()
	}
}

func (s *sseStream) writeLocked(b []byte) {
	if s.closed {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.closed = true // the client is gone; its request ends with it
		return
	}
	s.pending = true
}

func (s *sseStream) flushLocked() {
	s.writeHeldLocked()
	if s.closed || !s.pending {
		return
	}
	s.pending = false
	s.last = time.Now()
	if err := s.flusher.Flush(); err != nil {
		s.closed = true
	}
}
