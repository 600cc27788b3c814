package auditapi

import (
	"errors"
	"net/http"

	"github.com/rs/zerolog"

	"cairn/domain"
	"cairn/eventstore"
	"cairn/projections/audit"
)

// ThroughHeader carries the cursor an export ends at, ahead of its lines: a
// client whose download broke asks for the events after the last line it
// received up to this cursor, and so gets the same stretch of the log.
const ThroughHeader = "Cairn-Export-Through"

// Export serves GET /audit/export?from=&to=&stream=: the log as NDJSON,
// exactly as `cairn audit export` writes it from the database (from and to
// take a cursor or a time, stream one stream's id).
func Export(store Log, authn Authenticator, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorize(w, r, authn) {
			return
		}
		q := r.URL.Query()
		var o audit.ExportOptions
		for _, p := range []struct {
			name string
			to   *audit.Point
		}{{"from", &o.From}, {"to", &o.To}} {
			if v := q.Get(p.name); v != "" {
				pt, err := audit.ParsePoint(v)
				if err != nil {
					http.Error(w, p.name+": "+err.Error(), http.StatusBadRequest)
					return
				}
				*p.to = pt
			}
		}
		o.StreamID = q.Get("stream")
		o.Range = func(_, to eventstore.Cursor) {
			w.Header().Set(ThroughHeader, to.String())
			w.Header().Set("Content-Type", "application/x-ndjson")
		}
		out := &flushing{w: w, rc: http.NewResponseController(w)}
		_, err := audit.Export(r.Context(), store, out, o)
		if err == nil {
			return
		}
		if !out.wrote {
			// Nothing written yet: the request was wrong, or the log away.
			w.Header().Del(ThroughHeader)
			status := http.StatusServiceUnavailable
			if errors.Is(err, domain.ErrInvalid) || errors.Is(err, domain.ErrNotFound) {
				status = http.StatusBadRequest
			}
			http.Error(w, err.Error(), status)
			return
		}
		// Mid-stream: the client sees a piece without a trailer, and
		// resumes.
		log.Warn().Err(err).Msg("an audit export broke off")
	})
}

// flushing hands each of the exporter's writes (it buffers a MiB) to the
// client at once: an export is long, and a client resumes after the last
// line it received.
type flushing struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	wrote bool
}

func (f *flushing) Write(b []byte) (int, error) {
	f.wrote = true
	n, err := f.w.Write(b)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}
