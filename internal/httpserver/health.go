package httpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

const (
	// readinessTTL is how long a verdict is reused, so that many probes cost
	// one round of database queries a second at most.
	readinessTTL = time.Second
	// readinessTimeout bounds one round of checks; a database slower than
	// this is not fit to serve.
	readinessTimeout = 2 * time.Second
)

// Reasons /readyz gives for not being ready.
const (
	ReasonDatabaseUnreachable = "database_unreachable"
	ReasonSchemaUnknown       = "schema_unknown"
	ReasonMigrationsPending   = "migrations_pending"
	ReasonEventLogUnreadable  = "event_log_unreadable"
	ReasonStarting            = "starting"
)

type notReady struct {
	Reason string
	Detail string
}

// readiness caches the outcome of check for readinessTTL. Concurrent probes
// wait for the one check in progress instead of starting their own.
type readiness struct {
	check func(context.Context) *notReady

	mu        sync.Mutex
	checkedAt time.Time
	verdict   *notReady
}

func newReadiness(check func(context.Context) *notReady) *readiness {
	return &readiness{check: check}
}

// get returns nil when ready. It returns whether the verdict changed since the
// previous check, so that transitions are logged rather than every probe.
func (r *readiness) get(ctx context.Context) (verdict *notReady, changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.checkedAt.IsZero() && time.Since(r.checkedAt) < readinessTTL {
		return r.verdict, false
	}
	// The verdict is shared, so one prober hanging up must not cut it short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readinessTimeout)
	defer cancel()
	v := r.check(ctx)
	changed = r.checkedAt.IsZero() || reasonOf(v) != reasonOf(r.verdict)
	r.verdict, r.checkedAt = v, time.Now()
	return v, changed
}

func reasonOf(v *notReady) string {
	if v == nil {
		return ""
	}
	return v.Reason
}

// checkReady answers whether cairnd can serve: the app role reaches the
// database, the schema is current, and the event log is readable.
func (s *Server) checkReady(ctx context.Context) *notReady {
	if err := s.pool.Ping(ctx); err != nil {
		return &notReady{ReasonDatabaseUnreachable, err.Error()}
	}
	st, err := s.schema(ctx)
	if err != nil {
		return &notReady{ReasonSchemaUnknown, err.Error()}
	}
	if !st.UpToDate() {
		return &notReady{ReasonMigrationsPending, fmt.Sprintf(
			"the database schema is at version %d and this cairnd needs %d: run `cairnd migrate`", st.Current, st.Latest)}
	}
	if _, err := s.store.Head(ctx); err != nil {
		return &notReady{ReasonEventLogUnreadable, err.Error()}
	}
	for _, p := range s.starting {
		select {
		case <-p.done:
		default:
			return &notReady{ReasonStarting, "waiting for " + p.what}
		}
	}
	return nil
}

// handleHealthz answers as long as the process can serve HTTP at all: it
// checks nothing else, so a restart is never triggered by a database outage.
func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "alive"})
}

// handleReadyz tells load balancers whether to send traffic here.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	v, changed := s.ready.get(r.Context())
	if v == nil {
		if changed {
			s.log.Info().Msg("ready")
		}
		if len(s.notes) > 0 {
			writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "notes": s.notes})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
		return
	}
	if changed {
		s.log.Warn().Str("reason", v.Reason).Str("detail", v.Detail).Msg("not ready")
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]string{
		"status": "not ready",
		"reason": v.Reason,
		"detail": v.Detail,
	})
}

func writeJSON(w http.ResponseWriter, code int, body any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// Probes must see the current state, never a cached one.
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	// The status line is already sent; a failed write means the client left.
	_ = json.NewEncoder(w).Encode(body)
}
