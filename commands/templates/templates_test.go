package templates_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/commandstest"
	"cairn/commands/templates"
	"cairn/domain"
	"cairn/domain/template"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// descriptor is commandstest.Descriptor under another name, so that cases
// sharing a database keep apart.
func descriptor(name string) string {
	return strings.Replace(commandstest.Descriptor, "name: kv-store", "name: "+name, 1)
}

func TestHandlers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := commandstest.NewStore(t)
	h := templates.NewHandlers(s, commandstest.NewClock(t0).Now, nil)
	vendor := commands.Meta{Actor: "vendor-1"}
	register := func(name string) func() {
		return func() {
			if _, err := h.Register(ctx, vendor, templates.Register{Descriptor: descriptor(name)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish := func(name string) func() {
		return func() {
			register(name)()
			if _, err := h.Publish(ctx, vendor, templates.Publish{Name: name, Version: "1.0.0"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name  string
		prep  func(name string) func()
		run   func(name string, m commands.Meta) (commands.Outcome, error)
		want  error
		event string // "" with no error: the command changed nothing
	}{
		{"register", nil, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Register(ctx, m, templates.Register{Descriptor: descriptor(n)})
		}, nil, "template.registered"},
		{"register the same again", register, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Register(ctx, m, templates.Register{Descriptor: descriptor(n)})
		}, nil, ""},
		{"register a new descriptor before publishing", register, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Register(ctx, m, templates.Register{Descriptor: strings.Replace(descriptor(n), "default: small", "default: large", 1)})
		}, nil, "template.registered"},
		{"register another vendor's template", register, func(n string, m commands.Meta) (commands.Outcome, error) {
			m.Actor = "vendor-2"
			return h.Register(ctx, m, templates.Register{Descriptor: strings.Replace(descriptor(n), "default: small", "default: large", 1)})
		}, domain.ErrInvalid, ""},
		{"register over a published version", publish, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Register(ctx, m, templates.Register{Descriptor: strings.Replace(descriptor(n), "default: small", "default: large", 1)})
		}, domain.ErrConflict, ""},
		{"register malformed YAML", nil, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Register(ctx, m, templates.Register{Descriptor: "metadata: [name: " + n})
		}, domain.ErrInvalid, ""},
		{"register an invalid descriptor", nil, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Register(ctx, m, templates.Register{Descriptor: strings.Replace(descriptor(n), "dependsOn: [db]", "dependsOn: [nope]", 1)})
		}, domain.ErrInvalid, ""},
		{"register without a vendor", nil, func(n string, m commands.Meta) (commands.Outcome, error) {
			m.Actor = ""
			return h.Register(ctx, m, templates.Register{Descriptor: descriptor(n)})
		}, domain.ErrInvalid, ""},
		{"publish", register, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Publish(ctx, m, templates.Publish{Name: n, Version: "1.0.0"})
		}, nil, "template.published"},
		{"publish an unknown version", register, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Publish(ctx, m, templates.Publish{Name: n, Version: "9.9.9"})
		}, domain.ErrNotFound, ""},
		{"publish twice", publish, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Publish(ctx, m, templates.Publish{Name: n, Version: "1.0.0"})
		}, domain.ErrConflict, ""},
		{"publish without a version", nil, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Publish(ctx, m, templates.Publish{Name: n})
		}, domain.ErrInvalid, ""},
		{"deprecate", publish, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Deprecate(ctx, m, templates.Deprecate{Name: n, Version: "1.0.0", Reason: "use 2.0"})
		}, nil, "template.deprecated"},
		{"deprecate an unpublished version", register, func(n string, m commands.Meta) (commands.Outcome, error) {
			return h.Deprecate(ctx, m, templates.Deprecate{Name: n, Version: "1.0.0"})
		}, domain.ErrConflict, ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("kv-%d", i)
			if c.prep != nil {
				c.prep(name)()
			}
			corr := "corr-" + c.name
			meta := commands.Meta{CommandID: "cmd-" + c.name, Actor: "vendor-1", CorrelationID: corr}
			out, err := c.run(name, meta)
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Fatalf("want %v, got %v", c.want, err)
				}
				if n := commandstest.CountCorrelated(t, s, corr); n != 0 {
					t.Fatalf("a refused command appended %d events", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.ID != name+"@1.0.0" {
				t.Fatalf("id %q", out.ID)
			}
			if c.event == "" {
				if !out.Cursor.IsZero() || commandstest.CountCorrelated(t, s, corr) != 0 {
					t.Fatalf("a command that changes nothing recorded %+v", out)
				}
				return
			}
			evs := commandstest.Stream(t, s, domain.StreamID(domain.TemplateStream, out.ID))
			last := evs[len(evs)-1]
			if last.Type != c.event || last.Metadata.Actor != "vendor-1" || out.Cursor != last.Cursor() || out.Duplicate {
				t.Fatalf("outcome %+v; last event %s by %q", out, last.Type, last.Metadata.Actor)
			}
			again, err := c.run(name, meta)
			if err != nil || !again.Duplicate || again.Cursor != out.Cursor || again.ID != out.ID {
				t.Fatalf("retry: %+v %v (first %+v)", again, err, out)
			}
		})
	}
}

// A registered descriptor is stored canonical, with its digest and vendor;
// its problems come back with their paths.
func TestRegisterRecordsCanonicalDescriptor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := commandstest.NewStore(t)
	h := templates.NewHandlers(s, commandstest.NewClock(t0).Now, nil)
	if _, err := h.Register(ctx, commands.Meta{Actor: "vendor-1"}, templates.Register{Descriptor: commandstest.Descriptor}); err != nil {
		t.Fatal(err)
	}
	tv, _, err := commands.Load[template.TemplateVersion](ctx, s, domain.TemplateStream, "kv-store@1.0.0")
	if err != nil || tv.Vendor != "vendor-1" || !strings.HasPrefix(tv.Digest, "sha256:") || tv.Descriptor[0] != '{' {
		t.Fatalf("%+v %v", tv, err)
	}
	if v, err := h.Vendor(ctx, "kv-store", "1.0.0"); err != nil || v != "vendor-1" {
		t.Fatalf("vendor %q %v", v, err)
	}
	if _, err := h.Vendor(ctx, "kv-store", "2"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("vendor of a missing version: %v", err)
	}
	_, err = h.Register(ctx, commands.Meta{Actor: "vendor-1"}, templates.Register{Descriptor: strings.Replace(commandstest.Descriptor, "dependsOn: [db]", "dependsOn: [nope]", 1)})
	if err == nil || !strings.Contains(err.Error(), "resources[1].dependsOn") {
		t.Fatalf("problem without its path: %v", err)
	}
}
