package pgcluster

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A postmaster killed as a crash would kill it is started again, recovers
// from its WAL, and keeps what was committed: clients reconnect as soon as
// it is back.
func TestRestartsAKilledServer(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: starts a PostgreSQL server and kills it")
	}
	ctx := context.Background()
	c, err := Start(ctx, Options{Durable: true, Restart: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	conn, err := pgx.Connect(ctx, c.ConnString("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)

	first := c.Pid()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	var v int
	for {
		conn, err := pgx.Connect(ctx, c.ConnString("postgres"))
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT v FROM kept`).Scan(&v)
			_ = conn.Close(ctx)
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server was not back within 60 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v != 42 || c.Restarts() < 1 || c.Pid() == first {
		t.Fatalf("after the restart: value %d, %d restarts, pid %d (was %d)", v, c.Restarts(), c.Pid(), first)
	}
	// Stop is final: no restart after it.
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := pgx.Connect(ctx, c.ConnString("postgres")); err == nil {
		t.Fatal("the server runs again after Stop")
	}
}
