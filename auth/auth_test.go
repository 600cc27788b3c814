package auth_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/auth"
	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/commandstest"
	"cairn/commands/nodes"
	"cairn/domain"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/internal/bearer"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

type fixture struct {
	s      *eventstore.Store
	clock  *commandstest.Clock
	access *access.Handlers
	nodes  *nodes.Handlers
	authn  *auth.Authenticator
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	s := commandstest.NewStore(t)
	clock := commandstest.NewClock(t0)
	return fixture{
		s: s, clock: clock,
		access: access.NewHandlers(s, clock.Now, commandstest.IDs("id"), access.Options{}),
		nodes:  nodes.NewHandlers(s, clock.Now, commandstest.IDs("node")),
		authn:  auth.NewAuthenticator(s, auth.AuthenticatorOptions{Clock: clock.Now, CacheTTL: 5 * time.Second}),
	}
}

func (f fixture) do(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// user creates a user (and its tenant, for tenant roles) and returns a token.
func (f fixture) user(t *testing.T, id string, role tenant.Role, tenantID string, ttl time.Duration) access.IssuedToken {
	t.Helper()
	ctx := context.Background()
	if tenantID != "" {
		if _, err := f.access.CreateTenant(ctx, commands.Meta{}, access.CreateTenant{TenantID: tenantID, Name: tenantID}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.access.CreateUser(ctx, commands.Meta{}, access.CreateUser{UserID: id, Name: "User " + id, Role: role, TenantID: tenantID})
	f.do(t, err)
	tok, err := f.access.IssueToken(ctx, commands.Meta{}, access.IssueToken{UserID: id, TTL: ttl})
	f.do(t, err)
	return tok
}

func (f fixture) agent(t *testing.T) access.Enrollment {
	t.Helper()
	ctx := context.Background()
	jt, err := f.access.IssueJoinToken(ctx, commands.Meta{}, access.IssueJoinToken{})
	f.do(t, err)
	enr, err := f.access.RedeemJoinToken(ctx, commands.Meta{}, access.RedeemJoinToken{Token: jt.Token, Hostname: "edge-1"})
	f.do(t, err)
	return enr
}

func unauthenticated(t *testing.T, f fixture, token, why string) {
	t.Helper()
	p, err := f.authn.Authenticate(context.Background(), token)
	var ue *auth.UnauthenticatedError
	if !errors.Is(err, auth.ErrUnauthenticated) || !errors.As(err, &ue) || !strings.Contains(err.Error(), why) {
		t.Fatalf("want unauthenticated because %q, got %+v %v", why, p, err)
	}
	if ue.TokenID != "" && strings.Contains(auth.ErrUnauthenticated.Error(), ue.TokenID) {
		t.Fatal("the client-facing message names the token")
	}
}

func TestAuthenticatePrincipals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	member := f.user(t, "ann", tenant.RoleTenantMember, "acme", 0)
	p, err := f.authn.Authenticate(ctx, "Bearer "+member.Token)
	want := auth.Principal{Kind: auth.KindUser, ID: "ann", UserID: "ann", Name: "User ann", TokenID: member.ID,
		Role: tenant.RoleTenantMember, TenantID: "acme", ExpiresAt: member.ExpiresAt}
	if err != nil || p != want {
		t.Fatalf("member: %+v %v, want %+v", p, err, want)
	}
	enr := f.agent(t)
	p, err = f.authn.Authenticate(ctx, enr.Credential)
	want = auth.Principal{Kind: auth.KindAgent, ID: enr.ID, TokenID: "node." + enr.ID, Role: auth.RoleAgent, NodeID: enr.ID}
	if err != nil || p != want {
		t.Fatalf("agent: %+v %v, want %+v", p, err, want)
	}
	if m := p.Meta("c-1", "r-1"); m.Actor != enr.ID || m.CommandID != "c-1" || m.CorrelationID != "r-1" {
		t.Fatalf("meta %+v", m)
	}
}

func TestAuthenticateRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.user(t, "root", tenant.RoleAdmin, "", 0)
	id := admin.ID
	wrong := strings.TrimSuffix(admin.Token, admin.Token[len(admin.Token)-4:]) + "aaaa"
	if wrong == admin.Token {
		wrong = strings.TrimSuffix(admin.Token, admin.Token[len(admin.Token)-4:]) + "bbbb"
	}
	unauthenticated(t, f, "", "no token")
	unauthenticated(t, f, "cairn_nope", "malformed")
	unauthenticated(t, f, "cairn_"+id+"x"+admin.Token[len("cairn_"+id):], "no such token")
	unauthenticated(t, f, wrong, "does not match")
	unauthenticated(t, f, strings.Replace(admin.Token, id, "node.nx", 1), "no such node credential")
	// A good token still works after all that.
	if _, err := f.authn.Authenticate(context.Background(), admin.Token); err != nil {
		t.Fatal(err)
	}
}

// Expiry is checked on every call; revocation, a disabled user, a suspended
// tenant and a decommissioned node take effect once the cache window passed.
func TestAuthenticateRechecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name  string
		token func(f fixture) string
		end   func(f fixture, tokenID string) error
		why   string
	}{
		{"revoked", func(f fixture) string { return f.user(t, "u", tenant.RoleOperator, "", 0).Token }, func(f fixture, id string) error {
			_, err := f.access.RevokeToken(ctx, commands.Meta{}, access.RevokeToken{TokenID: id})
			return err
		}, "revoked"},
		{"user disabled", func(f fixture) string { return f.user(t, "u", tenant.RoleAuditor, "", 0).Token }, func(f fixture, _ string) error {
			_, err := f.access.DisableUser(ctx, commands.Meta{}, access.DisableUser{UserID: "u"})
			return err
		}, "user u is disabled"},
		{"tenant suspended", func(f fixture) string { return f.user(t, "u", tenant.RoleTenantAdmin, "acme", 0).Token }, func(f fixture, _ string) error {
			_, err := f.access.SuspendTenant(ctx, commands.Meta{}, access.SuspendTenant{TenantID: "acme"})
			return err
		}, "tenant acme is suspended"},
		{"node decommissioned", func(f fixture) string { return f.agent(t).Credential }, func(f fixture, id string) error {
			_, err := f.nodes.Decommission(ctx, commands.Meta{}, nodes.Decommission{NodeID: strings.TrimPrefix(id, bearer.NodeCredentialPrefix)})
			return err
		}, "revoked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			token := c.token(f)
			if _, err := f.authn.Authenticate(ctx, token); err != nil {
				t.Fatal(err)
			}
			id, _, err := bearer.Parse(bearer.APIToken, token)
			f.do(t, err)
			f.do(t, c.end(f, id))
			f.clock.Advance(4 * time.Second)
			if _, err := f.authn.Authenticate(ctx, token); err != nil {
				t.Fatalf("within the cache window: %v", err)
			}
			f.clock.Advance(time.Second)
			unauthenticated(t, f, token, c.why)
		})
	}
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		tok := f.user(t, "u", tenant.RoleVendor, "", time.Hour)
		if _, err := f.authn.Authenticate(ctx, tok.Token); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Hour) // expired, and the token still cached
		unauthenticated(t, f, tok.Token, "expired")
	})
	t.Run("forgotten", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		tok := f.user(t, "u", tenant.RoleVendor, "", 0)
		if _, err := f.authn.Authenticate(ctx, tok.Token); err != nil {
			t.Fatal(err)
		}
		_, err := f.access.RevokeToken(ctx, commands.Meta{}, access.RevokeToken{TokenID: tok.ID})
		f.do(t, err)
		f.authn.Forget(tok.ID)
		unauthenticated(t, f, tok.Token, "revoked")
	})
}

func TestBootstrapAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	// Replicas starting together: exactly one prints a token.
	var wg sync.WaitGroup
	tokens := make(chan string, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := auth.BootstrapAdmin(ctx, f.access)
			if err != nil {
				t.Error(err)
			}
			tokens <- tok
		}()
	}
	wg.Wait()
	close(tokens)
	var printed []string
	for tok := range tokens {
		if tok != "" {
			printed = append(printed, tok)
		}
	}
	if len(printed) != 1 {
		t.Fatalf("%d tokens printed", len(printed))
	}
	p, err := f.authn.Authenticate(ctx, printed[0])
	if err != nil || p.Role != tenant.RoleAdmin || p.UserID != auth.BootstrapAdminID || p.TenantID != "" {
		t.Fatalf("bootstrap token: %+v %v", p, err)
	}
	if tok, err := auth.BootstrapAdmin(ctx, f.access); err != nil || tok != "" {
		t.Fatalf("second start: %q %v", tok, err)
	}
	if n := commandstest.CountContaining(t, f.s, printed[0][strings.LastIndexByte(printed[0], '_')+1:]); n != 0 {
		t.Fatalf("the bootstrap secret is in %d events", n)
	}
}

// gatedLoader holds the first read of one stream, after reading it, until
// released: a verification caught between reading a token and caching it.
type gatedLoader struct {
	commands.Loader
	stream  string
	once    sync.Once
	read    chan struct{}
	release chan struct{}
}

func (g *gatedLoader) ReadStream(ctx context.Context, id string, o eventstore.ReadStreamOptions) ([]eventstore.RecordedEvent, error) {
	evs, err := g.Loader.ReadStream(ctx, id, o)
	if id == g.stream {
		g.once.Do(func() {
			close(g.read)
			<-g.release
		})
	}
	return evs, err
}

// A token revoked while a verification of it is under way (its stream
// read, its answer not yet cached) is not cached as valid: the next use is
// refused at once, not when the cache window ends.
func TestRevocationDuringAVerification(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tok := f.user(t, "u", tenant.RoleOperator, "", 0)
	gate := &gatedLoader{Loader: f.s, stream: domain.StreamID(domain.TokenStream, tok.ID),
		read: make(chan struct{}), release: make(chan struct{})}
	authn := auth.NewAuthenticator(gate, auth.AuthenticatorOptions{Clock: f.clock.Now, CacheTTL: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	followed := make(chan error, 1)
	go func() { followed <- authn.Follow(ctx, f.s) }()
	<-authn.Following()
	revoked := make(chan struct{}, 1)
	authn.OnRevoke(func(auth.Revocation) { revoked <- struct{}{} })

	answered := make(chan error, 1)
	go func() { _, err := authn.Authenticate(ctx, tok.Token); answered <- err }()
	<-gate.read
	_, err := f.access.RevokeToken(ctx, commands.Meta{}, access.RevokeToken{TokenID: tok.ID})
	f.do(t, err)
	select {
	case <-revoked:
	case err := <-followed:
		t.Fatalf("follow ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the revocation was not seen in 10 s")
	}
	close(gate.release)
	<-answered // it began before the revocation: either answer is fair
	p, err := authn.Authenticate(ctx, tok.Token)
	if !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("a token revoked during its verification still authenticates: %+v %v", p, err)
	}
}
