package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Rebuild starts rebuilding a projection from position zero into new
// tables; the current tables keep serving (and keep being updated) until the
// new build has caught up, when the views switch over in one transaction and
// the old tables are dropped. It returns once the new build has started;
// Status shows its progress. A rebuild already under way is not restarted.
func (r *Runner) Rebuild(ctx context.Context, name string) error {
	p := r.byName[name]
	if p == nil {
		return &UnknownProjectionError{Name: name, Known: r.Names()}
	}
	if err := requestRebuild(ctx, r.pool, name); err != nil {
		return err
	}
	select {
	case <-r.ready:
		return r.reconcile(ctx, p)
	default:
		// Setup has not finished: it will see the request.
		return nil
	}
}

// RequestRebuild asks the running server to rebuild a projection (the
// server's runner looks for requests every ControlInterval). known lists
// the projections this build of Cairn has, to refuse names it has not.
func RequestRebuild(ctx context.Context, pool *pgxpool.Pool, name string, known []string) error {
	if !slices.Contains(known, name) {
		return &UnknownProjectionError{Name: name, Known: known}
	}
	return requestRebuild(ctx, pool, name)
}

// ErrNoLiveBuild: the projection has never run, so there is nothing to
// rebuild yet; starting the server builds it.
var ErrNoLiveBuild = errors.New("the projection has not been built yet: start cairnd, which builds it")

func requestRebuild(ctx context.Context, q querier, name string) error {
	tag, err := q.Exec(ctx, `UPDATE projection_checkpoints SET rebuild_requested_at = $2, updated_at = now()
		WHERE name = $1 AND status = 'live'`, name, time.Now())
	if err != nil {
		return fmt.Errorf("request rebuild of %q: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("rebuild %q: %w", name, ErrNoLiveBuild)
	}
	return nil
}
