package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn/internal/testdb"
)

// runCairnd runs cairnd's command line in-process against the database at
// url and returns what it printed on stdout.
func runCairnd(t *testing.T, url string, args ...string) string {
	t.Helper()
	env := map[string]string{DatabaseURLEnv: url, "CAIRN_DATA_DIR": t.TempDir(), "CAIRN_LOG_FORMAT": "json"}
	root := newRootCommand(func(k string) string { return env[k] })
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("cairnd %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func TestMigrate(t *testing.T) {
	db := testdb.NewEmpty(t)

	before := runCairnd(t, db.ConnString, "migrate", "--status")
	var current, latest int64
	if _, err := fmt.Sscanf(before, "current: %d\nlatest: %d\n", &current, &latest); err != nil {
		t.Fatalf("migrate --status printed %q: %v", before, err)
	}
	if current != 0 || latest < 1 || !strings.Contains(before, "pending") {
		t.Fatalf("migrate --status on an empty database printed %q", before)
	}

	if got, want := runCairnd(t, db.ConnString, "migrate"), fmt.Sprintf("schema version: %d\n", latest); got != want {
		t.Fatalf("migrate printed %q, want %q", got, want)
	}
	after := runCairnd(t, db.ConnString, "migrate", "--status")
	if !strings.Contains(after, fmt.Sprintf("current: %d\n", latest)) || !strings.Contains(after, "up to date") {
		t.Fatalf("migrate --status after migrating printed %q", after)
	}
	// Migrating again changes nothing.
	if got := runCairnd(t, db.ConnString, "migrate"); got != fmt.Sprintf("schema version: %d\n", latest) {
		t.Fatalf("second migrate printed %q", got)
	}
}

func TestVersion(t *testing.T) {
	if got := runCairnd(t, "", "version"); !strings.HasPrefix(got, "cairnd ") {
		t.Fatalf("version printed %q", got)
	}
}
