package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"cairn/internal/database"
)

// NewEmpty creates a database with no schema at all, as a new server's
// database is before any migration; it is dropped when the test ends. Tests
// of migrating and of readiness use it.
func NewEmpty(t testing.TB) DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mc, err := maintenance(ctx)
	if err != nil {
		t.Fatalf("test database: %v", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "cairn_empty_" + hex.EncodeToString(rnd[:])
	if err := database.CreateDatabase(ctx, mc, name, ""); err != nil {
		t.Fatalf("test database: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, mc)
		if err != nil {
			t.Errorf("drop test database: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return DB{ConnString: withDB(mc, name), Name: name}
}
