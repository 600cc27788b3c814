package dispatch

import (
	"context"
	"time"
)

// retention deletes job output and statistics past their retention period,
// at start and then every RetentionEvery.
func (d *Dispatcher) retention(ctx context.Context) {
	for {
		now := d.now()
		if r := d.opts.LogRetention; r > 0 {
			if n, err := d.logs.Purge(ctx, now.Add(-r)); err != nil && ctx.Err() == nil {
				d.log.Warn().Err(err).Msg("could not delete old job output; trying again later")
			} else if n > 0 {
				d.log.Info().Int64("chunks", n).Dur("older_than", r).Msg("deleted old job output")
			}
		}
		if r := d.opts.StatsRetention; r > 0 {
			if n, err := d.stats.Purge(ctx, now.Add(-r)); err != nil && ctx.Err() == nil {
				d.log.Warn().Err(err).Msg("could not delete old node statistics; trying again later")
			} else if n > 0 {
				d.log.Info().Int64("samples", n).Dur("older_than", r).Msg("deleted old node statistics")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(d.opts.RetentionEvery):
		}
	}
}
