package graph_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/auth"
	"cairn/commands/access"
	"cairn/commands/nodes"
	"cairn/domain/events"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/graph"
	"cairn/graph/client"
	"cairn/graph/live"
	"cairn/internal/testdb"
	"cairn/projections/readmodel"
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
		return graph.Principal{}, fmt.Errorf("token revoked: %w", auth.ErrUnauthenticated)
	}
	return p, nil
}

func (t *tokens) revoke(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, token)
}

// visible is a stand-in for the projection runner: the read models are
// consistent with an event as soon as readers of the log can see it.
type visible struct{ store *eventstore.Store }

func (v visible) WaitFor(ctx context.Context, c eventstore.Cursor) error {
	return v.store.WaitVisible(ctx, c)
}

type env struct {
	t      testing.TB
	pool   *pgxpool.Pool // the pool store appends through
	store  *eventstore.Store
	tokens *tokens
	api    *graph.Server
	url    string
}

func newEnv(t testing.TB, cfg graph.Config) *env { return newEnvWith(t, cfg, nil) }

// newEnvWith is newEnv whose API reads the log through what log makes of
// the store (nil: the store itself).
func newEnvWith(t testing.TB, cfg graph.Config, log func(*eventstore.Store) graph.EventLog) *env {
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
	tk := &tokens{m: map[string]graph.Principal{}}
	for name, p := range principals {
		tk.m[name] = p
	}
	var apiLog graph.EventLog = store
	if log != nil {
		apiLog = log(store)
	}
	api, err := graph.New(cfg, graph.Deps{
		Log:         zerolog.Nop(),
		Store:       apiLog,
		Reader:      readmodel.New(pool),
		Auth:        tk,
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
	return &env{t: t, pool: pool, store: store, tokens: tk, api: api, url: srv.URL}
}

// principals are the callers of the tests, by token: one per role, and two
// tenants.
var principals = map[string]graph.Principal{
	"admin":        user("admin", tenant.RoleAdmin, ""),
	"operator":     user("op", tenant.RoleOperator, ""),
	"auditor":      user("aud", tenant.RoleAuditor, ""),
	"vendor":       user("ven", tenant.RoleVendor, ""),
	"tenantA":      user("a", tenant.RoleTenantMember, "tenant-a"),
	"tenantB":      user("b", tenant.RoleTenantMember, "tenant-b"),
	"tenantAdminA": user("aa", tenant.RoleTenantAdmin, "tenant-a"),
	"agent":        {Kind: auth.KindAgent, ID: "n1", TokenID: "node.n1", Role: auth.RoleAgent, NodeID: "n1"},
}

func user(id string, role auth.Role, tenantID string) graph.Principal {
	return graph.Principal{Kind: auth.KindUser, ID: "u-" + id, UserID: "u-" + id, TokenID: "t-" + id, Role: role, TenantID: tenantID}
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

func ctxT(t testing.TB) context.Context {
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
