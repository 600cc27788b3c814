package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"cairn/graph/apierr"
)

// An error the API does not know is logged as a failure, with the id the
// client is given; a caller that left before its answer (the request's
// context cancelled) is no failure of the server's and is logged at debug
// level only.
func TestPresentErrorLogsFailuresNotDepartures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		cancel    bool
		err       error
		wantLevel string
	}{
		{"an unknown error", false, errors.New("the disk caught fire"), `"level":"error"`},
		{"the caller left", true, fmt.Errorf("poll: %w", context.Canceled), `"level":"debug"`},
		{"cancelled while the caller waits", false, fmt.Errorf("poll: %w", context.Canceled), `"level":"error"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var logged bytes.Buffer
			h := &Handler{log: zerolog.New(&logged).Level(zerolog.DebugLevel)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				cancel()
			}
			out := h.presentError(ctx, c.err)
			if code := out.Extensions["code"]; code != apierr.CodeInternal {
				t.Errorf("code %v, want %s", code, apierr.CodeInternal)
			}
			if !strings.Contains(logged.String(), c.wantLevel) {
				t.Errorf("logged %q, want a line at %s", logged.String(), c.wantLevel)
			}
		})
	}
}
