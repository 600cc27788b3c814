package blueprints_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/blueprints"
	"cairn/commands/commandstest"
	"cairn/commands/orchestrator"
	"cairn/commands/orchestrator/orchestratortest"
	"cairn/commands/services"
	"cairn/domain/ocl"
	"cairn/domain/service"
	"cairn/eventbus"
	"cairn/eventstore"
	"cairn/internal/testdb"
	"cairn/plugins"
	"cairn/plugins/fake"
	"cairn/projections"
	"cairn/projections/models"
	"cairn/projections/readmodel"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const app = `
apiVersion: cairn/v1
metadata: {name: app, version: 1.0.0}
variables:
  size: {type: integer, default: 1}
resources:
  - name: box
    plugin: fake
    type: thing
    properties: {size: "${var.size}"}
`

type env struct {
	t      *testing.T
	store  *eventstore.Store
	runner *projections.Runner
	fake   *fake.Plugin
	h      *blueprints.Handlers
}

func newEnv(t *testing.T) *env {
	t.Helper()
	store, pool := commandstest.NewStoreWithPool(t)
	e := &env{t: t, store: store, fake: fake.New(fake.Options{})}
	reg := plugins.NewRegistry()
	if err := reg.Register("fake", e.fake); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := orchestratortest.Publish(ctx, store, reg, "vendor", []byte(app)); err != nil {
		t.Fatal(err)
	}
	if _, err := orchestratortest.Publish(ctx, store, reg, "vendor", []byte(strings.Replace(app, "1.0.0", "1.1.0", 1))); err != nil {
		t.Fatal(err)
	}
	acc := access.NewHandlers(store, time.Now, commandstest.IDs("t"), access.Options{})
	if _, err := acc.CreateTenant(ctx, commands.Meta{Actor: "admin"}, access.CreateTenant{TenantID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	svc, err := services.NewHandlers(store, time.Now, commandstest.IDs("svc"), commandstest.Sealer())
	if err != nil {
		t.Fatal(err)
	}
	svc.UpdatesInPlace(reg)
	e.runner = projections.NewRunner(store, pool, projections.Options{Log: zerolog.Nop()})
	if err := e.runner.Register(models.All()...); err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(orchestrator.Config{Store: store, Pool: pool, Plugins: reg, Variables: svc.DecodeVariables, Log: zerolog.Nop(),
		Router: eventbus.RouterOptions{MaxRetries: 1, InitialInterval: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { _ = e.runner.Run(rctx); done <- struct{}{} }()
	go func() { _ = o.Run(rctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
	})
	reader := readmodel.New(pool)
	e.h = blueprints.NewHandlers(store, svc, reader, reader)
	// The read models' tables exist once the runner is ready (on an empty
	// log, waiting for its head waits for nothing).
	select {
	case <-e.runner.Ready():
	case <-time.After(time.Minute):
		t.Fatal("the projections did not set up")
	}
	return e
}

func (e *env) apply(doc string, prune bool) (blueprints.Result, error) {
	e.t.Helper()
	return e.h.Apply(context.Background(), commands.Meta{Actor: "tester"}, blueprints.Apply{Document: []byte(doc), Prune: prune})
}

// settle waits for every service of the result, and the read models.
func (e *env) settle(res blueprints.Result, want map[string]service.Status) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range res.Changes {
		w, ok := want[c.Service]
		if !ok {
			continue
		}
		if _, err := orchestratortest.Wait(ctx, e.store, c.ServiceID, w); err != nil {
			e.t.Fatal(err)
		}
	}
	head, err := e.store.Head(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.runner.WaitFor(ctx, head); err != nil {
		e.t.Fatal(err)
	}
}

func steps(res blueprints.Result) map[string]string {
	out := map[string]string{}
	for _, c := range res.Changes {
		var s []string
		for _, st := range c.Steps {
			s = append(s, string(st))
		}
		out[c.Service] = strings.Join(s, "+")
	}
	return out
}

func doc(services string) string {
	return "apiVersion: cairn/v1\nkind: Blueprint\nmetadata: {name: shop}\ntenant: acme\nservices:\n" + services
}

// A blueprint creates what it declares (running or not), a second apply of
// the same file records nothing, and a changed file updates, creates and,
// with prune, removes.
func TestApplyConverges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := doc(`
  - {name: web, template: app, version: 1.0.0, variables: {size: 2}}
  - {name: db, template: app, version: 1.0.0}
  - {name: spare, template: app, running: false}
`)
	res, err := e.apply(first, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := steps(res); got["web"] != "create" || got["db"] != "create" || got["spare"] != "create" {
		t.Fatalf("first apply: %v", got)
	}
	e.settle(res, map[string]service.Status{"web": service.StatusRunning, "db": service.StatusRunning, "spare": service.StatusRegistered})

	before := commandstest.CountEvents(t, e.store)
	again, err := e.apply(first, false)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed() || commandstest.CountEvents(t, e.store) != before {
		t.Fatalf("the second apply changed something: %v, %d events appended", steps(again), commandstest.CountEvents(t, e.store)-before)
	}

	second := doc(`
  - {name: web, template: app, version: 1.1.0, variables: {size: 3}}
  - {name: spare, template: app, running: true}
  - {name: cache, template: app}
`)
	plan, err := e.h.Plan(context.Background(), blueprints.Apply{Document: []byte(second), Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	if commandstest.CountEvents(t, e.store) != before {
		t.Fatal("a plan recorded something")
	}
	want := map[string]string{"web": "update", "spare": "start", "cache": "create", "db": "remove"}
	if got := steps(plan); !equal(got, want) {
		t.Fatalf("plan %v, want %v", got, want)
	}
	res, err = e.apply(second, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := steps(res); !equal(got, want) {
		t.Fatalf("apply %v, want %v", got, want)
	}
	e.settle(res, map[string]service.Status{"web": service.StatusRunning, "spare": service.StatusRunning,
		"cache": service.StatusRunning, "db": service.StatusRemoved})
	web, _, err := commands.Load[service.Service](context.Background(), e.store, "service", res.Changes[0].ServiceID)
	if err != nil || web.Revision != 2 || web.TemplateVersion != "1.1.0" || web.Blueprint != "shop" {
		t.Fatalf("web after the update: revision %d, %s, blueprint %q (%v)", web.Revision, web.TemplateVersion, web.Blueprint, err)
	}
	if n := len(e.fake.Live()); n != 3 {
		t.Fatalf("%d things live, want 3 (web, spare, cache)", n)
	}
	before = commandstest.CountEvents(t, e.store)
	if again, err := e.apply(second, true); err != nil || again.Changed() || commandstest.CountEvents(t, e.store) != before {
		t.Fatalf("reapplying the second file: %v %v", steps(again), err)
	}
}

// A file with mistakes is refused whole, every problem at its path in the
// file, and nothing is recorded.
func TestBadBlueprintChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := commandstest.CountEvents(t, e.store)
	tests := []struct {
		name, doc string
		paths     []string
	}{
		{"unknown version and variable", doc(`
  - {name: web, template: app, version: 1.0.0}
  - {name: db, template: app, version: 9.9.9}
  - {name: cache, template: app, variables: {colour: red}}
`), []string{"services[1].version", "services[2].variables.colour"}},
		{"wrong type", doc(`
  - {name: web, template: app, variables: {size: big}}
`), []string{"services[0].variables.size"}},
		{"shape", "apiVersion: cairn/v1\nkind: Blueprint\nmetadata: {name: ''}\nservices:\n  - {name: a, template: app}\n  - {name: a, template: 'Bad Name'}\n",
			[]string{"metadata.name", "services[1].name", "services[1].template"}},
		{"not yaml", "services: [", nil},
	}
	for _, tc := range tests {
		_, err := e.apply(tc.doc, true)
		var ve *ocl.ValidationError
		var se *ocl.SyntaxError
		switch {
		case tc.paths == nil && errors.As(err, &se):
		case errors.As(err, &ve):
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.Path)
			}
			for _, p := range tc.paths {
				if !slices.Contains(got, p) {
					t.Errorf("%s: no problem at %s: %v", tc.name, p, ve)
				}
			}
		default:
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if n := commandstest.CountEvents(t, e.store); n != before {
		t.Fatalf("refused blueprints recorded %d events", n-before)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
