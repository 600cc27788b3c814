package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/internal/httpserver"
	"cairn/internal/testdb"
	"cairn/migrations"
)

var client = &http.Client{Timeout: 30 * time.Second}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func TestServe(t *testing.T) {
	db := testdb.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, testConfig(t, db.ConnString), testLogger(t), ln) }()
	base := "http://" + ln.Addr().String()

	if code, body := get(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	// One round of readiness checks has a deadline of its own, which a
	// loaded machine can outlast: a verdict that is not ready is asked again.
	readyz := waitReadyz(t, base, func(code int, _ readyzBody) bool { return code == http.StatusOK })
	if !strings.Contains(readyz, `"ready"`) {
		t.Fatalf("/readyz: %s", readyz)
	}
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`cairn_http_requests_total{code="200",route="/healthz"} 1`,
		"cairn_http_request_duration_seconds_bucket",
		"go_goroutines",
		"process_resident_memory_bytes",
		`cairn_db_pool_total_conns{pool="app"}`,
		`cairn_db_pool_acquired_conns{pool="app"}`,
		`cairn_db_pool_idle_conns{pool="app"}`,
		"cairn_eventstore_append_transactions_total",
		"cairn_eventstore_recent_events_served_total",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return within 30s of its context ending")
	}
	if _, err := client.Get(base + "/healthz"); err == nil {
		t.Fatal("still answering after shutdown")
	}
}

func TestReadyzMigrationsPending(t *testing.T) {
	db := testdb.NewEmpty(t)
	pool := db.AdminPool(t) // the app role's grants come with the migrations
	store := eventstore.New(pool, events.Registry(), eventstore.Options{Log: testLogger(t)})
	t.Cleanup(store.Close)
	srv, err := httpserver.New(httpserver.Deps{
		Log:    testLogger(t),
		Pool:   pool,
		Store:  store,
		Schema: func(ctx context.Context) (migrations.Status, error) { return migrations.Check(ctx, pool) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	if code, _ := get(t, ts.URL+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz must not depend on the database: %d", code)
	}
	// A round of checks that ran out of time on a loaded machine says the
	// database is unreachable or the schema unknown; ask again until the
	// checks get as far as the schema. Ready is never the answer.
	body := waitReadyz(t, ts.URL, func(code int, got readyzBody) bool {
		if code == http.StatusOK {
			t.Fatalf("/readyz on an unmigrated database: %d", code)
		}
		return got.Reason != httpserver.ReasonDatabaseUnreachable && got.Reason != httpserver.ReasonSchemaUnknown
	})
	var got readyzBody
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	if got.Reason != httpserver.ReasonMigrationsPending || !strings.Contains(got.Detail, "cairnd migrate") {
		t.Fatalf("/readyz reason: %+v", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// The verdict is cached for a second; then the migrated schema shows.
	waitReadyz(t, ts.URL, func(code int, _ readyzBody) bool { return code == http.StatusOK })
}

type readyzBody struct{ Status, Reason, Detail string }

// waitReadyz asks base's /readyz until done accepts the answer, for as long
// as a loaded machine may need, and returns the accepted body.
func waitReadyz(t *testing.T, base string, done func(code int, body readyzBody) bool) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := get(t, base+"/readyz")
		var got readyzBody
		_ = json.Unmarshal([]byte(body), &got)
		if done(code, got) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestServeFailsOnBadDatabaseURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A socket directory with no server in it: refused at once.
	url := "host=" + t.TempDir() + " user=nobody dbname=none connect_timeout=5"
	err = serve(context.Background(), testConfig(t, url), testLogger(t), ln)
	if err == nil || !strings.Contains(err.Error(), "database unreachable") {
		t.Fatalf("got %v, want a database unreachable error", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("listener left open after a failed start: %v", err)
	}
}

// A replica older than the database's schema (a rolling upgrade under way:
// a newer replica migrated it) serves, says so in /readyz and its log, and
// takes no once-only work; a current one on the same database does.
func TestOlderReplicaOwnsNothing(t *testing.T) {
	db := testdb.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := db.AdminPool(t).Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, true)`); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- serve(ctx, testConfig(t, db.ConnString), testLogger(t), ln) }()
	base := "http://" + ln.Addr().String()
	body := waitReadyz(t, base, func(code int, _ readyzBody) bool { return code == http.StatusOK })
	if !strings.Contains(body, "newer than this cairnd") || !strings.Contains(body, "owns no once-only work") {
		t.Fatalf("/readyz of an older replica: %s", body)
	}
	// Long enough for a lease to be taken, were it tried.
	time.Sleep(3 * time.Second)
	var leases int
	if err := db.AdminPool(t).QueryRow(ctx, `SELECT count(*) FROM cluster_leases WHERE expires_at > now()`).Scan(&leases); err != nil {
		t.Fatal(err)
	}
	if leases != 0 {
		t.Fatalf("an older replica holds %d leases", leases)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve after cancel: %v", err)
	}
}
