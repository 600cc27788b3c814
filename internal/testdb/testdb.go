// Package testdb gives tests a fresh, migrated PostgreSQL database.
//
// `make test` starts one cluster for the whole run (see withcluster) and
// exports its address in CAIRN_TEST_CLUSTER; a package tested on its own
// starts a private cluster instead. Either way each database is a copy of a
// migrated template, so making one takes milliseconds.
package testdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"cairn/internal/database"
	"cairn/internal/pgcluster"
	"cairn/migrations"
)

// ClusterEnv names the variable holding a maintenance connection string of
// the cluster to create test databases in.
const ClusterEnv = "CAIRN_TEST_CLUSTER"

var (
	mu      sync.Mutex
	cluster *pgcluster.Cluster
	maint   string
)

// Main runs a package's tests and stops a private cluster if one was started.
// Use it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if cluster != nil {
		_ = cluster.Stop()
	}
	mu.Unlock()
	os.Exit(code)
}

func maintenance(ctx context.Context) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if maint != "" {
		return maint, nil
	}
	if env := os.Getenv(ClusterEnv); env != "" {
		maint = env
		return maint, nil
	}
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		return "", err
	}
	cluster, maint = c, c.ConnString("postgres")
	return maint, nil
}

// templateName changes whenever a migration changes, so a long-lived test
// cluster never hands out a stale schema.
func templateName() string {
	h := sha256.New()
	names, _ := fs.Glob(migrationsFS(), "*.sql")
	sort.Strings(names)
	for _, n := range names {
		b, _ := fs.ReadFile(migrationsFS(), n)
		h.Write([]byte(n))
		h.Write(b)
	}
	return "cairn_tpl_" + hex.EncodeToString(h.Sum(nil))[:12]
}

func migrationsFS() fs.FS { return migrations.Files() }

// EnsureTemplate creates and migrates the template database once per cluster.
// Concurrent test processes are serialised by an advisory lock.
func EnsureTemplate(ctx context.Context, maintConn string) (string, error) {
	name := templateName()
	conn, err := pgx.Connect(ctx, maintConn)
	if err != nil {
		return "", fmt.Errorf("connect to test cluster: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7217001)"); err != nil {
		return "", err
	}
	defer func() { _, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock(7217001)") }()

	var ready bool
	err = conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&ready)
	if err == nil && ready {
		return name, nil
	}
	if err == nil { // half-made by a run that died: start again
		if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return "", err
		}
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create template: %w", err)
	}
	pool, err := database.Open(ctx, withDB(maintConn, name), database.Options{MaxConns: 2})
	if err != nil {
		return "", err
	}
	_, err = migrations.Up(ctx, pool)
	pool.Close()
	if err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH IS_TEMPLATE true"); err != nil {
		return "", err
	}
	return name, nil
}

// withDB swaps the dbname of a key=value connection string.
func withDB(connString, db string) string {
	parts := strings.Fields(connString)
	for i, p := range parts {
		if strings.HasPrefix(p, "dbname=") {
			parts[i] = "dbname=" + db
			return strings.Join(parts, " ")
		}
	}
	return connString + " dbname=" + db
}

// DB is a fresh migrated database.
type DB struct {
	// ConnString connects as the owner (superuser), for migrations and for
	// tests that play a tampering administrator.
	ConnString string
	Name       string
}

// New creates a fresh migrated database, dropped when the test ends.
func New(t testing.TB) DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mc, err := maintenance(ctx)
	if err != nil {
		t.Fatalf("test database: %v", err)
	}
	tpl, err := EnsureTemplate(ctx, mc)
	if err != nil {
		t.Fatalf("test database template: %v", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "cairn_test_" + hex.EncodeToString(rnd[:])
	if err := database.CreateDatabase(ctx, mc, name, tpl); err != nil {
		t.Fatalf("test database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), mc)
		if err != nil {
			t.Errorf("drop test database: %v", err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return DB{ConnString: withDB(mc, name), Name: name}
}

// AppPool opens a pool acting as the application role, closed when the test ends.
func (d DB) AppPool(t testing.TB) *pgxpool.Pool {
	return d.pool(t, database.AppRole)
}

// AdminPool opens a pool as the owner, closed when the test ends.
func (d DB) AdminPool(t testing.TB) *pgxpool.Pool {
	return d.pool(t, "")
}

func (d DB) pool(t testing.TB, role string) *pgxpool.Pool {
	t.Helper()
	p, err := database.Open(context.Background(), d.ConnString, database.Options{Role: role, MaxConns: 20})
	if err != nil {
		t.Fatalf("open test pool: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}
