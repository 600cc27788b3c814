// Package database opens Cairn's PostgreSQL connections: the configured
// DATABASE_URL, or a private embedded cluster when none is configured.
package database

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"cairn/internal/pgcluster"
)

// AppRole is the role application connections act as. It may read and append
// events but never change or delete them (see migrations/00001_event_store.sql).
const AppRole = "cairn_app"

// Options configure a pool.
type Options struct {
	// Role to SET ROLE to on every new connection; empty keeps the login role
	// (migrations need the owner).
	Role     string
	MaxConns int32
	// AppName shows in pg_stat_activity.
	AppName string
	// Lazy opens the pool without checking the database answers (a
	// standby that may come later).
	Lazy bool
}

// Open connects a pool and checks the database is reachable.
func Open(ctx context.Context, url string, opts Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.AppName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = opts.AppName
	}
	if opts.Role != "" {
		role := opts.Role
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			if _, err := c.Exec(ctx, "SET ROLE "+pgx.Identifier{role}.Sanitize()); err != nil {
				return fmt.Errorf("switch to role %s (run `cairnd migrate` first, and grant the role to the login user): %w", role, err)
			}
			return nil
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	if opts.Lazy {
		return pool, nil
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database unreachable: %w", err)
	}
	return pool, nil
}

// Embedded is a private cluster holding one Cairn database.
type Embedded struct {
	Cluster *pgcluster.Cluster
	URL     string
}

// StartEmbedded starts (or reuses, when dataDir holds one) a private cluster
// and makes sure the named database exists. When another process (a
// serving cairnd) runs the cluster already, it is used as it is, and Stop
// leaves it running: commands such as `cairnd token create` work beside
// the server.
func StartEmbedded(ctx context.Context, dataDir, dbName string, logLine func(string)) (*Embedded, error) {
	c, running, err := pgcluster.Attach(dataDir)
	if err != nil {
		return nil, err
	}
	if !running {
		if c, err = pgcluster.Start(ctx, pgcluster.Options{DataDir: dataDir, Durable: true, Log: logLine, Restart: true}); err != nil {
			return nil, err
		}
	}
	if err := CreateDatabase(ctx, c.ConnString("postgres"), dbName, ""); err != nil && !IsDuplicateDatabase(err) {
		_ = c.Stop()
		return nil, err
	}
	return &Embedded{Cluster: c, URL: c.URL(dbName)}, nil
}

// Stop stops the embedded cluster.
func (e *Embedded) Stop() error { return e.Cluster.Stop() }

// CreateDatabase creates a database, optionally as a copy of a template.
func CreateDatabase(ctx context.Context, maintenanceConn, name, template string) error {
	conn, err := pgx.Connect(ctx, maintenanceConn)
	if err != nil {
		return fmt.Errorf("connect to create database %s: %w", name, err)
	}
	defer conn.Close(ctx)
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// IsDuplicateDatabase reports whether err says the database already exists.
func IsDuplicateDatabase(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P04"
}
