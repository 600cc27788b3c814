package ocl

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

var svc = ServiceContext{ID: "svc-42", Tenant: "acme"}

func plan(t *testing.T, doc string, vars map[string]json.RawMessage) *Graph {
	t.Helper()
	d := mustParse(t, doc)
	resolved, err := d.ResolveVariables("", vars)
	if err != nil {
		t.Fatalf("ResolveVariables: %v", err)
	}
	g, err := d.Plan(resolved, svc)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return g
}

func TestPlanDiamond(t *testing.T) {
	t.Parallel()
	// d needs b and c, which both need a: a, then b and c together, then d.
	g := plan(t, head+`resources:
  - {name: d, plugin: noop, type: thing, dependsOn: [b], properties: {x: "${resource.c.outputs.y}"}}
  - {name: c, plugin: noop, type: thing, dependsOn: [a]}
  - {name: b, plugin: noop, type: thing, properties: {from: "${resource.a.outputs.id}"}}
  - {name: a, plugin: noop, type: thing}
`, nil)
	if got := flatten(g.Levels()); !slices.Equal(got, []string{"a", "c b", "d"}) {
		t.Errorf("Levels = %q", got)
	}
	if got := flatten(g.ReverseLevels()); !slices.Equal(got, []string{"d", "c b", "a"}) {
		t.Errorf("ReverseLevels = %q", got)
	}
	if got := g.Order(); !slices.Equal(got, []string{"a", "c", "b", "d"}) {
		t.Errorf("Order = %q", got)
	}
	if got := g.Reverse(); !slices.Equal(got, []string{"d", "b", "c", "a"}) {
		t.Errorf("Reverse = %q", got)
	}
	if got := g.Dependents("a"); !slices.Equal(got, []string{"c", "b"}) {
		t.Errorf("Dependents(a) = %q", got)
	}
	if got := g.Dependents("d"); len(got) != 0 {
		t.Errorf("Dependents(d) = %q", got)
	}
	d, _ := g.Node("d")
	if !slices.Equal(d.DependsOn, []string{"c", "b"}) {
		t.Errorf("d.DependsOn = %q (want plan order)", d.DependsOn)
	}
}

func TestPlanCountExpansion(t *testing.T) {
	t.Parallel()
	doc := head + `variables:
  n: {type: integer, default: 2}
resources:
  - {name: net, plugin: noop, type: thing}
  - name: vm
    plugin: noop
    type: thing
    count: ${var.n}
    properties: {index: "${count.index}", label: "vm-${count.index}", net: "${resource.net.outputs.id}"}
  - name: disk
    plugin: noop
    type: thing
    count: 2
    properties: {vm: "${resource.vm[count.index].outputs.id}", first: "${resource.vm[0].outputs.id}"}
  - {name: backup, plugin: noop, type: thing, dependsOn: [disk]}
  - {name: none, plugin: noop, type: thing, count: 0, dependsOn: [vm]}
  - {name: after-none, plugin: noop, type: thing, dependsOn: [none]}
`
	g := plan(t, doc, nil)
	var names []string
	for _, n := range g.Nodes() {
		names = append(names, n.Name)
	}
	if !slices.Equal(names, []string{"net", "vm[0]", "vm[1]", "disk[0]", "disk[1]", "backup", "after-none"}) {
		t.Fatalf("nodes = %q", names)
	}
	vm1, _ := g.Node("vm[1]")
	if vm1.Resource != "vm" || vm1.Index != 1 || vm1.ResourceID != ResourceID("svc-42", "vm[1]") {
		t.Errorf("vm[1] = %+v", vm1)
	}
	if got := string(vm1.Properties); got != `{"index":1,"label":"vm-1","net":"${resource.net.outputs.id}"}` {
		t.Errorf("vm[1] properties = %s", got)
	}
	disk1, _ := g.Node("disk[1]")
	if !slices.Equal(disk1.DependsOn, []string{"vm[0]", "vm[1]"}) {
		t.Errorf("disk[1].DependsOn = %q", disk1.DependsOn)
	}
	if got := string(disk1.Properties); got != `{"first":"${resource.vm[0].outputs.id}","vm":"${resource.vm[1].outputs.id}"}` {
		t.Errorf("disk[1] properties = %s", got)
	}
	backup, _ := g.Node("backup")
	if !slices.Equal(backup.DependsOn, []string{"disk[0]", "disk[1]"}) {
		t.Errorf("backup.DependsOn = %q", backup.DependsOn)
	}
	if after, _ := g.Node("after-none"); len(after.DependsOn) != 0 {
		t.Errorf("after-none depends on %q", after.DependsOn)
	}
	if got := flatten(g.Levels()); !slices.Equal(got, []string{"net after-none", "vm[0] vm[1]", "disk[0] disk[1]", "backup"}) {
		t.Errorf("Levels = %q", got)
	}

	// The count follows the variable; too few instances for a literal index
	// is caught at plan time.
	d := mustParse(t, doc)
	vars, _ := d.ResolveVariables("", map[string]json.RawMessage{"n": raw("1")})
	_, err := d.Plan(vars, svc)
	if ps := problemsOf(t, err); !hasProblem(ps, "resources[2].properties.vm", `index 1 is out of range: resource "vm" has 1 instance`) {
		t.Errorf("got %v", err)
	}
}

func TestPlanErrors(t *testing.T) {
	t.Parallel()
	d := mustParse(t, head+`variables:
  n: {type: integer}
resources:
  - {name: a, plugin: noop, type: thing, count: "${var.n}"}
`)
	cases := []struct {
		name string
		vars map[string]json.RawMessage
		svc  ServiceContext
		path string
		msg  string
	}{
		{"count too large", map[string]json.RawMessage{"n": raw("1000")}, svc, "resources[0].count", `variable "n" is 1000; a count must be an integer from 0 to 256`},
		{"count null", map[string]json.RawMessage{"n": raw("null")}, svc, "resources[0].count", `variable "n" is null`},
		{"count unresolved", map[string]json.RawMessage{}, svc, "resources[0].count", `variable "n" has no value; resolve variables with ResolveVariables first`},
		{"no service id", map[string]json.RawMessage{"n": raw("1")}, ServiceContext{}, "service.id", "is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := d.Plan(tc.vars, tc.svc)
			if ps := problemsOf(t, err); !hasProblem(ps, tc.path, tc.msg) {
				t.Errorf("got %v", err)
			}
		})
	}
	bad := mustParse(t, head+"resources: [{name: a, plugin: noop, type: thing, dependsOn: [a]}]\n")
	if _, err := bad.Plan(nil, svc); err == nil {
		t.Errorf("Plan accepted an invalid descriptor")
	}
	tooMany := mustParse(t, head+"resources:\n"+strings.Repeat("  - {name: r, plugin: noop, type: thing, count: 256}\n", 1)+
		"  - {name: s, plugin: noop, type: thing, count: 256}\n  - {name: t, plugin: noop, type: thing, count: 256}\n"+
		"  - {name: u, plugin: noop, type: thing, count: 256}\n  - {name: v, plugin: noop, type: thing}\n")
	if _, err := tooMany.Plan(nil, svc); !hasProblem(problemsOf(t, err), "resources", "the plan has 1025 instances; at most 1024") {
		t.Errorf("got %v", err)
	}
}

func TestPlanSubstitution(t *testing.T) {
	t.Parallel()
	doc := head + `variables:
  port: {type: integer, default: 8080}
  ratio: {type: number, default: 0.25}
  on: {type: boolean, default: true}
  env: {type: object, default: {A: "1", B: "${not.an.expression}"}}
  list: {type: array, default: [1, "two"]}
  note: {type: string}
  tricky: {type: string, default: "${resource.x.outputs.y}"}
  secret: {type: string, sensitive: true, default: pw}
  zone: {type: string, default: z1}
resources:
  - {name: db, plugin: noop, type: thing}
  - name: app
    plugin: noop
    type: thing
    properties:
      port: ${var.port}
      spaced: "${ var.port }"
      ratio: ${var.ratio}
      on: ${var.on}
      env: ${var.env}
      list: ${var.list}
      note: ${var.note}
      url: "http://${service.tenant}.example:${var.port}/${var.note}"
      json: "cfg=${var.env}"
      literal: "cost: $${var.port} and $$${var.zone}"
      tricky: ${var.tricky}
      trickyText: "t=${var.tricky}"
      id: ${service.id}
      host: ${resource.db.outputs.host}
      dsn: "postgres://${resource.db.outputs.host}:${resource.db.outputs.port}/app"
    placement:
      location: ${var.zone}
      labels: {port: "${var.port}", literal: "$${x}"}
  - {name: vault, plugin: noop, type: thing, properties: {pw: "${var.secret}"}}
outputs:
  dsn: {value: "${resource.db.outputs.host}:${var.port}", description: where}
  pw: {value: "${var.secret}", sensitive: true}
`
	g := plan(t, doc, nil)
	app, _ := g.Node("app")
	var props map[string]any
	if err := json.Unmarshal(app.Properties, &props); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"port":       8080.0,
		"spaced":     8080.0,
		"ratio":      0.25,
		"on":         true,
		"env":        map[string]any{"A": "1", "B": "$${not.an.expression}"},
		"list":       []any{1.0, "two"},
		"note":       nil,
		"url":        "http://acme.example:8080/",
		"json":       `cfg={"A":"1","B":"$${not.an.expression}"}`,
		"literal":    "cost: $${var.port} and $$${var.zone}",
		"tricky":     "$${resource.x.outputs.y}",
		"trickyText": "t=$${resource.x.outputs.y}",
		"id":         "svc-42",
		"host":       "${resource.db.outputs.host}",
		"dsn":        "postgres://${resource.db.outputs.host}:${resource.db.outputs.port}/app",
	}
	for k, w := range want {
		if got, _ := json.Marshal(props[k]); string(got) != mustJSON(w) {
			t.Errorf("%s = %s, want %s", k, got, mustJSON(w))
		}
	}
	if app.Placement == nil || app.Placement.Location != "z1" || app.Placement.Labels["port"] != "8080" || app.Placement.Labels["literal"] != "${x}" {
		t.Errorf("placement = %+v", app.Placement)
	}
	if !slices.Equal(app.DependsOn, []string{"db"}) || app.Sensitive {
		t.Errorf("app.DependsOn = %q, Sensitive = %v", app.DependsOn, app.Sensitive)
	}
	if vault, _ := g.Node("vault"); !vault.Sensitive {
		t.Errorf("vault holds a sensitive value but is not marked")
	}

	// At run time the output references are filled and the escapes undone.
	outputs := map[string]json.RawMessage{"host": raw(`"db.internal"`), "port": raw("5432")}
	resolved, err := ResolveProperties(app.Properties, func(res string, idx int, key string) (json.RawMessage, bool) {
		if res != "db" || idx != -1 {
			t.Errorf("lookup %s[%d]", res, idx)
		}
		v, ok := outputs[key]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	var final map[string]any
	_ = json.Unmarshal(resolved, &final)
	finalWant := map[string]any{
		"host":       "db.internal",
		"dsn":        "postgres://db.internal:5432/app",
		"literal":    "cost: ${var.port} and $${var.zone}",
		"tricky":     "${resource.x.outputs.y}",
		"trickyText": "t=${resource.x.outputs.y}",
		"env":        map[string]any{"A": "1", "B": "${not.an.expression}"},
		"json":       `cfg={"A":"1","B":"${not.an.expression}"}`,
		"port":       8080.0,
	}
	for k, w := range finalWant {
		if got, _ := json.Marshal(final[k]); string(got) != mustJSON(w) {
			t.Errorf("resolved %s = %s, want %s", k, got, mustJSON(w))
		}
	}

	outs := g.Outputs()
	if o := outs["dsn"]; string(o.Value) != `"${resource.db.outputs.host}:8080"` || o.Description != "where" || o.Sensitive {
		t.Errorf("output dsn = %+v", o)
	}
	if o := outs["pw"]; string(o.Value) != `"pw"` || !o.Sensitive {
		t.Errorf("output pw = %+v", o)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestResolveProperties(t *testing.T) {
	t.Parallel()
	outputs := map[string]json.RawMessage{
		"web[1].ip":   raw(`"10.0.0.2"`),
		"web[1].port": raw(`443`),
		"web[1].tags": raw(`{"b": [1, null], "a": true}`),
		"db.none":     raw(`null`),
		"db.bad":      raw(`{nope`),
	}
	lookup := func(res string, idx int, key string) (json.RawMessage, bool) {
		v, ok := outputs[instanceName(res, idx)+"."+key]
		return v, ok
	}
	cases := []struct{ in, want, err string }{
		{in: `"${resource.web[1].outputs.port}"`, want: `443`},
		{in: `"${resource.web[1].outputs.tags}"`, want: `{"a":true,"b":[1,null]}`},
		{in: `["${resource.web[1].outputs.ip}:${resource.web[1].outputs.port}"]`, want: `["10.0.0.2:443"]`},
		{in: `{"t": "tags=${resource.web[1].outputs.tags}", "n": "[${resource.db.outputs.none}]"}`, want: `{"n":"[]","t":"tags={\"a\":true,\"b\":[1,null]}"}`},
		{in: `{"lit": "$${resource.web[1].outputs.ip}", "n": 1.50}`, want: `{"lit":"${resource.web[1].outputs.ip}","n":1.5}`},
		{in: `{"a": {"b": "${resource.web[0].outputs.ip}"}}`, err: `a.b: resource "web[0]" has no output "ip"`},
		{in: `"${var.x}"`, err: "${var.x} should have been substituted by Plan"},
		{in: `"${resource.db.outputs.bad}"`, err: "not valid JSON"},
		{in: `"${oops"`, err: "is not closed"},
		{in: `{"a":`, err: "not valid JSON"},
	}
	for _, tc := range cases {
		got, err := ResolveProperties(raw(tc.in), lookup)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want ...%s...", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	_, err := ResolveProperties(raw(`"${resource.web[0].outputs.ip}"`), lookup)
	var missing *MissingOutputError
	if !errors.As(err, &missing) || missing.Resource != "web" || missing.Index != 0 || missing.Key != "ip" {
		t.Errorf("missing output error = %#v", err)
	}
	if got, err := ResolveProperties(nil, lookup); err != nil || got != nil {
		t.Errorf("nil properties = %s, %v", got, err)
	}
}

func TestResourceID(t *testing.T) {
	t.Parallel()
	a := ResourceID("svc-1", "web[0]")
	if a != ResourceID("svc-1", "web[0]") || len(a) != 32 {
		t.Fatalf("ResourceID = %q", a)
	}
	for _, other := range []string{ResourceID("svc-2", "web[0]"), ResourceID("svc-1", "web[1]"), ResourceID("svc-1", "web"), ResourceID("svc-1\nweb[0]", "")} {
		if other == a {
			t.Errorf("collision with %q", other)
		}
	}
	// Pinned: changing the rule would orphan every resource already created.
	if got := ResourceID("svc-1", "web"); got != "c0320e1c6c3b274a79d1f686dbe163c0" {
		t.Errorf("ResourceID(svc-1, web) = %s", got)
	}
}

func TestGraphJSONRoundTrip(t *testing.T) {
	t.Parallel()
	g := plan(t, head+`resources:
  - {name: a, plugin: noop, type: thing, count: 2, placement: {location: x, labels: {k: v}}}
  - {name: b, plugin: noop, type: thing, dependsOn: [a], properties: {x: "${resource.a[1].outputs.y}"}}
healthChecks:
  - {name: up, resource: a, type: tcp, properties: {port: 22}, interval: 1m}
`, nil)
	data, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var back Graph
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Order(), g.Order()) || !slices.Equal(back.Dependents("a[0]"), []string{"b"}) {
		t.Errorf("round trip lost structure: %q", back.Order())
	}
	checks := back.HealthChecks()
	if len(checks) != 2 || checks[1].Node != "a[1]" || checks[1].Interval != time.Minute || checks[1].Timeout != 5*time.Second {
		t.Errorf("health checks = %+v", checks)
	}
	n, _ := back.Node("a[0]")
	n.Placement.Labels["k"] = "changed"
	if again, _ := back.Node("a[0]"); again.Placement.Labels["k"] != "v" {
		t.Errorf("Node returned shared state")
	}
	var cyclic Graph
	err = json.Unmarshal([]byte(`{"nodes":[{"name":"x","dependsOn":["y"]},{"name":"y","dependsOn":["x"]}]}`), &cyclic)
	if err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cyclic graph accepted: %v", err)
	}
	err = json.Unmarshal([]byte(`{"nodes":[{"name":"x","dependsOn":["ghost"]}]}`), &cyclic)
	if err == nil || !strings.Contains(err.Error(), "not in the graph") {
		t.Errorf("dangling dependency accepted: %v", err)
	}
}
