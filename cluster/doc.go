// Package cluster lets several cairnd replicas share one PostgreSQL
// database: each replica announces itself (Registry), work that must happen
// once has one owner at a time chosen through a lease row (Lease) whose
// epoch fences the owner's appends, and each replica publishes which agents
// are connected to it (Presence) so the owner of liveness knows connections
// it does not hold. PostgreSQL is the only coordinator.
package cluster

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the cluster's tables are read and written through: a pool.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}
