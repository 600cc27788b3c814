package projections

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// transient reports whether err says the database could not be used right
// now (connection lost, shutting down, out of resources, a serialisation
// conflict) rather than that the events could not be applied. Transient
// errors are retried for as long as they last and never park an event:
// otherwise an outage would park every event it met.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		for _, class := range []string{"08", "40", "53", "55", "57", "58"} {
			if strings.HasPrefix(pgErr.Code, class) {
				return true
			}
		}
		return false
	}
	// A connection closed under a statement surfaces as a plain error.
	return strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "unexpected EOF")
}
