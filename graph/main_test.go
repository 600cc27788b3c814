package graph_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands/access"
	"cairn/commands/nodes"
	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/graph"
	"cairn/graph/client"
	"cairn/graph/live"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// tokens is a fixed authenticator for the API's own tests: the API takes an
// authenticator and a policy as dependencies, and these tests are about the
// API (transports, errors, fan-out), not about how tokens are checked.
type tokens struct {
	mu sync.Mutex
	m  map[string]graph.Principal
}

func (t *tokens) Authenticate(_ context.Context, token string) (graph.Principal, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[token]
	if !ok {
		return graph.Principal{}, &graph.Error{Code: graph.CodeUnauthenticated, Message: "token revoked"}
	}
	return p, nil
}

func (t *tokens) revoke(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, token)
}

// rolePolicy allows each role a fixed set of actions.
type rolePolicy map[string][]string

func (p rolePolicy) Can(pr graph.Principal, action string) bool {
	return pr.Role == "admin" || slices.Contains(p[pr.Role], action)
}

func (p rolePolicy) Actions() []string { return []string{graph.ActionEventRead, graph.ActionTenantWrite} }

var policy = rolePolicy{
	"operator":      {graph.ActionEventRead, graph.ActionNodeWrite, graph.ActionLocationWrite, graph.ActionTenantWrite},
	"auditor":       {graph.ActionEventRead, graph.ActionAuditRead},
	"tenant_member": {graph.ActionEventRead, graph.ActionServiceRead},
	"vendor":        {graph.ActionTemplateRead},
}

// visible is a stand-in for the projection runner: the read models are
// consistent with an event as soon as readers of the log can see it.
type visible struct{ store *eventstore.Store }

func (v visible) WaitFor(ctx context.Context, c eventstore.Cursor) error {
	return v.store.WaitVisible(ctx, c)
}

type env struct {
	t      *testing.T
	store  *eventstore.Store
	tokens *tokens
	api    *graph.Server
	url    string
}

func newEnv(t *testing.T, cfg graph.Config) *env {
	t.Helper()
	db := testdb.New(t)
	pool := db.AppPool(t)
	store := eventstore.New(pool, events.Registry(), eventstore.Options{PollInterval: 50 * time.Millisecond})
	t.Cleanup(store.Close)
	clock := time.Now
	var n int
	var mu sync.Mutex
	ids := func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return "id" + time.Now().Format("150405") + "x" + string(rune('a'+n%26)) + itoa(n)
	}
	tk := &tokens{m: map[string]graph.Principal{
		"admin":    {TokenID: "t-admin", UserID: "u-admin", Role: "admin"},
		"operator": {TokenID: "t-op", UserID: "u-op", Role: "operator"},
		"auditor":  {TokenID: "t-aud", UserID: "u-aud", Role: "auditor"},
		"tenantA":  {TokenID: "t-a", UserID: "u-a", Role: "tenant_member", TenantID: "tenant-a"},
		"tenantB":  {TokenID: "t-b", UserID: "u-b", Role: "tenant_member", TenantID: "tenant-b"},
		"vendor":   {TokenID: "t-v", UserID: "u-v", Role: "vendor"},
	}}
	api, err := graph.New(cfg, graph.Deps{
		Log:         zerolog.Nop(),
		Store:       store,
		Auth:        tk,
		Policy:      policy,
		Projections: visible{store},
		Access:      access.NewHandlers(store, clock, ids, access.Options{}),
		Nodes:       nodes.NewHandlers(store, clock, ids),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = api.Run(ctx) }()
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return &env{t: t, store: store, tokens: tk, api: api, url: srv.URL}
}

func itoa(n int) string {
	b := []byte{}
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func (e *env) client(token string) *client.Client { return client.New(e.url, token, nil) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func liveOpts(ring int) live.Options { return live.Options{RingSize: ring} }

func (t *tokens) add(token string, p graph.Principal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[token] = p
}
