// Package migrations holds Cairn's database schema as embedded, ordered SQL
// migrations applied with goose.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// Status is the schema version of a database against the binary's migrations.
type Status struct {
	Current int64
	Latest  int64
}

// UpToDate reports whether every embedded migration has been applied.
func (s Status) UpToDate() bool { return s.Current >= s.Latest }

func provider(db *sql.DB) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return p, nil
}

// Up applies every pending migration. Concurrent callers (several replicas
// starting at once) are serialised by a session advisory lock.
func Up(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return Status{}, err
	}
	if _, err := p.Up(ctx); err != nil {
		return Status{}, fmt.Errorf("apply migrations: %w", err)
	}
	return status(ctx, p)
}

// Check returns the database's schema version without changing anything.
func Check(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return Status{}, err
	}
	return status(ctx, p)
}

func status(ctx context.Context, p *goose.Provider) (Status, error) {
	cur, err := p.GetDBVersion(ctx)
	if err != nil {
		return Status{}, fmt.Errorf("read schema version: %w", err)
	}
	srcs := p.ListSources()
	var latest int64
	if len(srcs) > 0 {
		latest = srcs[len(srcs)-1].Version
	}
	return Status{Current: cur, Latest: latest}, nil
}

// Files exposes the embedded migrations (tests name their template database
// after their content).
func Files() fs.FS { return files }
