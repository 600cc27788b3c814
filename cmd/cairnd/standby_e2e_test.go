package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"cairn/internal/database"
	"cairn/internal/pgcluster"
	"cairn/internal/testproc"
)

// With DATABASE_READ_URL naming a streaming standby (made here with
// pg_basebackup), queries that do not wait for a write read the standby, a
// query carrying a mutation's cursor always shows that write (it reads the
// primary), and when the standby stops the primary serves every query.
func TestQueriesReadAStandby(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: starts a PostgreSQL primary and a standby and runs cairnd on them")
	}
	ctx := context.Background()
	primary, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Stop() })
	standby, err := pgcluster.Start(ctx, pgcluster.Options{BaseBackupFrom: primary.ConnString("postgres")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop() })
	if err := database.CreateDatabase(ctx, primary.ConnString("postgres"), "cairn", ""); err != nil {
		t.Fatal(err)
	}

	bins := buildBinaries(t, "cairnd")
	addr := testproc.FreeAddr(t)
	server := testproc.Start(t, filepath.Join(bins, "cairnd"),
		[]string{"DATABASE_URL=" + primary.URL("cairn"), "DATABASE_READ_URL=" + standby.URL("cairn")},
		"serve", "--listen", addr, "--data-dir", filepath.Join(traversableTempDir(t), "data"), "--log-format", "json")
	t.Cleanup(func() {
		if err := server.Stop(time.Minute); err != nil {
			t.Errorf("cairnd after SIGTERM: %v", err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cairnd output:\n%s", server.Output())
		}
	})
	base := "http://" + addr
	poll(t, step, "cairnd to be ready", func() (bool, string) {
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	}, server)
	m := firstStartToken.FindStringSubmatch(server.Output())
	if m == nil {
		t.Fatalf("cairnd printed no administrator token\n%s", server.Output())
	}
	admin := gqlClient{url: base + "/graphql", token: m[1]}

	// Read your write: the query carrying the cursor reads the primary.
	var made struct {
		CreateTenant struct {
			Tenant struct{ ID string }
			Cursor string
		}
	}
	admin.must(t, `mutation { createTenant(input: {name: "acme"}) { tenant { id } cursor } }`, nil, &made)
	var got struct{ Tenant *struct{ Name string } }
	admin.must(t, `query($id: ID!, $c: Cursor) { tenant(id: $id, consistentWith: $c) { name } }`,
		map[string]any{"id": made.CreateTenant.Tenant.ID, "c": made.CreateTenant.Cursor}, &got)
	if got.Tenant == nil || got.Tenant.Name != "acme" {
		t.Fatalf("a query carrying the mutation's cursor: %+v", got.Tenant)
	}

	// Queries without a cursor read the standby, once it has replayed.
	standbyReads := func() int {
		conn, err := pgx.Connect(ctx, standby.ConnString("cairn"))
		if err != nil {
			return -1
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cairnd standby reads'`).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	poll(t, step, "a query to read the standby", func() (bool, string) {
		var out struct {
			Tenants struct {
				Edges []struct{ Node struct{ Name string } }
			}
		}
		if err := admin.do(`{ tenants(first: 10) { edges { node { name } } } }`, nil, &out); err != nil {
			return false, err.Error()
		}
		n := standbyReads()
		return n > 0 && len(out.Tenants.Edges) > 0, fmt.Sprintf("%d sessions on the standby, %d tenants", n, len(out.Tenants.Edges))
	}, server)

	// The standby stops: the primary answers every query.
	if err := standby.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the standby is checked every second
	for range 5 {
		var out struct {
			Tenants struct {
				Edges []struct{ Node struct{ Name string } }
			}
		}
		admin.must(t, `{ tenants(first: 10) { edges { node { name } } } }`, nil, &out)
		if len(out.Tenants.Edges) == 0 {
			t.Fatal("no tenant read from the primary")
		}
	}
}
