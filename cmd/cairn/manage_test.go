package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"cairn/graph/client"
)

// TestCLIManagesTheInstallation drives the tenancy, token, location and
// node commands as an operator would: by names, with ids only in -o wide.
func TestCLIManagesTheInstallation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn and cairnd and runs the server")
	}
	srv := startServer(t)
	c := newCLI(t)
	if _, errOut, code := c.runInput(srv.token+"\n", "login", "--server", srv.url); code != 0 {
		t.Fatalf("login: %s", errOut)
	}
	admin := client.New(srv.url, srv.token, nil)

	// Tenants: created with an id, then named by name.
	if out := c.must("tenants", "create", "Acme Corp", "--id", "acme"); !strings.Contains(out, "Acme Corp") || !strings.Contains(out, "ACTIVE") {
		t.Fatalf("tenants create:\n%s", out)
	}
	c.must("tenants", "create", "Globex")
	c.eventually(func(s string) bool { return strings.Contains(s, "Acme Corp") && strings.Contains(s, "Globex") }, "tenants")
	if out := c.must("tenants", "suspend", "Globex", "--reason", "unpaid"); !strings.Contains(out, "SUSPENDED") || !strings.Contains(out, "unpaid") {
		t.Fatalf("tenants suspend by name:\n%s", out)
	}
	c.must("tenants", "resume", "Globex")
	c.must("tenants", "rename", "acme", "Acme")
	var tenants []tenantRow
	c.eventually(func(s string) bool {
		return json.Unmarshal([]byte(s), &tenants) == nil && len(tenants) == 2 &&
			slices.ContainsFunc(tenants, func(t tenantRow) bool { return t.ID == "acme" && t.Name == "Acme" })
	}, "tenants", "-o", "json")

	// Users and tokens, by the user's name.
	if out := c.must("users", "create", "deploy robot", "--role", "tenant_admin", "--tenant", "Acme"); !strings.Contains(out, "tenant_admin") || !strings.Contains(out, "Acme") {
		t.Fatalf("users create:\n%s", out)
	}
	if _, errOut, code := c.run("users", "create", "nobody"); code != exitUsage || !strings.Contains(errOut, "--role") {
		t.Fatalf("users create without a role: exit %d, %q", code, errOut)
	}
	c.eventually(func(s string) bool { return strings.Contains(s, "deploy robot") }, "users", "--tenant", "acme")
	out := c.must("tokens", "create", "--user", "deploy robot", "--ttl", "24h")
	secret := ""
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "cairn_") {
			secret = f
		}
	}
	if secret == "" || !strings.Contains(out, "deploy robot") {
		t.Fatalf("tokens create printed no secret:\n%s", out)
	}
	robot := newCLI(t)
	if _, errOut, code := robot.runInput(secret+"\n", "login", "--server", srv.url); code != 0 {
		t.Fatalf("login with the new token: %s", errOut)
	}
	var tokens []tokenRow
	c.eventually(func(s string) bool { return json.Unmarshal([]byte(s), &tokens) == nil && len(tokens) == 1 }, "tokens", "--user", "deploy robot", "-o", "json")
	if out := c.must("tokens", "revoke", tokens[0].ID, "--reason", "test"); !strings.Contains(out, "REVOKED") {
		t.Fatalf("tokens revoke:\n%s", out)
	}
	if _, errOut, code := robot.run("services"); code == 0 || !strings.Contains(errOut, "UNAUTHENTICATED") {
		t.Fatalf("a revoked token still works: exit %d, %q", code, errOut)
	}
	if out := c.must("users", "disable", "deploy robot"); !strings.Contains(out, "DISABLED") {
		t.Fatalf("users disable:\n%s", out)
	}

	// Locations and nodes, by name and hostname.
	c.must("locations", "create", "Paris 1", "--id", "par-1", "--description", "first floor")
	if out := c.must("locations", "update", "Paris 1", "--name", "Paris One"); !strings.Contains(out, "Paris One") || !strings.Contains(out, "first floor") {
		t.Fatalf("locations update kept no description:\n%s", out)
	}
	web := enroll(t, admin, "web-1", map[string]string{"role": "web"})
	c.eventually(func(s string) bool { return strings.Contains(s, "web-1") }, "nodes")
	if out := c.must("nodes", "label", "web-1", "zone=a", "role-"); !strings.Contains(out, "zone=a") || strings.Contains(out, "role=web") {
		t.Fatalf("nodes label:\n%s", out)
	}
	if out := c.must("nodes", "set-location", "web-1", "Paris One"); !strings.Contains(out, "Paris One") {
		t.Fatalf("nodes set-location shows no location name:\n%s", out)
	}
	if out := c.eventually(func(s string) bool { return strings.Contains(s, "web-1") }, "nodes", "--location", "Paris One"); strings.Contains(out, web) {
		t.Fatalf("nodes table shows the id:\n%s", out)
	}
	// A schedule for the node, by its hostname.
	if out := c.must("schedules", "create", "disk-report", "--every", "1h", "--node", "web-1", "--", "df", "-h"); !strings.Contains(out, "every 1h0m0s") || !strings.Contains(out, "web-1") {
		t.Fatalf("schedules create:\n%s", out)
	}
	if _, errOut, code := c.run("schedules", "create", "twice", "--every", "1h", "--cron", "0 3 * * *", "--all", "--", "true"); code != exitUsage || !strings.Contains(errOut, "one of them") {
		t.Fatalf("schedules create with --every and --cron: exit %d, %q", code, errOut)
	}
	if _, errOut, code := c.run("schedules", "create", "nowhere", "--every", "1h", "--", "true"); code != exitUsage || !strings.Contains(errOut, "say where") {
		t.Fatalf("schedules create without a target: exit %d, %q", code, errOut)
	}
	if out := c.must("schedules", "pause", "disk-report", "--reason", "test"); !strings.Contains(out, "PAUSED") {
		t.Fatalf("schedules pause:\n%s", out)
	}
	if out := c.must("schedules", "show", "disk-report", "-o", "json"); !strings.Contains(out, `"status": "PAUSED"`) {
		t.Fatalf("schedules show -o json:\n%s", out)
	}
	c.must("schedules", "resume", "disk-report")
	c.must("schedules", "delete", "disk-report")
	if _, errOut, code := c.run("schedules", "show", "nope"); code != exitError || !strings.Contains(errOut, `"nope"`) {
		t.Fatalf("schedules show of nothing: exit %d, %q", code, errOut)
	}
	if out := c.must("nodes", "drain", "web-1", "--reason", "disk swap"); !strings.Contains(out, "cordoned") {
		t.Fatalf("nodes drain:\n%s", out)
	}
	// A job for a drained node: cairn says it waits, and why.
	_, errOut, _ := c.run("run", "--node", "web-1", "--detach", "--", "true")
	if !strings.Contains(errOut, "node web-1 is") || !strings.Contains(errOut, "waits in the queue until it is undrained") {
		t.Fatalf("run on a drained node said nothing of it: %q", errOut)
	}
	c.must("nodes", "undrain", web)
	if out := c.must("nodes", "decommission", "web-1", "--reason", "retired"); !strings.Contains(out, "DECOMMISSIONED") {
		t.Fatalf("nodes decommission:\n%s", out)
	}
	if _, errOut, code := c.run("run", "--node", "web-1", "--", "true"); code != exitError || !strings.Contains(errOut, "decommissioned") {
		t.Fatalf("run on a decommissioned node: exit %d, %q", code, errOut)
	}
	if _, errOut, code := c.run("nodes", "drain", "no-such-host"); code != exitError || !strings.Contains(errOut, `no node has the id or name "no-such-host"`) {
		t.Fatalf("drain of an unknown node: exit %d, %q", code, errOut)
	}
	if out := c.must("locations", "retire", "par-1"); !strings.Contains(out, "RETIRED") {
		t.Fatalf("locations retire:\n%s", out)
	}
}
