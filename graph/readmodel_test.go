package graph_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands/access"
	"cairn/commands/commandstest"
	"cairn/commands/nodes"
	"cairn/commands/services"
	"cairn/commands/templates"
	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/graph"
	"cairn/graph/client"
	"cairn/internal/testdb"
	"cairn/projections"
	"cairn/projections/models"
	"cairn/projections/readmodel"
)

// newReadEnv is an API over real read models: the projection runner
// applies the log, and consistentWith waits on it.
func newReadEnv(t testing.TB) *env {
	t.Helper()
	db := testdb.New(t)
	pool := db.AppPool(t)
	store := eventstore.New(pool, events.Registry(), eventstore.Options{PollInterval: 50 * time.Millisecond})
	t.Cleanup(store.Close)
	var mu sync.Mutex
	n := 0
	ids := func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return "rm" + itoa(n)
	}
	runner := projections.NewRunner(store, pool, projections.Options{Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err := runner.Register(models.All()...); err != nil {
		t.Fatal(err)
	}
	svc, err := services.NewHandlers(store, time.Now, ids, commandstest.Sealer())
	if err != nil {
		t.Fatal(err)
	}
	tk := &tokens{m: map[string]graph.Principal{}}
	for name, p := range principals {
		tk.m[name] = p
	}
	// A loaded test machine can take longer than the served default to
	// apply a batch; the waiting itself is what these tests check.
	api, err := graph.New(graph.Config{ConsistencyTimeout: 20 * time.Second}, graph.Deps{
		Log: zerolog.New(zerolog.NewTestWriter(t)), Store: store, Reader: readmodel.New(pool), Auth: tk, Projections: runner, ProjectionAdmin: runner,
		Access: access.NewHandlers(store, time.Now, ids, access.Options{}), Nodes: nodes.NewHandlers(store, time.Now, ids),
		Templates: templates.NewHandlers(store, time.Now, nil), Services: svc,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveWithReadModels(t, runner, api, api.Handler())
	return &env{t: t, pool: pool, store: store, tokens: tk, api: api, url: srv.URL}
}

// serveWithReadModels runs the projection runner and the API until the test
// ends, serves handler (the API's, perhaps wrapped), and returns once the
// read models are set up.
func serveWithReadModels(t testing.TB, runner *projections.Runner, api *graph.Server, handler http.Handler) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = runner.Run(ctx) }()
	go func() { defer wg.Done(); _ = api.Run(ctx) }()
	srv := httptest.NewServer(handler)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); cancel(); wg.Wait() })
	select {
	case <-runner.Ready():
	case <-time.After(60 * time.Second):
		t.Fatal("the projections did not set up")
	}
	return srv
}

func (e *env) must(c *client.Client, query string, vars map[string]any, out any) {
	e.t.Helper()
	if err := c.Do(ctxT(e.t), query, vars, out); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
}

// catalog registers and publishes the test descriptor and makes both
// tenants of the test principals.
func (e *env) catalog() {
	e.t.Helper()
	ven := e.client("vendor")
	e.must(ven, `mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { id } } }`, map[string]any{"d": commandstest.Descriptor}, nil)
	e.must(ven, `mutation { publishTemplate(input: {name: "kv-store", version: "1.0.0"}) { template { status } } }`, nil, nil)
	for _, id := range []string{"tenant-a", "tenant-b"} {
		e.must(e.client("admin"), `mutation($id: ID!, $n: String!) { createTenant(input: {id: $id, name: $n}) { cursor } }`, map[string]any{"id": id, "n": id}, nil)
	}
}

type servicePayload struct {
	CreateService struct {
		Service struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"service"`
		Cursor string `json:"cursor"`
	} `json:"createService"`
}

func (e *env) createService(token, name string) servicePayload {
	e.t.Helper()
	var out servicePayload
	e.must(e.client(token), `mutation($n: String!) { createService(input: {name: $n, templateName: "kv-store", templateVersion: "1.0.0", variables: {password: "pw"}}) { service { id status } cursor } }`,
		map[string]any{"n": name}, &out)
	return out
}

// A mutation's cursor passed as consistentWith reads the write from the
// read models, and a tenant sees its own services only.
func TestReadYourWriteAndTenantIsolation(t *testing.T) {
	e := newReadEnv(t)
	e.catalog()
	created := e.createService("tenantA", "cache")
	if created.CreateService.Service.Status != "REGISTERING" {
		t.Fatalf("created: %+v", created)
	}
	id, cursor := created.CreateService.Service.ID, created.CreateService.Cursor

	const q = `query($id: ID!, $c: Cursor) {
		service(id: $id, consistentWith: $c) { id tenantId status resources { id } }
		services(consistentWith: $c) { edges { node { id tenantId } } pageInfo { hasNextPage } }
	}`
	type result struct {
		Service *struct {
			ID       string            `json:"id"`
			TenantID string            `json:"tenantId"`
			Status   string            `json:"status"`
			Res      []json.RawMessage `json:"resources"`
		} `json:"service"`
		Services struct {
			Edges []struct {
				Node struct {
					ID       string `json:"id"`
					TenantID string `json:"tenantId"`
				} `json:"node"`
			} `json:"edges"`
		} `json:"services"`
	}
	vars := map[string]any{"id": id, "c": cursor}
	var a result
	e.must(e.client("tenantA"), q, vars, &a)
	if a.Service == nil || a.Service.TenantID != "tenant-a" || len(a.Services.Edges) != 1 {
		t.Fatalf("tenant A does not read its own write: %+v", a)
	}
	var b result
	e.must(e.client("tenantB"), q, vars, &b)
	if b.Service != nil || len(b.Services.Edges) != 0 {
		t.Fatalf("tenant B sees tenant A's service: %+v", b)
	}
	var adm result
	e.must(e.client("auditor"), q, vars, &adm)
	if adm.Service == nil || len(adm.Services.Edges) != 1 {
		t.Fatalf("the auditor does not see the service: %+v", adm)
	}
	// A tenant asking for another tenant's services by filter still gets its own.
	var f struct {
		Services struct {
			Edges []json.RawMessage `json:"edges"`
		} `json:"services"`
	}
	e.must(e.client("tenantB"), `{ services(filter: {tenantId: "tenant-a"}) { edges { cursor } } }`, nil, &f)
	if len(f.Services.Edges) != 0 {
		t.Fatalf("tenant B lists tenant A's services through a filter: %+v", f)
	}
	// Tenant B may not act on tenant A's service: to it, it does not exist.
	err := e.client("tenantB").Do(ctxT(t), `mutation($id: ID!) { stopService(input: {serviceId: $id}) { cursor } }`, map[string]any{"id": id}, nil)
	if client.CodeOf(err) != "NOT_FOUND" {
		t.Fatalf("tenant B stopping tenant A's service: %v", err)
	}
}

// serviceChanged delivers a tenant its own services' changes only, on both
// WebSocket protocols and SSE.
func TestServiceChangedTenantIsolation(t *testing.T) {
	e := newReadEnv(t)
	e.catalog()
	// Subscribing after the read models' position leaves no gap before the
	// changes below, however slowly the subscriptions are registered.
	var at struct{ ReadModelsCursor string }
	e.must(e.client("admin"), `{ readModelsCursor }`, nil, &at)
	req := client.Request{
		Query:     `subscription($after: Cursor) { serviceChanged(after: $after) { event { type } service { id tenantId name } } }`,
		Variables: map[string]any{"after": at.ReadModelsCursor},
	}
	protocols := []client.Protocol{client.TransportWS, client.LegacyWS, client.SSE}
	subs := map[string][]*client.Subscription{}
	for _, tok := range []string{"tenantA", "tenantB"} {
		for _, p := range protocols {
			s, err := e.client(tok).Subscribe(ctxT(t), p, req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			subs[tok] = append(subs[tok], s)
		}
	}
	e.createService("tenantA", "a-only")
	e.createService("tenantB", "b-only")
	for tok, want := range map[string]string{"tenantA": "tenant-a", "tenantB": "tenant-b"} {
		for i, s := range subs[tok] {
			resp, err := s.Next(ctxT(t))
			if err != nil {
				t.Fatalf("%s via %s: %v", tok, protocols[i], err)
			}
			var got struct {
				ServiceChanged struct {
					Service struct {
						TenantID string `json:"tenantId"`
					} `json:"service"`
				} `json:"serviceChanged"`
			}
			if err := json.Unmarshal(resp.Data, &got); err != nil || len(resp.Errors) > 0 {
				t.Fatalf("%s via %s: %s %v %v", tok, protocols[i], resp.Data, resp.Errors, err)
			}
			if got.ServiceChanged.Service.TenantID != want {
				t.Fatalf("%s via %s received another tenant's change: %s", tok, protocols[i], resp.Data)
			}
		}
	}
}

// Actors read as names: the user who acted, by the name the read models
// hold for them; an actor that is no user or node is itself.
func TestActorNames(t *testing.T) {
	e := newReadEnv(t)
	e.catalog()
	var u struct{ CreateUser struct{ Cursor string } }
	e.must(e.client("admin"), `mutation { createUser(input: {id: "u-a", name: "Ana Lima", role: TENANT_MEMBER, tenantId: "tenant-a"}) { cursor } }`, nil, &u)
	// The names come from the read models; the events query waits for the
	// log only.
	e.must(e.client("admin"), `query($c: Cursor) { user(id: "u-a", consistentWith: $c) { id } }`, map[string]any{"c": u.CreateUser.Cursor}, nil)
	created := e.createService("tenantA", "cache")
	var out struct {
		Events struct {
			Edges []struct {
				Node struct {
					Metadata struct{ Actor, ActorName string }
				}
			}
		}
	}
	const q = `query($s: String!, $c: Cursor) { events(first: 5, filter: {streamIds: [$s]}, consistentWith: $c) { edges { node { metadata { actor actorName } } } } }`
	vars := map[string]any{"s": "service-" + created.CreateService.Service.ID, "c": created.CreateService.Cursor}
	for _, who := range []string{"auditor", "tenantA"} {
		e.must(e.client(who), q, vars, &out)
		if len(out.Events.Edges) == 0 {
			t.Fatalf("%s reads no event of the service", who)
		}
		if m := out.Events.Edges[0].Node.Metadata; m.Actor != "u-a" || m.ActorName != "Ana Lima" {
			t.Errorf("%s reads the actor as %+v, want u-a named Ana Lima", who, m)
		}
	}
	// The bootstrap of the catalog acted as a principal with no user row.
	e.must(e.client("auditor"), `{ events(first: 1) { edges { node { metadata { actor actorName } } } } }`, nil, &out)
	if m := out.Events.Edges[0].Node.Metadata; m.ActorName != m.Actor {
		t.Errorf("an actor that is no user reads %+v", m)
	}
}
