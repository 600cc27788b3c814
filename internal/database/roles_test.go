package database_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"cairn/internal/database"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// A session of the role cairnd serves as cannot make itself anything that
// could change or remove events: not by RESET ROLE, SET ROLE or SET SESSION
// AUTHORIZATION, and not by turning the append-only triggers off.
func TestServerRoleCannotEscalate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := testdb.New(t)
	admin := db.AdminPool(t)
	if err := database.EnsureServerRole(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if err := database.EnsureServerRole(ctx, admin); err != nil { // twice: it exists
		t.Fatal(err)
	}
	var owner string
	if err := admin.QueryRow(ctx, `SELECT tableowner FROM pg_tables WHERE tablename = 'events'`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(db.ConnString)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User = database.ServerRole
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// What it is for: reading and appending.
	if _, err := conn.Exec(ctx, `SELECT count(*) FROM events`); err != nil {
		t.Fatalf("read events: %v", err)
	}
	attempts := []string{
		`SET ROLE ` + pgx.Identifier{owner}.Sanitize(),
		`SET SESSION AUTHORIZATION ` + pgx.Identifier{owner}.Sanitize(),
		`RESET ROLE; UPDATE events SET event_type = 'x'`,
		`RESET ROLE; DELETE FROM events`,
		`RESET ROLE; TRUNCATE events`,
		`RESET ROLE; ALTER TABLE events DISABLE TRIGGER ALL`,
		`RESET ROLE; DROP TRIGGER events_append_only ON events`,
		`RESET ROLE; ALTER ROLE ` + database.ServerRole + ` SUPERUSER`,
		`RESET ROLE; CREATE ROLE escape SUPERUSER`,
		`RESET ROLE; GRANT ` + pgx.Identifier{owner}.Sanitize() + ` TO ` + database.ServerRole,
	}
	for _, sql := range attempts {
		if _, err := conn.Exec(ctx, sql); err == nil {
			t.Errorf("%s: allowed", sql)
		} else if !strings.Contains(err.Error(), "denied") && !strings.Contains(err.Error(), "must be") &&
			!strings.Contains(err.Error(), "refused") && !strings.Contains(err.Error(), "permission") {
			t.Errorf("%s: failed, but not for lack of rights: %v", sql, err)
		}
	}
	var super bool
	if err := conn.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil || super {
		t.Fatalf("the serving role is a superuser (%v)", err)
	}
}
