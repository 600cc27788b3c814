// Package retention deletes measurements (job output, node statistics) once
// they are older than their retention period. The event log itself is never
// purged.
package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// Policy is one kind of measurement and how long it is kept.
type Policy struct {
	// What names the rows in logs ("job output chunks").
	What string
	// Keep is the retention period; zero or negative keeps them forever.
	Keep time.Duration
	// Purge deletes the rows recorded before cutoff and says how many went.
	Purge func(ctx context.Context, cutoff time.Time) (int64, error)
}

// Run applies the policies at once and then every interval until ctx ends.
// A failed purge is logged and tried again at the next round.
func Run(ctx context.Context, log zerolog.Logger, every time.Duration, now func() time.Time, policies ...Policy) {
	for {
		for _, p := range policies {
			if p.Keep <= 0 {
				continue
			}
			n, err := p.Purge(ctx, now().Add(-p.Keep))
			switch {
			case err != nil && ctx.Err() == nil:
				log.Warn().Err(err).Str("what", p.What).Msg("could not delete old measurements; trying again later")
			case n > 0:
				log.Info().Int64("deleted", n).Str("what", p.What).Dur("older_than", p.Keep).Msg("deleted old measurements")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// batch bounds the rows one statement deletes, so that no statement holds
// its locks for long.
const batch = 10000

// PurgeOlder deletes the rows of table whose recorded_at is before cutoff,
// in batches, and returns how many went.
func PurgeOlder(ctx context.Context, pool *pgxpool.Pool, table string, cutoff time.Time) (int64, error) {
	var total int64
	for {
		tag, err := pool.Exec(ctx, `DELETE FROM `+table+` WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM `+table+` WHERE recorded_at < $1 LIMIT `+fmt.Sprint(batch)+`))`, cutoff)
		if err != nil {
			return total, fmt.Errorf("purge %s older than %s: %w", table, cutoff.Format(time.RFC3339), err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < batch {
			return total, nil
		}
	}
}
