package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/graph/client"
)

// noteTemplate is deployed by the filestore example plugin (out of
// process), which updates its files in place.
const noteTemplate = `apiVersion: cairn/v1
metadata: {name: note, version: 1.0.0, vendor: Example}
variables:
  greeting: {type: string, default: hello}
resources:
  - name: note
    plugin: filestore
    type: file
    properties: {name: note.txt, content: "${var.greeting}"}
`

// TestBlueprintAndUpdate drives cairn apply, cairn diff, cairn services plan
// and cairn services update against a cairnd with the filestore plugin.
func TestBlueprintAndUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn and cairnd and runs the server")
	}
	srv, store, c := filestoreServer(t)
	admin := client.New(srv.url, srv.token, nil)
	gql(t, admin, `mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { name } } }`, map[string]any{"d": noteTemplate}, nil)
	gql(t, admin, `mutation { publishTemplate(input: {name: "note", version: "1.0.0"}) { template { status } } }`, nil, nil)
	var created struct{ CreateTenant struct{ Cursor string } }
	gql(t, admin, `mutation { createTenant(input: {id: "acme", name: "Acme"}) { cursor } }`, nil, &created)
	// The blueprint names no version: its plan takes the newest published
	// one from the read models, which must have applied the publish first
	// (as a script reads its own writes).
	gql(t, admin, `query($c: Cursor) { templates(filter: {name: "note"}, consistentWith: $c) { edges { node { version } } } }`,
		map[string]any{"c": created.CreateTenant.Cursor}, nil)

	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bp := write("shop.yaml", `apiVersion: cairn/v1
kind: Blueprint
metadata: {name: shop}
tenant: acme
services:
  - {name: greeter, template: note, variables: {greeting: hi}}
  - {name: spare, template: note, running: false}
`)
	// diff before: everything to create, exit 3.
	out, errOut, code := c.run("diff", "-f", bp)
	if code != exitChanges || !strings.Contains(out, "greeter") || !strings.Contains(out, "create") {
		t.Fatalf("diff before apply: exit %d\n%s%s", code, out, errOut)
	}
	out = c.must("apply", "-f", bp)
	if !strings.Contains(out, "applied to tenant acme") {
		t.Fatalf("apply:\n%s", out)
	}
	rows := c.eventually(func(s string) bool { return strings.Count(s, "RUNNING")+strings.Count(s, "REGISTERED") == 2 },
		"services", "--blueprint", "shop", "-o", "wide")
	if !strings.Contains(rows, "BLUEPRINT") || !strings.Contains(rows, "shop") {
		t.Fatalf("services --blueprint shop -o wide:\n%s", rows)
	}
	// The same file again: nothing to do, exit 0.
	c.eventually(func(s string) bool { return strings.Contains(s, "nothing to do") }, "diff", "-f", bp)
	out = c.must("apply", "-f", bp)
	if !strings.Contains(out, "nothing to do") {
		t.Fatalf("second apply:\n%s", out)
	}
	// A mistake in the file names its path and changes nothing.
	bad := write("bad.yaml", strings.Replace(readFile(t, bp), "greeting: hi", "colour: red", 1))
	if _, errOut, code := c.run("apply", "-f", bad); code != exitError || !strings.Contains(errOut, "services[0].variables.colour") {
		t.Fatalf("bad blueprint: exit %d, %q", code, errOut)
	}

	// services plan and update on the blueprint's service.
	var list []serviceRow
	if err := json.Unmarshal([]byte(c.must("services", "--name", "greeter", "-o", "json")), &list); err != nil || len(list) != 1 {
		t.Fatalf("services --name greeter: %v %+v", err, list)
	}
	// Services are named by name, or TENANT/NAME.
	out = c.must("services", "plan", "greeter", "--var", "greeting=bonjour")
	if !strings.Contains(out, "update") || !strings.Contains(out, "content") || !strings.Contains(out, "1 to update in place") {
		t.Fatalf("services plan:\n%s", out)
	}
	out, errOut, code = c.run("services", "update", "acme/greeter", "--var", "greeting=bonjour", "--wait")
	if code != 0 || !strings.Contains(out, "revision 2") {
		t.Fatalf("services update: exit %d\n%s\n%s", code, out, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(store, "*", "note.txt"))
	found := false
	for _, f := range files {
		found = found || readFile(t, f) == "bonjour"
	}
	if !found {
		t.Fatalf("no note reads bonjour in %v", files)
	}
	// Its resources show by their names in the descriptor.
	if out := c.must("services", "show", list[0].ID); !strings.Contains(out, "\nnote ") {
		t.Errorf("services show lists no resource named note:\n%s", out)
	}
	if _, errOut, code := c.run("services", "show", "nobody"); code != exitError || !strings.Contains(errOut, `no service has the id or name "nobody"`) {
		t.Errorf("services show of a name nothing has: exit %d, %q", code, errOut)
	}
	// Tables show names: the tenant's, not its id; -o wide adds the ids.
	if out := c.must("services", "--name", "greeter"); !strings.HasPrefix(out, "NAME") || !strings.Contains(out, "Acme") || strings.Contains(out, list[0].ID) {
		t.Errorf("services table:\n%s", out)
	}
	if out := c.must("services", "--name", "greeter", "-o", "wide"); !strings.Contains(out, list[0].ID) {
		t.Errorf("services -o wide has no id:\n%s", out)
	}

	// The catalog: the latest of each template, and one version's variables.
	if out := c.must("templates"); !strings.Contains(out, "note") || !strings.Contains(out, "1.0.0") || !strings.Contains(out, "PUBLISHED") {
		t.Errorf("templates:\n%s", out)
	}
	if out := c.must("templates", "show", "note"); !strings.Contains(out, "greeting") || !strings.Contains(out, `"hello"`) {
		t.Errorf("templates show note:\n%s", out)
	}
	if _, errOut, code := c.run("templates", "show", "note@9.9.9"); code != exitError || !strings.Contains(errOut, "note@9.9.9") {
		t.Errorf("templates show of a missing version: exit %d, %q", code, errOut)
	}

	// The blueprint now differs from the service: diff says so.
	if out, _, code := c.run("diff", "-f", bp); code != exitChanges || !strings.Contains(out, "update") {
		t.Fatalf("diff after an update elsewhere: exit %d\n%s", code, out)
	}
}

// filestoreServer starts a cairnd whose filestore plugin (the example
// out-of-process plugin) keeps its files under store, and a CLI logged in
// to it as the administrator.
func filestoreServer(t *testing.T) (srv server, store string, c *cli) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the filestore example plugin is a Python program")
	}
	plugin, _ := filepath.Abs("../../examples/plugins/filestore/filestore.py")
	store = t.TempDir()
	pluginsFile := filepath.Join(t.TempDir(), "plugins.yaml")
	if err := os.WriteFile(pluginsFile, fmt.Appendf(nil, "exec:\n  - name: filestore\n    command: [%q, %q, %q]\n", python, plugin, store), 0o600); err != nil {
		t.Fatal(err)
	}
	srv = startServer(t, "--plugins", pluginsFile)
	c = newCLI(t)
	if _, errOut, code := c.runInput(srv.token+"\n", "login", "--server", srv.url); code != 0 {
		t.Fatalf("login: %s", errOut)
	}
	return srv, store, c
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServiceLifecycle drives a service through the CLI by its name alone:
// publish its template from a file, create it for a tenant named by name,
// stop, start, remove; with the cluster, schema and replay commands beside.
func TestServiceLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn and cairnd and runs the server")
	}
	srv, store, c := filestoreServer(t)
	descriptor := filepath.Join(t.TempDir(), "note.yaml")
	if err := os.WriteFile(descriptor, []byte(noteTemplate), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := c.must("templates", "publish", "-f", descriptor); !strings.Contains(out, "PUBLISHED") {
		t.Fatalf("templates publish:\n%s", out)
	}
	c.must("tenants", "create", "Acme", "--id", "acme")
	out := c.must("services", "create", "--template", "note", "--tenant", "Acme", "--name", "site", "--var", "greeting=hi", "--wait")
	if !strings.Contains(out, "registered") || !strings.Contains(out, "TENANT     Acme") {
		t.Fatalf("services create --wait:\n%s", out)
	}
	if notes, _ := filepath.Glob(filepath.Join(store, "*", "note.txt")); len(notes) != 1 || readFile(t, notes[0]) != "hi" {
		t.Fatalf("the filestore holds %v after the create", notes)
	}
	for _, step := range []struct{ verb, want string }{{"start", "running"}, {"stop", "stopped"}, {"start", "running"}, {"stop", "stopped"}} {
		if out, errOut, code := c.run("services", step.verb, "site", "--wait"); code != 0 || !strings.Contains(out, step.want) {
			t.Fatalf("services %s site --wait: exit %d\n%s%s", step.verb, code, out, errOut)
		}
	}
	// Retry is for a degraded service: refused, naming the state.
	if _, errOut, code := c.run("services", "retry", "site"); code != exitError || !strings.Contains(errOut, "CONFLICT") {
		t.Fatalf("services retry of a stopped service: exit %d, %q", code, errOut)
	}
	if out, errOut, code := c.run("services", "remove", "acme/site", "--wait"); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("services remove acme/site --wait: exit %d\n%s%s", code, out, errOut)
	}

	if notes, _ := filepath.Glob(filepath.Join(store, "*", "note.txt")); len(notes) != 0 {
		t.Fatalf("the filestore still holds %v after the removal", notes)
	}

	if out := c.must("cluster", "status"); !strings.Contains(out, "dispatch") {
		t.Errorf("cluster status names no owner of the dispatch:\n%s", out)
	}
	if out := c.must("ocl", "schema"); !strings.Contains(out, `"$schema"`) {
		t.Errorf("ocl schema:\n%.300s", out)
	}
	if out := c.must("completion", "bash"); !strings.Contains(out, "cairn") || !strings.Contains(out, "complete") {
		t.Errorf("completion bash:\n%.300s", out)
	}
	direct := newCLI(t)
	direct.databaseURL = srv.db
	if out := direct.must("replay", "--until", time.Now().UTC().Format(time.RFC3339)); !strings.Contains(out, "replayed") {
		t.Errorf("replay:\n%s", out)
	}
}
