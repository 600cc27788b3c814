package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"cairn/eventstore"
	"cairn/internal/ptr"
)

// Build states, as projection_checkpoints.status spells them.
const (
	// StateLive: the stable views read this build's tables.
	StateLive = "live"
	// StateBuilding: a rebuild filling new tables from position zero; the
	// views switch to it once it has caught up.
	StateBuilding = "building"
	stateRetired  = "retired"
)

// querier is what pools, connections and transactions share.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// buildRow is one row of projection_checkpoints.
type buildRow struct {
	Name             string
	Build            int
	Version          int
	Status           string
	Tables           []string
	Cursor           eventstore.Cursor
	LastEventAt      time.Time
	Indexed          bool
	Applied          int64
	Parked           int64
	LastError        string
	LastErrorAt      time.Time
	RebuildRequested bool
	StartedAt        time.Time
	LiveAt           time.Time
	UpdatedAt        time.Time
}

func (b buildRow) target() Target { return buildTarget(b.Version, b.Build) }

const buildColumns = `name, build, version, status, tables, tx_id, position, last_event_at, indexed, applied, parked,
	coalesce(last_error, ''), last_error_at, rebuild_requested_at IS NOT NULL, started_at, live_at, updated_at`

func scanBuilds(rows pgx.Rows) ([]buildRow, error) {
	defer rows.Close()
	var out []buildRow
	for rows.Next() {
		var b buildRow
		var lastAt, errAt, liveAt *time.Time
		if err := rows.Scan(&b.Name, &b.Build, &b.Version, &b.Status, &b.Tables, &b.Cursor.TxID, &b.Cursor.Position,
			&lastAt, &b.Indexed, &b.Applied, &b.Parked, &b.LastError, &errAt, &b.RebuildRequested, &b.StartedAt, &liveAt, &b.UpdatedAt); err != nil {
			return nil, fmt.Errorf("read projection checkpoints: %w", err)
		}
		b.LastEventAt, b.LastErrorAt, b.LiveAt = ptr.Value(lastAt), ptr.Value(errAt), ptr.Value(liveAt)
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read projection checkpoints: %w", err)
	}
	return out, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// activeBuilds returns the live and building rows, of one projection or
// (name "") of all, by name and build.
func activeBuilds(ctx context.Context, q querier, name string, lock bool) ([]buildRow, error) {
	sql := `SELECT ` + buildColumns + ` FROM projection_checkpoints
		WHERE status <> 'retired' AND ($1 = '' OR name = $1) ORDER BY name, build`
	if lock {
		sql += ` FOR UPDATE`
	}
	rows, err := q.Query(ctx, sql, name)
	if err != nil {
		return nil, fmt.Errorf("read projection checkpoints: %w", err)
	}
	return scanBuilds(rows)
}

// lockProjection serialises changes to one projection's builds across
// processes, until tx ends.
func lockProjection(ctx context.Context, tx pgx.Tx, name string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('cairn.projection:' || $1, 0))`, name)
	if err != nil {
		return fmt.Errorf("lock projection %q: %w", name, err)
	}
	return nil
}

// insertBuild creates the next build of a projection and its tables.
func insertBuild(ctx context.Context, tx pgx.Tx, p Projection, status string) (buildRow, error) {
	b := buildRow{Name: p.Name(), Version: p.Version(), Status: status, Tables: p.Tables()}
	err := tx.QueryRow(ctx, `SELECT coalesce(max(build), 0) + 1 FROM projection_checkpoints WHERE name = $1`, b.Name).Scan(&b.Build)
	if err != nil {
		return b, fmt.Errorf("number new build of %q: %w", b.Name, err)
	}
	err = tx.QueryRow(ctx, `
		INSERT INTO projection_checkpoints (name, build, version, status, tables, live_at)
		VALUES ($1, $2, $3, $4, $5, CASE WHEN $4 = 'live' THEN now() END)
		RETURNING started_at, updated_at`,
		b.Name, b.Build, b.Version, b.Status, b.Tables).Scan(&b.StartedAt, &b.UpdatedAt)
	if err != nil {
		return b, fmt.Errorf("record new build of %q: %w", b.Name, err)
	}
	if err := p.Setup(ctx, tx, b.target()); err != nil {
		return b, fmt.Errorf("set up tables of %q build %d: %w", b.Name, b.Build, err)
	}
	return b, nil
}

// advance moves a build's checkpoint from → to inside tx, provided nobody
// else moved or retired it (errSuperseded otherwise).
func advance(ctx context.Context, tx pgx.Tx, name string, build int, from, to eventstore.Cursor, lastAt time.Time, applied, parked int64) error {
	tag, err := tx.Exec(ctx, `
		UPDATE projection_checkpoints
		SET tx_id = $5, position = $6, last_event_at = coalesce($7, last_event_at),
		    applied = applied + $8, parked = parked + $9, updated_at = now()
		WHERE name = $1 AND build = $2 AND tx_id = $3 AND position = $4 AND status <> 'retired'`,
		name, build, from.TxID, from.Position, to.TxID, to.Position, nullTime(lastAt), applied, parked)
	if err != nil {
		return fmt.Errorf("save checkpoint of %q: %w", name, err)
	}
	if tag.RowsAffected() != 1 {
		return errSuperseded
	}
	return nil
}

// markIndexed records that a build's tables have all their indexes.
func markIndexed(ctx context.Context, tx pgx.Tx, name string, build int) error {
	tag, err := tx.Exec(ctx, `UPDATE projection_checkpoints SET indexed = true, updated_at = now()
		WHERE name = $1 AND build = $2 AND status <> 'retired'`, name, build)
	if err != nil {
		return fmt.Errorf("record indexes of %q: %w", name, err)
	}
	if tag.RowsAffected() != 1 {
		return errSuperseded
	}
	return nil
}

// recordError keeps a build's last error visible to status readers.
func recordError(ctx context.Context, q querier, name string, build int, msg string) error {
	_, err := q.Exec(ctx, `UPDATE projection_checkpoints SET last_error = $3, last_error_at = now(), updated_at = now()
		WHERE name = $1 AND build = $2`, name, build, msg)
	return err
}

// dropTables removes a retired build's tables.
func dropTables(ctx context.Context, q querier, b buildRow) error {
	t := b.target()
	for _, name := range b.Tables {
		if _, err := q.Exec(ctx, `DROP TABLE IF EXISTS `+t.Table(name)); err != nil {
			return fmt.Errorf("drop %s of retired build %d of %q: %w", t.Name(name), b.Build, b.Name, err)
		}
	}
	return nil
}

// retiredWithTables lists retired builds whose tables may still exist (a drop
// that failed, or a process that stopped in between).
func retiredWithTables(ctx context.Context, q querier) ([]buildRow, error) {
	rows, err := q.Query(ctx, `SELECT `+buildColumns+` FROM projection_checkpoints c
		WHERE status = 'retired' AND EXISTS (
			SELECT 1 FROM unnest(c.tables) AS t(name)
			WHERE to_regclass(format('%I.%I', $1::text, t.name || '_v' || c.version || '_b' || c.build)) IS NOT NULL)`, ReadSchema)
	if err != nil {
		return nil, fmt.Errorf("find retired projection tables: %w", err)
	}
	return scanBuilds(rows)
}
