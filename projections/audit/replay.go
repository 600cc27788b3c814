package audit

import (
	"context"
	"errors"

	"cairn/projections"
	"cairn/projections/models"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Replay rebuilds every read model, and the analytics views over them, into
// a new scratch schema as of a moment (unset: now), so that the whole
// system can be queried as it was. The schema's tables have the read
// models' names (nodes, jobs, …); the analytics views are prefixed
// analytics_. The schema is made through pool; DropReplay removes it.
func Replay(ctx context.Context, store Log, pool *pgxpool.Pool, until Point) (projections.ReplayResult, error) {
	if err := check(ctx, store, until); err != nil {
		return projections.ReplayResult{}, err
	}
	if until.Start {
		return projections.ReplayResult{}, ErrEmptyReplay
	}
	o := projections.ReplayOptions{Projections: models.All(), Views: models.AnalyticsViews(), Until: until.Cursor, UntilTime: until.Time}
	return projections.Replay(ctx, store, pool, o)
}

// ErrEmptyReplay refuses a replay up to the start of the log, which would
// build nothing.
var ErrEmptyReplay = errors.New("replaying up to the start of the log (cursor 0) builds an empty system: choose a later cursor or time")

// DropReplay removes a scratch schema a replay made.
func DropReplay(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return projections.DropReplay(ctx, pool, schema)
}
