package ocl

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"cairn/domain"
)

const head = "apiVersion: cairn/v1\nmetadata: {name: svc, version: 1.0.0}\n"

func TestValidateProblemPaths(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, path, msg string
	}{
		{"missing field", "apiVersion: cairn/v1\nmetadata: {version: 1.0.0}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"metadata.name", "is required"},
		{"wrong api version", "apiVersion: cairn/v2\nmetadata: {name: svc, version: 1.0.0}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"apiVersion", `must be "cairn/v1"`},
		{"bad service name", "apiVersion: cairn/v1\nmetadata: {name: My_Svc, version: 1.0.0}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"metadata.name", `lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen, got "My_Svc"`},
		{"bad version", "apiVersion: cairn/v1\nmetadata: {name: svc, version: v1}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"metadata.version", "semantic version"},
		{"unknown field", head + "resources: [{name: a, plugin: noop, type: thing, dependOn: [b]}]\n",
			"resources[0].dependOn", "is not a known field"},
		{"negative count", head + "resources: [{name: a, plugin: noop, type: thing}, {name: b, plugin: noop, type: thing, count: -1}]\n",
			"resources[1].count", "must be at least 0"},
		{"count not an expression", head + "resources: [{name: a, plugin: noop, type: thing, count: 'three'}]\n",
			"resources[0].count", "must be an integer or a single ${var.NAME} expression"},
		{"bad variable name", head + "variables: {1st: {type: string}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			`variables["1st"]`, "invalid name: must be letters, digits and underscores"},
		{"bad label key", head + "resources: [{name: a, plugin: noop, type: thing, placement: {labels: {'-x': y}}}]\n",
			`resources[0].placement.labels["-x"]`, "invalid name"},
		{"request not a size", head + "resources: [{name: a, plugin: noop, type: thing, requests: {memory: lots}}]\n",
			"resources[0].requests.memory", `"lots" is not a size`},
		{"negative cpu", head + "resources: [{name: a, plugin: noop, type: thing, requests: {cpu: '-2'}}]\n",
			"resources[0].requests.cpu", "is negative"},
		{"request of unknown kind", head + "resources: [{name: a, plugin: noop, type: thing, requests: {gpu: 1}}]\n",
			"resources[0].requests.gpu", "is not a known field"},
		{"unknown operator", head + "resources: [{name: a, plugin: noop, type: thing, placement: {selector: 'env ~ prod'}}]\n",
			"resources[0].placement.selector", `unknown operator "~"`},
		{"spread scope", head + "resources: [{name: a, plugin: noop, type: thing, placement: {spread: rack}}]\n",
			"resources[0].placement.spread", `must be one of "node", "location"`},
		{"empty resources", head + "resources: []\n",
			"resources", "must not be empty"},
		{"health check type", head + "resources: [{name: a, plugin: noop, type: thing}]\nhealthChecks: [{name: h, resource: a, type: ping, properties: {}}]\n",
			"healthChecks[0].type", `must be one of "process", "tcp", "http", "command"`},
		{"tcp check without port", head + "resources: [{name: a, plugin: noop, type: thing}]\nhealthChecks: [{name: h, resource: a, type: tcp, properties: {}}]\n",
			"healthChecks[0].properties.port", "is required"},
		{"bad duration", head + "resources: [{name: a, plugin: noop, type: thing}]\nhealthChecks: [{name: h, resource: a, type: tcp, properties: {port: 80}, interval: soon}]\n",
			"healthChecks[0].interval", "must be a duration"},
		{"duplicate resource", head + "resources: [{name: a, plugin: noop, type: thing}, {name: b, plugin: noop, type: thing}, {name: a, plugin: noop, type: thing}]\n",
			"resources[2].name", `duplicate resource name "a"; resources[0] already uses it`},
		{"unknown plugin", head + "resources: [{name: a, plugin: nope, type: thing}]\n",
			"resources[0].plugin", `unknown plugin "nope"`},
		{"unknown type", head + "resources: [{name: a, plugin: agent, type: socket}]\n",
			"resources[0].type", `plugin "agent" has no resource type "socket"; it offers: directory, file, process`},
		{"property schema", head + "resources: [{name: a, plugin: noop, type: thing}, {name: b, plugin: noop, type: thing}, {name: p, plugin: agent, type: process, properties: {argv: [x], port: 'http'}}]\n",
			"resources[2].properties.port", "must be an integer, got string"},
		{"property schema required", head + "resources: [{name: d, plugin: agent, type: directory, properties: {mode: '0755'}}]\n",
			"resources[0].properties.path", "is required"},
		{"property schema nested", head + "resources: [{name: p, plugin: agent, type: process, properties: {argv: [x, 1]}}]\n",
			"resources[0].properties.argv[1]", "must be a string, got integer"},
		{"unknown variable", head + "resources: [{name: d, plugin: agent, type: directory, properties: {path: '/srv/${var.root}'}}]\n",
			"resources[0].properties.path", `unknown variable "root"; the descriptor declares no variables`},
		{"unknown resource", head + "resources: [{name: d, plugin: noop, type: thing, properties: {x: ['${resource.db.outputs.host}']}}]\n",
			"resources[0].properties.x[0]", `unknown resource "db"; declared resources: d`},
		{"unknown dependsOn", head + "resources: [{name: a, plugin: noop, type: thing, dependsOn: [b]}]\n",
			"resources[0].dependsOn[0]", `unknown resource "b"`},
		{"self dependsOn", head + "resources: [{name: a, plugin: noop, type: thing, dependsOn: [a]}]\n",
			"resources[0].dependsOn[0]", "a resource cannot depend on itself"},
		{"self output", head + "resources: [{name: a, plugin: noop, type: thing, properties: {x: '${resource.a.outputs.y}'}}]\n",
			"resources[0].properties.x", "a resource cannot use its own outputs"},
		{"unterminated expression", head + "resources: [{name: a, plugin: noop, type: thing, properties: {x: 'a ${var.b'}}]\n",
			"resources[0].properties.x", `expression at character 3 is not closed with "}"`},
		{"bad expression", head + "resources: [{name: a, plugin: noop, type: thing, properties: {x: '${env.HOME}'}}]\n",
			"resources[0].properties.x", "invalid expression ${env.HOME}: expected var.NAME"},
		{"output unknown resource", head + "resources: [{name: a, plugin: noop, type: thing}]\noutputs: {url: {value: 'http://${resource.lb.outputs.ip}'}}\n",
			"outputs.url.value", `unknown resource "lb"`},
		{"output unknown variable", head + "resources: [{name: a, plugin: noop, type: thing}]\noutputs: {url: {value: {host: '${var.host}'}}}\n",
			"outputs.url.value.host", `unknown variable "host"`},
		{"output count.index", head + "resources: [{name: a, plugin: noop, type: thing}]\noutputs: {i: {value: '${count.index}'}}\n",
			"outputs.i.value", "${count.index} has a value only in a resource with count"},
		{"output sensitive", head + "variables: {pw: {type: string, sensitive: true, default: x}}\nresources: [{name: a, plugin: noop, type: thing}]\noutputs: {pw: {value: '${var.pw}'}}\n",
			"outputs.pw", `uses sensitive variable "pw"; set sensitive: true`},
		{"health check unknown resource", head + "resources: [{name: a, plugin: noop, type: thing}]\nhealthChecks: [{name: h, resource: b, type: tcp, properties: {port: 80}}]\n",
			"healthChecks[0].resource", `unknown resource "b"`},
		{"health check duplicate", head + "resources: [{name: a, plugin: noop, type: thing}]\nhealthChecks: [{name: h, resource: a, type: tcp, properties: {port: 80}}, {name: h, resource: a, type: tcp, properties: {port: 81}}]\n",
			"healthChecks[1].name", `duplicate health check name "h"`},
		{"health check timeout", head + "resources: [{name: a, plugin: noop, type: thing}]\nhealthChecks: [{name: h, resource: a, type: tcp, properties: {port: 80}, interval: 2s, timeout: 3s}]\n",
			"healthChecks[0].timeout", "3s is longer than the interval 2s"},
		{"health check zero interval", head + "resources: [{name: a, plugin: noop, type: thing}]\nhealthChecks: [{name: h, resource: a, type: tcp, properties: {port: 80}, interval: 0s}]\n",
			"healthChecks[0].interval", "must be longer than zero"},
		{"default breaks validation", head + "variables: {port: {type: integer, default: 80, validation: {minimum: 1024}}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"variables.port.default", "must be at least 1024"},
		{"default wrong type", head + "variables: {port: {type: integer, default: '80'}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"variables.port.default", "must be an integer, got string"},
		{"default not in enum", head + "variables: {size: {type: string, default: xl, validation: {enum: [s, m]}}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"variables.size.default", `must be one of "s", "m"`},
		{"default pattern", head + "variables: {host: {type: string, default: 'A B', validation: {pattern: '^[a-z]+$'}}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"variables.host.default", `must match the pattern "^[a-z]+$"`},
		{"required with default", head + "variables: {x: {type: string, required: true, default: a}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"variables.x", "is required and has a default"},
		{"rule for other type", head + "variables: {n: {type: integer, validation: {pattern: '^1'}}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"variables.n.validation.pattern", "applies to strings only; this variable is an integer"},
		{"min above max", head + "variables: {n: {type: number, validation: {minimum: 5, maximum: 1.5}}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"variables.n.validation", "minimum 5 is greater than maximum 1.5"},
		{"bad regexp", head + "variables: {s: {type: string, validation: {pattern: '(a'}}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"variables.s.validation.pattern", "is not a valid regular expression"},
		{"enum item type", head + "variables: {s: {type: string, validation: {enum: [a, 2]}}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"variables.s.validation.enum[1]", "must be a string, got integer"},
		{"flavor unknown variable", head + "variables: {n: {type: integer, default: 1}}\nflavors: {big: {variables: {m: 3}}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"flavors.big.variables.m", "is not a variable of this descriptor; declared variables: n"},
		{"flavor bad value", head + "variables: {n: {type: integer, default: 1, validation: {maximum: 5}}}\nflavors: {big: {variables: {n: 9}}}\nresources: [{name: a, plugin: noop, type: thing}]\n",
			"flavors.big.variables.n", "must be at most 5"},
		{"count unknown variable", head + "resources: [{name: a, plugin: noop, type: thing, count: '${var.n}'}]\n",
			"resources[0].count", `unknown variable "n"`},
		{"count string variable", head + "variables: {n: {type: string, default: '2'}}\nresources: [{name: a, plugin: noop, type: thing, count: '${var.n}'}]\n",
			"resources[0].count", `variable "n" is a string; a count needs an integer variable`},
		{"count.index without count", head + "resources: [{name: a, plugin: noop, type: thing, properties: {i: '${count.index}'}}]\n",
			"resources[0].properties.i", "${count.index} has a value only in a resource with count"},
		{"counted without index", head + "resources: [{name: a, plugin: noop, type: thing, count: 2}, {name: b, plugin: noop, type: thing, properties: {x: '${resource.a.outputs.ip}'}}]\n",
			"resources[1].properties.x", `resource "a" has a count; pick an instance`},
		{"uncounted with index", head + "resources: [{name: a, plugin: noop, type: thing}, {name: b, plugin: noop, type: thing, properties: {x: '${resource.a[0].outputs.ip}'}}]\n",
			"resources[1].properties.x", `resource "a" has no count; refer to it as ${resource.a.outputs.ip}`},
		{"index out of range", head + "resources: [{name: a, plugin: noop, type: thing, count: 2}, {name: b, plugin: noop, type: thing, properties: {x: '${resource.a[2].outputs.ip}'}}]\n",
			"resources[1].properties.x", `index 2 is out of range: resource "a" has 2 instances`},
		{"count.index runs past", head + "resources: [{name: a, plugin: noop, type: thing, count: 2}, {name: b, plugin: noop, type: thing, count: 3, properties: {x: '${resource.a[count.index].outputs.ip}'}}]\n",
			"resources[1].properties.x", `resource "a" has 2 instances but this one has 3`},
		{"placement output", head + "resources: [{name: a, plugin: noop, type: thing}, {name: b, plugin: noop, type: thing, placement: {location: '${resource.a.outputs.zone}'}}]\n",
			"resources[1].placement.location", "placement is decided before any resource exists"},
		{"cycle", head + "resources: [{name: a, plugin: noop, type: thing, dependsOn: [b]}, {name: b, plugin: noop, type: thing, properties: {x: '${resource.c.outputs.y}'}}, {name: c, plugin: noop, type: thing, dependsOn: [a]}]\n",
			"resources", "dependency cycle: a -> b -> c -> a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := Parse([]byte(tc.doc))
			if err == nil {
				err = d.Validate(catalog)
			}
			ps := problemsOf(t, err)
			if !hasProblem(ps, tc.path, tc.msg) {
				t.Fatalf("want %s: ...%s...\ngot %v", tc.path, tc.msg, err)
			}
			if !errors.Is(err, domain.ErrInvalid) {
				t.Errorf("errors.Is(err, domain.ErrInvalid) = false")
			}
		})
	}
}

func TestValidateReportsEverythingAtOnce(t *testing.T) {
	t.Parallel()
	d := mustParse(t, head+`variables:
  port: {type: integer, default: 99999, validation: {maximum: 65535}}
resources:
  - {name: a, plugin: noop, type: thing, dependsOn: [ghost], colour: blue}
  - {name: a, plugin: noop, type: thing}
outputs:
  x: {value: "${var.nope}"}
`)
	ps := problemsOf(t, d.Validate(catalog))
	want := []Problem{
		{"resources[0].colour", "is not a known field"},
		{"resources[1].name", `duplicate resource name "a"; resources[0] already uses it`},
		{"variables.port.default", "must be at most 65535"},
		{"resources[0].dependsOn[0]", `unknown resource "ghost"; declared resources: a`},
		{"outputs.x.value", `unknown variable "nope"; declared variables: port`},
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(ps), len(want), &ValidationError{Problems: ps})
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Errorf("problem %d = %q, want %q", i, ps[i], want[i])
		}
	}
	msg := (&ValidationError{Problems: ps}).Error()
	if !strings.HasPrefix(msg, "5 problems:\n  resources[0].colour: is not a known field\n") {
		t.Errorf("Error() = %q", msg)
	}
}

func TestCyclesNamed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		deps map[string][]string // resource -> dependsOn, declared in order a..f
		want []string
	}{
		{"two", map[string][]string{"a": {"b"}, "b": {"a"}}, []string{"dependency cycle: a -> b -> a"}},
		{"three inferred start", map[string][]string{"b": {"c"}, "c": {"d"}, "d": {"b"}, "a": {"b"}}, []string{"dependency cycle: b -> c -> d -> b"}},
		{"two separate", map[string][]string{"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, []string{"dependency cycle: a -> b -> a", "dependency cycle: c -> d -> c"}},
		{"shortest through first", map[string][]string{"a": {"b", "c"}, "b": {"c"}, "c": {"a"}}, []string{"dependency cycle: a -> c -> a"}},
		{"acyclic", map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			b.WriteString(head + "resources:\n")
			for _, n := range []string{"a", "b", "c", "d"} {
				deps, ok := tc.deps[n]
				if !ok {
					continue
				}
				b.WriteString("  - {name: " + n + ", plugin: noop, type: thing, dependsOn: [" + strings.Join(deps, ", ") + "]}\n")
			}
			ps := problemsOf(t, mustParse(t, b.String()).Validate(nil))
			var got []string
			for _, p := range ps {
				if p.Path != "resources" {
					t.Errorf("unexpected problem %v", p)
				}
				got = append(got, p.Message)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPropertySchemaSkipsExpressions(t *testing.T) {
	t.Parallel()
	d := mustParse(t, head+`variables:
  port: {type: string, default: "80"}
resources:
  - name: p
    plugin: agent
    type: process
    properties:
      argv: [srv]
      port: ${var.port}
      env: {A: "x-${var.port}", B: 3}
`)
	ps := problemsOf(t, d.Validate(catalog))
	if len(ps) != 1 || ps[0] != (Problem{"resources[0].properties.env.B", "must be a string, got integer"}) {
		t.Fatalf("got %v", ps)
	}
}

func TestPropertySchemaThatDoesNotCompile(t *testing.T) {
	t.Parallel()
	cat := testCatalog{"x": {"y": raw(`{"$ref": "https://example.com/s.json"}`)}}
	d := mustParse(t, head+"resources: [{name: a, plugin: x, type: y}]\n")
	ps := problemsOf(t, d.Validate(cat))
	if !hasProblem(ps, "resources[0].type", `plugin "x" publishes a property schema for "y" that does not compile`) {
		t.Fatalf("got %v", ps)
	}
}

func TestExampleWebapp(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/examples/webapp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := mustParse(t, string(data))
	if err := d.Validate(catalog); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	vars, err := d.ResolveVariables("fast", map[string]json.RawMessage{
		"hostname":  raw(`"www.example.net"`),
		"dns_token": raw(`"s3cret"`),
	})
	if err != nil {
		t.Fatalf("ResolveVariables: %v", err)
	}
	g, err := d.Plan(vars, ServiceContext{ID: "svc-1", Tenant: "acme"})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	levels := g.Levels()
	if got := strings.Join(flatten(levels), " | "); got != "site-root dns | index-page web" {
		t.Errorf("levels = %q", got)
	}
	dns, _ := g.Node("dns")
	if !dns.Sensitive {
		t.Errorf("dns node carries the token but is not marked sensitive")
	}
	if got := d.SensitiveVariables(); len(got) != 1 || got[0] != "dns_token" {
		t.Errorf("SensitiveVariables = %v", got)
	}
	web, _ := g.Node("web")
	if got := string(web.Properties); !strings.Contains(got, `"argv":["caddy","file-server","--root","${resource.site-root.outputs.path}","--listen",":8080"]`) ||
		!strings.Contains(got, `"node":"${resource.site-root.outputs.node}"`) {
		t.Errorf("web properties = %s", got)
	}
	if site, _ := g.Node("site-root"); site.Placement == nil || site.Placement.Labels["disk"] != "ssd" || site.Placement.Location != "eu-west-1" {
		t.Errorf("site-root placement = %+v", site.Placement)
	}

	// docs/ocl.md shows this very file.
	docs, err := os.ReadFile("../../docs/ocl.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docs), "```yaml\n"+string(data)+"```") {
		t.Errorf("the example in docs/ocl.md differs from testdata/examples/webapp.yaml")
	}
}

func flatten(levels [][]string) []string {
	out := make([]string, len(levels))
	for i, l := range levels {
		out[i] = strings.Join(l, " ")
	}
	return out
}
