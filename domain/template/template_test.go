package template_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/template"
)

const (
	name    = "postgres"
	version = "1.2.0"
	vendor  = "acme"
	digest1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digest2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

func fold(es ...domain.Event) template.TemplateVersion {
	var t template.TemplateVersion
	for _, e := range es {
		t.Apply(e)
	}
	return t
}

var (
	registered = template.Registered{Name: name, Version: version, Vendor: vendor,
		Descriptor: json.RawMessage(`{"name":"postgres","version":"1.2.0"}`), Digest: digest1, At: at(0)}
	published  = template.Published{Name: name, Version: version, At: at(1)}
	deprecated = template.Deprecated{Name: name, Version: version, Reason: "use 2.x", At: at(2)}
)

var history = map[template.Status][]domain.Event{
	template.StatusValidated:  {registered},
	template.StatusPublished:  {registered, published},
	template.StatusDeprecated: {registered, published, deprecated},
}

func register(digest string) template.Register {
	return template.Register{Name: name, Version: version, Vendor: vendor,
		Descriptor: json.RawMessage(`{"name": "postgres", "version": "1.2.0", "resources": []}`), Digest: digest, At: at(10)}
}

// commands issues each command so that it would change the version.
var commands = map[string]func(template.TemplateVersion) ([]domain.Event, error){
	template.CmdRegister: func(t template.TemplateVersion) ([]domain.Event, error) { return t.Register(register(digest2)) },
	template.CmdPublish: func(t template.TemplateVersion) ([]domain.Event, error) {
		return t.Publish(template.Publish{Name: name, Version: version, At: at(10)})
	},
	template.CmdDeprecate: func(t template.TemplateVersion) ([]domain.Event, error) {
		return t.Deprecate(template.Deprecate{Name: name, Version: version, Reason: "superseded", At: at(10)})
	},
}

var next = map[template.Status]map[string]template.Status{
	template.StatusValidated:  {template.CmdRegister: template.StatusValidated, template.CmdPublish: template.StatusPublished},
	template.StatusPublished:  {template.CmdDeprecate: template.StatusDeprecated},
	template.StatusDeprecated: {},
}

func TestEveryStatusAndCommand(t *testing.T) {
	t.Parallel()
	for _, status := range template.Statuses {
		tv := fold(history[status]...)
		if tv.Status != status {
			t.Fatalf("history for %s folds to %s", status, tv.Status)
		}
		for _, cmd := range template.Commands {
			t.Run(string(status)+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				es, err := commands[cmd](tv)
				want, expected := next[status][cmd]
				allowed := slices.Contains(template.AllowedCommands(status), cmd)
				if allowed != expected || allowed != slices.Contains(tv.AllowedCommands(), cmd) {
					t.Fatalf("table allows=%v but test expects a transition=%v", allowed, expected)
				}
				if !allowed {
					var se *domain.StateError
					if !errors.As(err, &se) || se.Command != cmd || se.State != string(status) ||
						se.Entity != "template" || se.ID != name+"@"+version || !errors.Is(err, domain.ErrConflict) {
						t.Fatalf("want state error for %s in %s, got %v", cmd, status, err)
					}
					return
				}
				if err != nil || len(es) == 0 {
					t.Fatalf("allowed command: %v %v", es, err)
				}
				after := tv
				for _, e := range es {
					after.Apply(e)
				}
				if after.Status != want {
					t.Fatalf("status after %s = %s, want %s", cmd, after.Status, want)
				}
			})
		}
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	es, err := template.TemplateVersion{}.Register(register(digest1))
	if err != nil {
		t.Fatal(err)
	}
	tv := fold(es...)
	if tv.Status != template.StatusValidated || tv.ID() != template.ID(name, version) || tv.Deployable() {
		t.Fatalf("registered = %+v", tv)
	}
	if string(tv.Descriptor) != `{"name":"postgres","version":"1.2.0","resources":[]}` {
		t.Fatalf("descriptor not compacted: %s", tv.Descriptor)
	}
	// A draft can be replaced; the replacement is what gets published.
	tv = fold(registered)
	es, err = tv.Register(register(digest2))
	if err != nil || len(es) != 1 {
		t.Fatalf("replace a draft: %v %v", es, err)
	}
	tv.Apply(es[0])
	if tv.Digest != digest2 {
		t.Fatalf("digest not replaced: %s", tv.Digest)
	}
	// The same digest again is a no-op in every status.
	for _, status := range template.Statuses {
		es, err := fold(history[status]...).Register(register(digest1))
		if err != nil || len(es) != 0 {
			t.Errorf("re-register in %s: %v %v", status, es, err)
		}
	}
	// Another vendor may not take a version over.
	other := register(digest1)
	other.Vendor = "mallory"
	_, err = fold(registered).Register(other)
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || ve.Field != "vendor" {
		t.Fatalf("another vendor: %v", err)
	}
	if !fold(registered, published).Deployable() {
		t.Fatal("published version is not deployable")
	}
}

func TestCommandsOnMissingVersion(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{template.CmdPublish, template.CmdDeprecate} {
		_, err := commands[cmd](template.TemplateVersion{})
		var nf *domain.NotFoundError
		if !errors.As(err, &nf) || nf.ID != "postgres@1.2.0" || !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s on a missing version: %v", cmd, err)
		}
	}
	_, err := fold(registered).Publish(template.Publish{Name: name, Version: "1.3.0", At: at(1)})
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || ve.Field != "version" {
		t.Fatalf("publish of another version: %v", err)
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		field  string
		change func(*template.Register)
	}{
		{"name", func(c *template.Register) { c.Name = "" }},
		{"name", func(c *template.Register) { c.Name = "Postgres" }},
		{"name", func(c *template.Register) { c.Name = strings.Repeat("a", 64) }},
		{"version", func(c *template.Register) { c.Version = "" }},
		{"version", func(c *template.Register) { c.Version = "1.0 beta" }},
		{"vendor", func(c *template.Register) { c.Vendor = "" }},
		{"vendor", func(c *template.Register) { c.Vendor = "a/b" }},
		{"descriptor", func(c *template.Register) { c.Descriptor = nil }},
		{"descriptor", func(c *template.Register) { c.Descriptor = json.RawMessage(`{"a":`) }},
		{"descriptor", func(c *template.Register) { c.Descriptor = json.RawMessage(` ["a"]`) }},
		{"descriptor", func(c *template.Register) {
			c.Descriptor = json.RawMessage(`{"a":"` + strings.Repeat("x", template.MaxDescriptorBytes) + `"}`)
		}},
		{"digest", func(c *template.Register) { c.Digest = "" }},
		{"digest", func(c *template.Register) {
			c.Digest = "1111111111111111111111111111111111111111111111111111111111111111"
		}},
		{"digest", func(c *template.Register) { c.Digest = "sha256:XYZ" }},
		{"at", func(c *template.Register) { c.At = time.Time{} }},
	}
	for i, c := range cases {
		cmd := register(digest1)
		c.change(&cmd)
		_, err := template.TemplateVersion{}.Register(cmd)
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("case %d: want validation error on %s, got %v", i, c.field, err)
		}
	}
	_, err := fold(registered, published).Deprecate(template.Deprecate{Name: name, Version: version, Reason: "a\x01", At: at(3)})
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || ve.Field != "reason" {
		t.Fatalf("bad reason: %v", err)
	}
	_, err = fold(registered).Publish(template.Publish{Name: name, Version: version})
	if !errors.As(err, &ve) || ve.Field != "at" {
		t.Fatalf("publish without time: %v", err)
	}
}

func TestEventsRoundTrip(t *testing.T) {
	t.Parallel()
	samples := []domain.Event{registered, published, deprecated}
	own := domain.NewRegistry()
	template.RegisterEvents(own)
	var types []string
	for _, e := range samples {
		types = append(types, e.EventType())
	}
	slices.Sort(types)
	if !slices.Equal(types, own.Types()) {
		t.Fatalf("samples cover %v, registered %v", types, own.Types())
	}
	reg := events.Registry()
	for _, e := range samples {
		typ, v, payload, err := reg.Encode(e)
		if err != nil || v != 1 {
			t.Fatalf("encode %T: %v", e, err)
		}
		decoded, err := reg.Decode(typ, v, payload)
		if err != nil {
			t.Fatalf("decode %s: %v", typ, err)
		}
		if got := decoded; !reflect.DeepEqual(got, e) {
			t.Errorf("%s round trip:\n got %#v\nwant %#v", typ, got, e)
		}
		var fromValue, fromPointer template.TemplateVersion
		fromValue.Apply(e)
		fromPointer.Apply(decoded)
		if !reflect.DeepEqual(fromValue, fromPointer) {
			t.Errorf("%s: Apply(value) = %+v, Apply(decoded pointer) = %+v", typ, fromValue, fromPointer)
		}
		if reflect.DeepEqual(fromValue, template.TemplateVersion{}) {
			t.Errorf("%s: Apply changed nothing", typ)
		}
	}
}
