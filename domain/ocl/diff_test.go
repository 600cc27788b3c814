package ocl

import (
	"encoding/json"
	"strings"
	"testing"
)

const diffDoc = `apiVersion: cairn/v1
metadata: {name: shop, version: 1.0.0}
variables:
  port: {type: integer, default: 8080}
  token: {type: string, sensitive: true, default: a}
  extra: {type: boolean, default: false}
resources:
  - name: home
    plugin: agent
    type: directory
    properties: {path: /srv/shop}
  - name: web
    plugin: agent
    type: process
    properties: {argv: [serve], port: "${var.port}", node: "${resource.home.outputs.node}"}
  - name: dns
    plugin: http
    type: dns-record
    properties: {zone: z, name: n, type: A, target: "${var.token}"}
`

// The plan of an update: what changes where, why, the properties by path,
// secrets masked; what reads a changed resource's outputs changes too.
func TestDiff(t *testing.T) {
	t.Parallel()
	inPlace := func(plugin, typ string) bool { return typ == "process" }
	from := plan(t, diffDoc, nil)
	tests := []struct {
		name  string
		doc   string
		vars  string
		want  map[string]Action
		check func(t *testing.T, cs map[string]Change)
	}{
		{"nothing", diffDoc, `{}`, map[string]Action{"home": ActionKeep, "web": ActionKeep, "dns": ActionKeep}, nil},
		{"a variable", diffDoc, `{"port": 9090}`, map[string]Action{"home": ActionKeep, "web": ActionUpdate, "dns": ActionKeep},
			func(t *testing.T, cs map[string]Change) {
				p := cs["web"].Properties
				if len(p) != 1 || p[0].Path != "port" || string(p[0].Old) != "8080" || string(p[0].New) != "9090" {
					t.Errorf("web's properties %+v", p)
				}
			}},
		{"a secret", diffDoc, `{"token": "b"}`, map[string]Action{"home": ActionKeep, "web": ActionKeep, "dns": ActionReplace},
			func(t *testing.T, cs map[string]Change) {
				p := cs["dns"].Properties
				if len(p) != 1 || string(p[0].Old) != Masked || string(p[0].New) != Masked {
					t.Errorf("the secret shows: %+v", p)
				}
			}},
		{"a dependency replaced", strings.Replace(diffDoc, "path: /srv/shop", "path: /srv/shop2", 1), `{}`,
			map[string]Action{"home": ActionReplace, "web": ActionUpdate, "dns": ActionKeep},
			func(t *testing.T, cs map[string]Change) {
				if !strings.Contains(strings.Join(cs["web"].Reasons, ";"), "depends on home, which is replaced") {
					t.Errorf("web's reasons %v", cs["web"].Reasons)
				}
			}},
		{"added and dropped", strings.Replace(strings.Replace(diffDoc, "  - name: dns", "  - name: dns2", 1), "version: 1.0.0", "version: 1.1.0", 1), `{}`,
			map[string]Action{"home": ActionKeep, "web": ActionKeep, "dns2": ActionCreate, "dns": ActionDestroy}, nil},
	}
	for _, tc := range tests {
		var vars map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.vars), &vars); err != nil {
			t.Fatal(err)
		}
		to := plan(t, tc.doc, vars)
		cs := map[string]Change{}
		order := []string{}
		for _, c := range Diff(from, to, inPlace) {
			cs[c.Name] = c
			order = append(order, c.Name)
		}
		for name, want := range tc.want {
			if cs[name].Action != want {
				t.Errorf("%s: %s is %s, want %s (%v)", tc.name, name, cs[name].Action, want, cs[name].Reasons)
			}
		}
		if len(cs) != len(tc.want) {
			t.Errorf("%s: changes %v", tc.name, order)
		}
		if order[len(order)-1] != "dns" && tc.want["dns"] == ActionDestroy {
			t.Errorf("%s: what is destroyed comes last: %v", tc.name, order)
		}
		if tc.check != nil {
			tc.check(t, cs)
		}
	}
}
