package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"cairn/domain/ocl"
	"cairn/plugins"
	"cairn/plugins/fake"
)

// stub answers every call with fixed outputs, or panics.
type stub struct {
	types []plugins.ResourceType
	out   json.RawMessage
	panic bool
}

func (s stub) ResourceTypes() []plugins.ResourceType { return s.types }
func (s stub) call() (json.RawMessage, error) {
	if s.panic {
		panic("index out of range")
	}
	return s.out, nil
}
func (s stub) Create(context.Context, plugins.Request) (json.RawMessage, error)  { return s.call() }
func (s stub) Start(context.Context, plugins.Request) (json.RawMessage, error)   { return s.call() }
func (s stub) Stop(context.Context, plugins.Request) (json.RawMessage, error)    { return s.call() }
func (s stub) Update(context.Context, plugins.Request) (json.RawMessage, error)  { return s.call() }
func (s stub) Destroy(context.Context, plugins.Request) (json.RawMessage, error) { return s.call() }
func (s stub) Observe(context.Context, plugins.Request) (json.RawMessage, error) { return s.call() }

var oneType = []plugins.ResourceType{{Name: "thing"}}

func TestRegister(t *testing.T) {
	t.Parallel()
	r := plugins.NewRegistry()
	if err := r.Register("fake", fake.New(fake.Options{})); err != nil {
		t.Fatal(err)
	}
	bad := map[string]error{
		"duplicate":     r.Register("fake", fake.New(fake.Options{})),
		"bad name":      r.Register("Fake_1", fake.New(fake.Options{})),
		"no types":      r.Register("empty", stub{}),
		"unnamed type":  r.Register("unnamed", stub{types: []plugins.ResourceType{{}}}),
		"type twice":    r.Register("twice", stub{types: []plugins.ResourceType{{Name: "a"}, {Name: "a"}}}),
		"broken schema": r.Register("broken", stub{types: []plugins.ResourceType{{Name: "a", Schema: json.RawMessage(`{`)}}}),
	}
	for name, err := range bad {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if got := r.Names(); len(got) != 1 || got[0] != "fake" {
		t.Fatalf("names = %v", got)
	}
}

// The registry is the catalog descriptors are validated against.
func TestRegistryIsThePluginCatalog(t *testing.T) {
	t.Parallel()
	r := plugins.NewRegistry()
	if err := r.Register("fake", fake.New(fake.Options{})); err != nil {
		t.Fatal(err)
	}
	d, err := ocl.Parse([]byte(`
apiVersion: cairn/v1
metadata: {name: x, version: 1.0.0}
resources:
  - {name: a, plugin: fake, type: thing, properties: {k: v}}
  - {name: b, plugin: fake, type: gadget}
  - {name: c, plugin: nope, type: thing}
  - {name: d, plugin: fake, type: thing, properties: [1]}
`))
	if err != nil {
		t.Fatal(err)
	}
	err = d.Validate(r)
	for _, want := range []string{
		`resources[1].type: plugin "fake" has no resource type "gadget"`,
		`resources[2].plugin: unknown plugin "nope"`,
		`resources[3].properties`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validation error %v does not report %q", err, want)
		}
	}
}

func TestCallChecksWhatComesBack(t *testing.T) {
	t.Parallel()
	r := plugins.NewRegistry()
	for name, p := range map[string]stub{
		"object": {types: oneType, out: json.RawMessage(` {"a": 1} `)},
		"null":   {types: oneType, out: json.RawMessage(`null`)},
		"list":   {types: oneType, out: json.RawMessage(`[1]`)},
		"broken": {types: oneType, out: json.RawMessage(`{"a":`)},
		"panics": {types: oneType, panic: true},
	} {
		if err := r.Register(name, p); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	req := plugins.Request{ResourceID: "r1", Type: "thing"}
	if out, err := r.Call(ctx, "object", plugins.OpCreate, req); err != nil || string(out) != `{"a":1}` {
		t.Fatalf("object: %s %v", out, err)
	}
	if out, err := r.Call(ctx, "null", plugins.OpStart, req); err != nil || out != nil {
		t.Fatalf("null: %s %v", out, err)
	}
	for _, name := range []string{"list", "broken"} {
		_, err := r.Call(ctx, name, plugins.OpCreate, req)
		var oe *plugins.OutputError
		var ce *plugins.CallError
		if !errors.As(err, &oe) || !errors.As(err, &ce) || ce.Plugin != name || ce.ResourceID != "r1" {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := r.Call(ctx, "panics", plugins.OpDestroy, req)
	var pe *plugins.PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "index out of range") || strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("panic: %v", err)
	}
	_, err = r.Call(ctx, "missing", plugins.OpCreate, req)
	var up *plugins.UnknownPluginError
	if !errors.As(err, &up) || !strings.Contains(err.Error(), "registered:") {
		t.Fatalf("unknown plugin: %v", err)
	}
	_, err = r.Call(ctx, "object", plugins.OpCreate, plugins.Request{ResourceID: "r1", Type: "gadget"})
	var ut *plugins.UnknownTypeError
	if !errors.As(err, &ut) {
		t.Fatalf("unknown type: %v", err)
	}
}
