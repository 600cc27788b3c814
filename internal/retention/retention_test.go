package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/internal/retention"
)

// Run purges what is past each policy's period at once, skips policies that
// keep everything, and stops when its context ends.
func TestRunPurgesPastThePeriod(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var cutoffs []time.Time
	purge := func(_ context.Context, cutoff time.Time) (int64, error) {
		cutoffs = append(cutoffs, cutoff)
		return 3, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one round, then stop
	retention.Run(ctx, zerolog.Nop(), time.Hour, func() time.Time { return now },
		retention.Policy{What: "a", Keep: 24 * time.Hour, Purge: purge},
		retention.Policy{What: "b", Keep: -1, Purge: purge},
	)
	if len(cutoffs) != 1 || !cutoffs[0].Equal(now.Add(-24*time.Hour)) {
		t.Fatalf("purged with cutoffs %v, want one at %v", cutoffs, now.Add(-24*time.Hour))
	}
}
