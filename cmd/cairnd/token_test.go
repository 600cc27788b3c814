package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"cairn/auth"
	"cairn/commands"
	"cairn/commands/access"
	"cairn/domain/events"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/internal/testdb"
)

// runCairndErr runs cairnd's command line in-process and returns its error.
func runCairndErr(t *testing.T, url string, args ...string) error {
	t.Helper()
	env := map[string]string{DatabaseURLEnv: url, "CAIRN_DATA_DIR": t.TempDir(), "CAIRN_LOG_FORMAT": "json"}
	root := newRootCommand(func(k string) string { return env[k] })
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return root.ExecuteContext(ctx)
}

func TestTokenCreate(t *testing.T) {
	db := testdb.New(t)
	store := eventstore.New(db.AppPool(t), events.Registry(), eventstore.Options{Log: testLogger(t)})
	t.Cleanup(store.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := access.NewHandlers(store, time.Now, newID, access.Options{})
	meta := commands.Meta{Actor: "test"}
	if _, err := h.CreateTenant(ctx, meta, access.CreateTenant{TenantID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreateUser(ctx, meta, access.CreateUser{UserID: "u-ops", Name: "Olga Ops", Role: tenant.RoleOperator}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreateUser(ctx, meta, access.CreateUser{UserID: "u-dev", Name: "Dana Dev", Role: tenant.RoleTenantMember, TenantID: "acme"}); err != nil {
		t.Fatal(err)
	}
	authn := auth.NewAuthenticator(store, auth.AuthenticatorOptions{})

	check := func(out, userID string, role auth.Role, tenantID string, ttl time.Duration) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "cairn_") || !strings.Contains(lines[1], userID) {
			t.Fatalf("token create printed %q", out)
		}
		p, err := authn.Authenticate(ctx, lines[0])
		if err != nil {
			t.Fatalf("the printed token does not authenticate: %v", err)
		}
		if p.UserID != userID || p.Role != role || p.TenantID != tenantID {
			t.Fatalf("token acts as %+v, want user %s role %s tenant %q", p, userID, role, tenantID)
		}
		if d := time.Until(p.ExpiresAt); d > ttl || d < ttl-time.Minute {
			t.Fatalf("token expires in %s, want about %s", d, ttl)
		}
	}
	check(runCairnd(t, db.ConnString, "token", "create", "--user", "u-ops"), "u-ops", tenant.RoleOperator, "", 720*time.Hour)
	check(runCairnd(t, db.ConnString, "token", "create", "--user", "Dana Dev", "--ttl", "2h"), "u-dev", tenant.RoleTenantMember, "acme", 2*time.Hour)

	err := runCairndErr(t, db.ConnString, "token", "create", "--user", "nobody")
	if err == nil || !strings.Contains(err.Error(), `no user has the id or name "nobody"`) {
		t.Fatalf("unknown user: %v", err)
	}
	if err := runCairndErr(t, db.ConnString, "token", "create"); err == nil || !strings.Contains(err.Error(), "--user") {
		t.Fatalf("no --user: %v", err)
	}
	if _, err := h.DisableUser(ctx, meta, access.DisableUser{UserID: "u-ops"}); err != nil {
		t.Fatal(err)
	}
	if err := runCairndErr(t, db.ConnString, "token", "create", "--user", "u-ops"); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Fatalf("disabled user: %v", err)
	}
}
