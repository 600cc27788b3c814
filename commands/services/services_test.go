package services_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/commandstest"
	"cairn/commands/services"
	"cairn/commands/templates"
	"cairn/domain"
	"cairn/domain/service"
	"cairn/eventstore"
	"cairn/internal/seal"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

type fixture struct {
	s      *eventstore.Store
	h      *services.Handlers
	access *access.Handlers
	prefix string
}

func (f fixture) id(name string) string { return f.prefix + name }

// newSealer seals with a fresh random key.
func newSealer(t *testing.T) *seal.Sealer {
	key := make([]byte, seal.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	s, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newFixture publishes kv-store 1.0.0, leaves 0.9.0 registered only and
// deprecates 0.8.0.
func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	s := commandstest.NewStore(t)
	clock := commandstest.NewClock(t0).Now
	h, err := services.NewHandlers(s, clock, commandstest.IDs("svc"), commandstest.Sealer())
	if err != nil {
		t.Fatal(err)
	}
	tpl := templates.NewHandlers(s, clock, nil)
	vendor := commands.Meta{Actor: "vendor-1"}
	for _, v := range []string{"1.0.0", "0.9.0", "0.8.0"} {
		doc := strings.Replace(commandstest.Descriptor, "version: 1.0.0", "version: "+v, 1)
		if _, err := tpl.Register(ctx, vendor, templates.Register{Descriptor: doc}); err != nil {
			t.Fatal(err)
		}
		if v == "0.9.0" {
			continue
		}
		if _, err := tpl.Publish(ctx, vendor, templates.Publish{Name: "kv-store", Version: v}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tpl.Deprecate(ctx, vendor, templates.Deprecate{Name: "kv-store", Version: "0.8.0"}); err != nil {
		t.Fatal(err)
	}
	return fixture{s: s, h: h, access: access.NewHandlers(s, clock, commandstest.IDs("acc"), access.Options{})}
}

// seed gives a case tenants t1 (active) and t2 (suspended).
func seed(t *testing.T, f fixture, prefix string) fixture {
	t.Helper()
	ctx := context.Background()
	f.prefix = prefix
	for _, id := range []string{"t1", "t2"} {
		if _, err := f.access.CreateTenant(ctx, commands.Meta{}, access.CreateTenant{TenantID: f.id(id), Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.access.SuspendTenant(ctx, commands.Meta{}, access.SuspendTenant{TenantID: f.id("t2")}); err != nil {
		t.Fatal(err)
	}
	return f
}

func vars(kv ...string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = json.RawMessage(kv[i+1])
	}
	return out
}

// deployed registers service s1 of t1 and moves it with the orchestrator's
// reports (as the domain decides them) to the status the case needs.
func deployed(t *testing.T, reports ...func(s service.Service) ([]domain.Event, error)) func(f fixture) {
	return func(f fixture) {
		t.Helper()
		ctx := context.Background()
		_, err := f.h.Register(ctx, commands.Meta{}, services.Register{ServiceID: f.id("s1"), TenantID: f.id("t1"), Name: "kv",
			TemplateName: "kv-store", TemplateVersion: "1.0.0", Variables: vars("password", `"pw"`)})
		if err != nil {
			t.Fatal(err)
		}
		for i, report := range reports {
			_, err := commands.Execute[service.Service](ctx, f.s, domain.ServiceStream, f.id("s1"), commands.Meta{}, i, report)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

var (
	registered = func(s service.Service) ([]domain.Event, error) {
		return s.CompleteRegistration(service.CompleteRegistration{ServiceID: s.ID, At: t0})
	}
	starting = func(s service.Service) ([]domain.Event, error) {
		return s.Start(service.Start{ServiceID: s.ID, At: t0})
	}
	running = func(s service.Service) ([]domain.Event, error) {
		return s.CompleteStart(service.CompleteStart{ServiceID: s.ID, At: t0})
	}
	removing = func(s service.Service) ([]domain.Event, error) {
		return s.Remove(service.Remove{ServiceID: s.ID, At: t0})
	}
	leftover = func(s service.Service) ([]domain.Event, error) {
		return s.FailRemoval(service.FailRemoval{ServiceID: s.ID, Remaining: s.ResourceIDs[:1], Cause: "plugin down", At: t0})
	}
)

func TestHandlers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	register := func(tenant, version string, given map[string]json.RawMessage, flavor string) func(f fixture, m commands.Meta) (commands.Outcome, error) {
		return func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Register(ctx, m, services.Register{TenantID: f.id(tenant), Name: "my kv", TemplateName: "kv-store",
				TemplateVersion: version, Variables: given, Flavor: flavor})
		}
	}
	on := func(do func(f fixture, m commands.Meta, id string) (commands.Outcome, error)) func(f fixture, m commands.Meta) (commands.Outcome, error) {
		return func(f fixture, m commands.Meta) (commands.Outcome, error) { return do(f, m, f.id("s1")) }
	}
	start := on(func(f fixture, m commands.Meta, id string) (commands.Outcome, error) {
		return f.h.Start(ctx, m, services.Start{ServiceID: id})
	})
	stop := on(func(f fixture, m commands.Meta, id string) (commands.Outcome, error) {
		return f.h.Stop(ctx, m, services.Stop{ServiceID: id})
	})
	remove := on(func(f fixture, m commands.Meta, id string) (commands.Outcome, error) {
		return f.h.Remove(ctx, m, services.Remove{ServiceID: id})
	})
	cleaned := on(func(f fixture, m commands.Meta, id string) (commands.Outcome, error) {
		return f.h.MarkCleanedUp(ctx, m, services.MarkCleanedUp{ServiceID: id, Note: "deleted by hand"})
	})
	cases := []struct {
		name  string
		prep  func(f fixture)
		run   func(f fixture, m commands.Meta) (commands.Outcome, error)
		want  error
		event string
	}{
		{"register", nil, register("t1", "1.0.0", vars("password", `"pw"`), ""), nil, "service.registration_requested"},
		{"register with a flavor", nil, register("t1", "1.0.0", vars("password", `"pw"`), "big"), nil, "service.registration_requested"},
		{"register for an unknown tenant", nil, register("tx", "1.0.0", vars("password", `"pw"`), ""), domain.ErrNotFound, ""},
		{"register for a suspended tenant", nil, register("t2", "1.0.0", vars("password", `"pw"`), ""), domain.ErrConflict, ""},
		{"register an unknown template", nil, register("t1", "3.0.0", vars("password", `"pw"`), ""), domain.ErrNotFound, ""},
		{"register an unpublished template", nil, register("t1", "0.9.0", vars("password", `"pw"`), ""), domain.ErrConflict, ""},
		{"register a deprecated template", nil, register("t1", "0.8.0", vars("password", `"pw"`), ""), domain.ErrConflict, ""},
		{"register without a required variable", nil, register("t1", "1.0.0", nil, ""), domain.ErrInvalid, ""},
		{"register a value outside its choices", nil, register("t1", "1.0.0", vars("password", `"pw"`, "size", `"huge"`), ""), domain.ErrInvalid, ""},
		{"register an unknown variable", nil, register("t1", "1.0.0", vars("password", `"pw"`, "colour", `"red"`), ""), domain.ErrInvalid, ""},
		{"register an unknown flavor", nil, register("t1", "1.0.0", vars("password", `"pw"`), "tiny"), domain.ErrInvalid, ""},
		{"register without a tenant", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Register(ctx, m, services.Register{Name: "x", TemplateName: "kv-store", TemplateVersion: "1.0.0"})
		}, domain.ErrInvalid, ""},
		{"register an existing service", deployed(t), func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Register(ctx, m, services.Register{ServiceID: f.id("s1"), TenantID: f.id("t1"), Name: "kv", TemplateName: "kv-store",
				TemplateVersion: "1.0.0", Variables: vars("password", `"pw"`)})
		}, domain.ErrConflict, ""},
		{"start", deployed(t, registered), start, nil, "service.start_requested"},
		{"start while registering", deployed(t), start, domain.ErrConflict, ""},
		{"start an unknown service", nil, start, domain.ErrNotFound, ""},
		{"stop", deployed(t, registered, starting, running), stop, nil, "service.stop_requested"},
		{"stop a registered service", deployed(t, registered), stop, domain.ErrConflict, ""},
		{"remove", deployed(t, registered), remove, nil, "service.removal_requested"},
		{"remove a running service", deployed(t, registered, starting, running), remove, domain.ErrConflict, ""},
		{"mark cleaned up", deployed(t, registered, removing, leftover), cleaned, nil, "service.cleaned_up"},
		{"mark a registered service cleaned up", deployed(t, registered), cleaned, domain.ErrConflict, ""},
		{"stop without an id", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Stop(ctx, m, services.Stop{})
		}, domain.ErrInvalid, ""},
	}
	shared := newFixture(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := seed(t, shared, fmt.Sprintf("c%d.", i))
			if c.prep != nil {
				c.prep(f)
			}
			corr := "corr-" + c.name
			meta := commands.Meta{CommandID: "cmd-" + c.name, Actor: "user:ann", CorrelationID: corr}
			out, err := c.run(f, meta)
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Fatalf("want %v, got %v", c.want, err)
				}
				if n := commandstest.CountCorrelated(t, f.s, corr); n != 0 {
					t.Fatalf("a refused command appended %d events", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			evs := commandstest.Stream(t, f.s, domain.StreamID(domain.ServiceStream, out.ID))
			last := evs[len(evs)-1]
			if last.Type != c.event || last.Metadata.Actor != "user:ann" || last.Metadata.Tenant != f.id("t1") ||
				out.Cursor != last.Cursor() || out.Version != last.Version || out.Duplicate {
				t.Fatalf("outcome %+v; last event %s by %q in tenant %q", out, last.Type, last.Metadata.Actor, last.Metadata.Tenant)
			}
			n := commandstest.CountCorrelated(t, f.s, corr)
			again, err := c.run(f, meta)
			if err != nil || !again.Duplicate || again.Cursor != out.Cursor || again.ID != out.ID {
				t.Fatalf("retry: %+v %v (first %+v)", again, err, out)
			}
			if commandstest.CountCorrelated(t, f.s, corr) != n {
				t.Fatal("a retry appended events")
			}
		})
	}
}

// The clear value of a sensitive variable is nowhere in the log, not in the
// payload and not in the command's fingerprint; the orchestrator gets it
// back with DecodeVariables.
func TestSensitiveValuesAreSealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seed(t, newFixture(t), "")
	const secret = "correct-horse-battery-staple"
	out, err := f.h.Register(ctx, commands.Meta{CommandID: "deploy-1", Actor: "user:ann"}, services.Register{
		TenantID: "t1", Name: "kv", TemplateName: "kv-store", TemplateVersion: "1.0.0",
		Variables: vars("password", `"`+secret+`"`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := commandstest.CountContaining(t, f.s, secret); n != 0 {
		t.Fatalf("the clear secret is in %d events", n)
	}
	s, _, err := commands.Load[service.Service](ctx, f.s, domain.ServiceStream, out.ID)
	if err != nil || len(s.ResourceIDs) != 3 || s.TenantID != "t1" {
		t.Fatalf("service %+v %v", s, err)
	}
	var recorded map[string]json.RawMessage
	if err := json.Unmarshal(s.Variables, &recorded); err != nil {
		t.Fatal(err)
	}
	if string(recorded["size"]) != `"small"` || !strings.Contains(string(recorded["password"]), `"sealed":"aes-256-gcm"`) {
		t.Fatalf("recorded variables %s", s.Variables)
	}
	clear, err := f.h.DecodeVariables(ctx, s)
	if err != nil || string(clear["password"]) != `"`+secret+`"` || string(clear["size"]) != `"small"` {
		t.Fatalf("decoded %s %v", clear, err)
	}
	// The retry is recognised although the sealed payload differs each time.
	again, err := f.h.Register(ctx, commands.Meta{CommandID: "deploy-1", Actor: "user:ann"}, services.Register{
		TenantID: "t1", Name: "kv", TemplateName: "kv-store", TemplateVersion: "1.0.0",
		Variables: vars("password", `"`+secret+`"`),
	})
	if err != nil || !again.Duplicate || again.ID != out.ID {
		t.Fatalf("retry: %+v %v", again, err)
	}
	// Another password under the same command id is another command.
	_, err = f.h.Register(ctx, commands.Meta{CommandID: "deploy-1", Actor: "user:ann"}, services.Register{
		TenantID: "t1", Name: "kv", TemplateName: "kv-store", TemplateVersion: "1.0.0",
		Variables: vars("password", `"other"`),
	})
	if !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("reused command id with other variables: %v", err)
	}
}

func TestNewHandlersNeedsASealer(t *testing.T) {
	t.Parallel()
	if _, err := services.NewHandlers(nil, time.Now, nil, nil); err == nil {
		t.Fatal("handlers without a sealer were made")
	}
}

// A service's name is unique within its tenant: a second one of the name is
// a conflict naming the first, another tenant may use it, and the name is
// free again once its holder is removed.
func TestServiceNamesAreUniquePerTenant(t *testing.T) {
	t.Parallel()
	f := seed(t, newFixture(t), "names-")
	ctx := context.Background()
	if _, err := f.access.CreateTenant(ctx, commands.Meta{}, access.CreateTenant{TenantID: f.id("t3"), Name: "t3"}); err != nil {
		t.Fatal(err)
	}
	register := func(id, tenant string) error {
		_, err := f.h.Register(ctx, commands.Meta{}, services.Register{ServiceID: f.id(id), TenantID: f.id(tenant), Name: "web",
			TemplateName: "kv-store", TemplateVersion: "1.0.0", Variables: vars("password", `"pw"`)})
		return err
	}
	if err := register("a", "t1"); err != nil {
		t.Fatal(err)
	}
	err := register("b", "t1")
	var taken *service.NameTakenError
	if !errors.As(err, &taken) || !errors.Is(err, domain.ErrConflict) || taken.By != f.id("a") {
		t.Fatalf("a second web in t1: %v", err)
	}
	if err := register("c", "t3"); err != nil {
		t.Fatalf("web in another tenant: %v", err)
	}
	// Once the first is removed, the name is free.
	for i, report := range []func(service.Service) ([]domain.Event, error){registered, removing,
		func(s service.Service) ([]domain.Event, error) {
			return s.CompleteRemoval(service.CompleteRemoval{ServiceID: s.ID, At: t0})
		}} {
		if _, err := commands.Execute[service.Service](ctx, f.s, domain.ServiceStream, f.id("a"), commands.Meta{}, i, report); err != nil {
			t.Fatal(err)
		}
	}
	if err := register("b", "t1"); err != nil {
		t.Fatalf("web again after the first was removed: %v", err)
	}
}
