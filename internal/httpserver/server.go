// Package httpserver is cairnd's HTTP front: one mux carrying the operational
// endpoints (/healthz, /readyz, /metrics) and whatever the API mounts next to
// them, behind middleware that logs, counts and times every request.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"cairn/eventstore"
	"cairn/migrations"
)

// DefaultDrainTimeout bounds how long Serve waits for in-flight requests after
// its context ends.
const DefaultDrainTimeout = 15 * time.Second

// Log is the event log as readiness checks it. *eventstore.Store
// implements it.
type Log interface {
	Head(ctx context.Context) (eventstore.Cursor, error)
}

// Deps are what the server needs. Pool, Store and Schema are required.
type Deps struct {
	Log zerolog.Logger
	// Pool is the application's pool (acting as the app role): readiness
	// pings it and /metrics reports its connections.
	Pool *pgxpool.Pool
	// Store is the event log; readiness checks the app role can read it.
	Store Log
	// StoreStats, if set, gives /metrics the event store's counters.
	StoreStats func() eventstore.Stats
	// Schema reports the database's schema version against the binary's
	// migrations. It needs a connection that may read the migration table,
	// which the app role may not.
	Schema func(context.Context) (migrations.Status, error)
	// Metrics is the registry /metrics serves. The server registers the Go
	// and process collectors, its HTTP metrics and the pool's gauges on it;
	// other components may register theirs. Nil: a new registry.
	Metrics *prometheus.Registry
	// DrainTimeout overrides DefaultDrainTimeout.
	DrainTimeout time.Duration
}

// Server routes cairnd's HTTP requests. Build it with New, mount further
// handlers with Handle, then run it with Serve.
type Server struct {
	log          zerolog.Logger
	pool         *pgxpool.Pool
	store        Log
	schema       func(context.Context) (migrations.Status, error)
	metrics      *prometheus.Registry
	drainTimeout time.Duration

	mux        *http.ServeMux
	reqMetrics *httpMetrics
	ready      *readiness
	handler    http.Handler
	starting   []startingPart
	// notes are told with every "ready": conditions an operator should know
	// of that do not stop the server from taking traffic.
	notes []string
}

// startingPart is a part of the server that must have started before it
// takes traffic.
type startingPart struct {
	what string
	done <-chan struct{}
}

// New builds a server and registers its metrics.
func New(d Deps) (*Server, error) {
	if d.Pool == nil || d.Store == nil || d.Schema == nil {
		return nil, errors.New("httpserver: Pool, Store and Schema are required")
	}
	if d.Metrics == nil {
		d.Metrics = prometheus.NewRegistry()
	}
	if d.DrainTimeout <= 0 {
		d.DrainTimeout = DefaultDrainTimeout
	}
	s := &Server{
		log:          d.Log,
		pool:         d.Pool,
		store:        d.Store,
		schema:       d.Schema,
		metrics:      d.Metrics,
		drainTimeout: d.DrainTimeout,
		mux:          http.NewServeMux(),
		reqMetrics:   newHTTPMetrics(),
	}
	s.ready = newReadiness(s.checkReady)
	cs := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		s.reqMetrics.requests,
		s.reqMetrics.duration,
		newPoolCollector("app", d.Pool),
	}
	if d.StoreStats != nil {
		cs = append(cs, newStoreCollector(d.StoreStats))
	}
	for _, c := range cs {
		if err := d.Metrics.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics (is the registry shared with another server?): %w", err)
		}
	}
	s.routes()
	s.handler = s.instrument(s.mux)
	return s, nil
}

// routes registers the operational endpoints.
func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.handleHealthz)
	s.mux.HandleFunc("GET /readyz", s.handleReadyz)
	s.mux.Handle("GET /metrics", s.metricsHandler())
}

// ReadyAfter keeps /readyz answering "starting" until done is closed: what
// names the part still starting (the read models' first build, say), so a
// load balancer sends no request that part would fail. Call it before Serve.
func (s *Server) ReadyAfter(what string, done <-chan struct{}) {
	s.starting = append(s.starting, startingPart{what: what, done: done})
}

// Note adds a line /readyz shows while ready (set before Serve).
func (s *Server) Note(text string) { s.notes = append(s.notes, text) }

// Handle mounts h on the server's mux (net/http ServeMux patterns, such as
// "/graphql" or "POST /api/"). Mount everything before Serve; a pattern that
// conflicts with one already mounted panics, as ServeMux does.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
}

// Handler is the mux wrapped in the server's middleware.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve answers requests on ln until ctx ends, then stops accepting
// connections and waits up to the drain timeout for requests in flight. It
// returns nil after a clean drain. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler: s.handler,
		// Slow clients must not hold connections open before sending a
		// request; there is no write timeout because subscriptions stream.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          stdlog.New(logWriter{s.log.With().Str("component", "http").Logger()}, "", 0),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("serve HTTP on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	s.log.Info().Dur("timeout", s.drainTimeout).Msg("shutting down: draining in-flight requests")
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.drainTimeout)
	defer cancel()
	if err := hs.Shutdown(drainCtx); err != nil {
		return errors.Join(
			fmt.Errorf("requests still in flight after %s were cut off: %w", s.drainTimeout, err),
			hs.Close())
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve HTTP on %s: %w", ln.Addr(), err)
	}
	return nil
}

// logWriter turns net/http's own log lines (bad TLS handshakes, accept
// errors) into structured warnings.
type logWriter struct{ log zerolog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Warn().Msg(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
