package httpserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// RequestIDHeader carries a request's id in and out: a caller's own id is
// kept, so a request can be followed across services.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// RequestID returns the id of the request a handler's context belongs to.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// instrument gives every request an id and a logger carrying it (for
// zerolog.Ctx), turns a handler's panic into a logged 500, counts and times
// the request by route, and logs it at debug level.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = rand.Text()
		}
		w.Header().Set(RequestIDHeader, id)
		log := s.log.With().Str("request_id", id).Logger()
		r = r.WithContext(context.WithValue(log.WithContext(r.Context()), requestIDKey{}, id))
		rec := &statusRecorder{ResponseWriter: w}

		defer func() {
			// r is the request the mux saw, so it holds the matched pattern.
			route := routeLabel(r.Pattern)
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler { // a deliberate abort: let net/http drop the connection
					s.reqMetrics.observe(route, rec.statusCode(), time.Since(start))
					panic(v)
				}
				log.Error().Str("route", route).Str("panic", fmt.Sprint(v)).Str("stack", string(debug.Stack())).Msg("handler panicked")
				if rec.status == 0 {
					http.Error(rec, "internal server error", http.StatusInternalServerError)
				}
			}
			elapsed := time.Since(start)
			s.reqMetrics.observe(route, rec.statusCode(), elapsed)
			log.Debug().
				Str("method", r.Method).
				Str("path", r.URL.Path).
				Str("route", route).
				Int("status", rec.statusCode()).
				Int64("bytes", rec.bytes).
				Dur("duration", elapsed).
				Str("remote", r.RemoteAddr).
				Msg("request")
		}()
		next.ServeHTTP(rec, r)
	})
}

// validRequestID accepts ids that are safe to log and echo back.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// routeLabel is the matched mux pattern without its method, so that metric
// labels stay few whatever paths clients send.
func routeLabel(pattern string) string {
	if pattern == "" {
		return "unmatched"
	}
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		return pattern[i+1:]
	}
	return pattern
}

// statusRecorder remembers the status and size of a response. It passes
// Flush and Hijack through, which streaming responses and WebSocket
// upgrades need, and Unwrap for http.ResponseController.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // 1xx responses are not the final status
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		f.Flush()
	}
}

func (w *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("hijack: %T does not support it", w.ResponseWriter)
	}
	c, rw, err := h.Hijack()
	if err == nil {
		w.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusCode is what the client got: 200 when the handler wrote nothing.
func (w *statusRecorder) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (m *httpMetrics) observe(route string, code int, elapsed time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(route).Observe(elapsed.Seconds())
}
