package ocl

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParseValidate feeds arbitrary documents through everything a catalog
// upload and a deployment do with them. Nothing may panic; errors must be
// the package's typed errors; a plan from a valid descriptor must be a
// consistent topological order; canonical JSON must parse back to the same
// digest.
func FuzzParseValidate(f *testing.F) {
	f.Add([]byte(head + "resources: [{name: a, plugin: noop, type: thing}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			var se *SyntaxError
			var ve *ValidationError
			if !errors.As(err, &se) && !errors.As(err, &ve) {
				t.Fatalf("Parse returned %T: %v", err, err)
			}
			return
		}
		_ = d.Validate(catalog)
		invalid := d.Validate(nil)

		canonical, err := d.CanonicalJSON()
		if err != nil {
			t.Fatalf("CanonicalJSON: %v", err)
		}
		digest, _ := d.Digest()
		if len(canonical) <= MaxDocumentSize {
			again, err := Parse(canonical)
			if err != nil {
				t.Fatalf("canonical form does not parse: %v\n%s", err, canonical)
			}
			if d2, _ := again.Digest(); d2 != digest {
				t.Fatalf("digest changed after a canonical round trip:\n%s", canonical)
			}
		}

		for _, flavor := range append([]string{""}, sortedKeys(d.Flavors)...) {
			vars, err := d.ResolveVariables(flavor, sampleValues(d))
			if err != nil {
				continue
			}
			g, err := d.Plan(vars, ServiceContext{ID: "svc", Tenant: "t"})
			if err != nil {
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("Plan returned %T: %v", err, err)
				}
				continue
			}
			if invalid != nil {
				t.Fatalf("Plan accepted a descriptor Validate refuses: %v", invalid)
			}
			checkGraph(t, g)
		}
	})
}

// sampleValues gives every required variable without a flavor value a value
// of its type, so that fuzzed descriptors reach Plan.
func sampleValues(d *Descriptor) map[string]json.RawMessage {
	samples := map[VarType]string{
		TypeString: `"x"`, TypeNumber: "1.5", TypeInteger: "1",
		TypeBoolean: "true", TypeObject: "{}", TypeArray: "[]",
	}
	out := map[string]json.RawMessage{}
	for name, v := range d.Variables {
		if v.Required {
			out[name] = json.RawMessage(samples[v.Type])
		}
	}
	return out
}

func checkGraph(t *testing.T, g *Graph) {
	t.Helper()
	order := g.Order()
	pos := map[string]int{}
	for i, name := range order {
		pos[name] = i
	}
	nodes := g.Nodes()
	if len(order) != len(nodes) {
		t.Fatalf("Order has %d names for %d nodes", len(order), len(nodes))
	}
	rev := g.Reverse()
	for i, n := range nodes {
		if rev[len(rev)-1-pos[n.Name]] != n.Name {
			t.Fatalf("Reverse is not Order backwards")
		}
		for _, dep := range n.DependsOn {
			if pos[dep] >= pos[n.Name] {
				t.Fatalf("node %d %q comes before its dependency %q", i, n.Name, dep)
			}
		}
		_, err := ResolveProperties(n.Properties, func(string, int, string) (json.RawMessage, bool) {
			return json.RawMessage(`"v"`), true
		})
		if err != nil {
			t.Fatalf("planned properties of %q do not resolve: %v\n%s", n.Name, err, n.Properties)
		}
	}
	for _, o := range g.Outputs() {
		if _, err := ResolveProperties(o.Value, func(string, int, string) (json.RawMessage, bool) { return json.RawMessage("1"), true }); err != nil {
			t.Fatalf("planned output does not resolve: %v", err)
		}
	}
}
