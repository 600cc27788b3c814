package apierr

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// The database going away (a restart, a failover) is UNAVAILABLE, which a
// client retries; a request that ran out of its own time is not.
func TestClassifyDatabaseAway(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"admin shutdown", fmt.Errorf("append: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}), CodeUnavailable},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, CodeUnavailable},
		{"connection failure", &pgconn.PgError{Code: "08006"}, CodeUnavailable},
		{"connection cut mid-answer", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), CodeUnavailable},
		{"the request's own deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), CodeInternal},
		{"a constraint the code should have checked", &pgconn.PgError{Code: "23505"}, CodeInternal},
	} {
		code, _, ext := Classify(tt.err)
		if code != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, code, tt.want)
		}
		if code == CodeUnavailable && ext["retryable"] != true {
			t.Errorf("%s: not marked retryable: %v", tt.name, ext)
		}
	}
}
