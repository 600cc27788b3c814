// Package auditapi serves the audit trail over HTTP to auditors who reach
// Cairn through its API rather than its database: the export of the log as
// NDJSON, streamed and resumable, and the comparison of an export's stream
// heads with the log.
package auditapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"cairn/auth"
	"cairn/projections/audit"
)

// Authenticator turns a bearer token into a principal (auth.Authenticator).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (auth.Principal, error)
}

// Log is what the endpoints read: the log as an auditor reads it, and its
// chain verification. *eventstore.Store implements it.
type Log interface {
	audit.Log
}

// authorize lets through a caller who may read the whole log (auditors,
// administrators, operators), and answers anyone else.
func authorize(w http.ResponseWriter, r *http.Request, authn Authenticator) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		http.Error(w, "send an auditor's or administrator's API token as Authorization: Bearer TOKEN", http.StatusUnauthorized)
		return false
	}
	p, err := authn.Authenticate(r.Context(), token)
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return false
	case err != nil:
		http.Error(w, "cannot check the token: "+err.Error(), http.StatusServiceUnavailable)
		return false
	}
	if err := auth.Can(p, auth.EventRead, auth.Resource{}); err != nil {
		http.Error(w, "the whole event log is for auditors, administrators and operators: "+err.Error(), http.StatusForbidden)
		return false
	}
	return true
}
