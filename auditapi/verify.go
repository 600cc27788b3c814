package auditapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"cairn/eventstore"
	"cairn/projections/audit"
)

// MaxReportBytes bounds the report a client sends to be compared: its
// stream heads, about 100 bytes a stream.
const MaxReportBytes = 64 << 20

// VerifyAgainst serves POST /audit/verify-against: the report of an
// export verified offline (audit.FileReport, JSON) is compared with the
// log, and the problems found are the answer ([] when it agrees).
func VerifyAgainst(store Log, authn Authenticator) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorize(w, r, authn) {
			return
		}
		var rep audit.FileReport
		body := http.MaxBytesReader(w, r.Body, MaxReportBytes)
		if err := json.NewDecoder(body).Decode(&rep); err != nil {
			status := http.StatusBadRequest
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				status = http.StatusRequestEntityTooLarge
			}
			http.Error(w, "the body must be an export's verification report (JSON): "+err.Error(), status)
			return
		}
		problems, err := audit.VerifyAgainst(r.Context(), store, rep)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if problems == nil {
			problems = []audit.Problem{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(problems)
	})
}

// Chains checks the log's hash chains (*eventstore.Store).
type Chains interface {
	Verify(ctx context.Context, streamID string) (eventstore.VerifyReport, error)
}

// VerifyLog serves GET /audit/verify?stream=: every stream's hash chain
// (or one stream's) checked in the database, as eventstore.VerifyReport
// JSON. It reads the whole log: it is for auditors, and has no cost limit
// beyond that.
func VerifyLog(chains Chains, authn Authenticator) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorize(w, r, authn) {
			return
		}
		rep, err := chains.Verify(r.Context(), r.URL.Query().Get("stream"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
}
