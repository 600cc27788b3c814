package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"cairn/eventstore"
)

// ParkedEvent is an event a projection could not apply. The projection went
// on past it: its read model lacks that event's effect until the cause is
// fixed and the projection rebuilt. A parked event does not hold back later
// events of its stream, which are applied as usual; the read model of that
// one entity may therefore be incomplete, and this record says which.
type ParkedEvent struct {
	ID         int64
	Projection string
	Build      int
	Cursor     eventstore.Cursor
	StreamID   string
	EventType  string
	Attempts   int
	Error      string
	ParkedAt   time.Time
}

// Parked lists the events a projection parked (all projections for name ""),
// newest first, at most limit (default 100).
func (r *Runner) Parked(ctx context.Context, name string, limit int) ([]ParkedEvent, error) {
	if name != "" && r.byName[name] == nil {
		return nil, &UnknownProjectionError{Name: name, Known: r.Names()}
	}
	return ListParked(ctx, r.pool, name, limit)
}

// ListParked lists parked events from the database (see Runner.Parked).
func ListParked(ctx context.Context, pool *pgxpool.Pool, name string, limit int) ([]ParkedEvent, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := pool.Query(ctx, `
		SELECT id, projection, build, tx_id, position, stream_id, event_type, attempts, error, parked_at
		FROM projection_parked WHERE $1 = '' OR projection = $1
		ORDER BY id DESC LIMIT $2`, name, limit)
	if err != nil {
		return nil, fmt.Errorf("list parked events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ParkedEvent, error) {
		var p ParkedEvent
		err := row.Scan(&p.ID, &p.Projection, &p.Build, &p.Cursor.TxID, &p.Cursor.Position, &p.StreamID, &p.EventType,
			&p.Attempts, &p.Error, &p.ParkedAt)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("list parked events: %w", err)
	}
	return out, nil
}
