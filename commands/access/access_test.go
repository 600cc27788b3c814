package access_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/commandstest"
	"cairn/domain"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

type fixture struct {
	s         *eventstore.Store
	h         *access.Handlers
	clock     *commandstest.Clock
	prefix    string // of every id this fixture seeded
	seedToken string // the id of u2's token
}

// id names an entity of this fixture: cases share a database (making one
// per case would be slow) and keep apart by their ids.
func (f fixture) id(name string) string { return f.prefix + name }

func newFixture(t *testing.T) fixture {
	t.Helper()
	s := commandstest.NewStore(t)
	clock := commandstest.NewClock(t0)
	return fixture{s: s, h: access.NewHandlers(s, clock.Now, commandstest.IDs("id"), access.Options{}), clock: clock}
}

// seed gives a case tenants t1 (active) and t2 (suspended), users u1
// (operator), u2 (member of t1) and u3 (disabled), an API token of u2, and
// locations loc-1 (active) and loc-old (retired), all named with prefix.
func seed(t *testing.T, f fixture, prefix string) fixture {
	t.Helper()
	ctx := context.Background()
	f.prefix = prefix
	m := commands.Meta{}
	steps := []func() (commands.Outcome, error){
		func() (commands.Outcome, error) {
			return f.h.CreateTenant(ctx, m, access.CreateTenant{TenantID: f.id("t1"), Name: "Acme"})
		},
		func() (commands.Outcome, error) {
			return f.h.CreateTenant(ctx, m, access.CreateTenant{TenantID: f.id("t2"), Name: "Beta"})
		},
		func() (commands.Outcome, error) {
			return f.h.SuspendTenant(ctx, m, access.SuspendTenant{TenantID: f.id("t2")})
		},
		func() (commands.Outcome, error) {
			return f.h.CreateUser(ctx, m, access.CreateUser{UserID: f.id("u1"), Name: "Olga", Role: tenant.RoleOperator})
		},
		func() (commands.Outcome, error) {
			return f.h.CreateUser(ctx, m, access.CreateUser{UserID: f.id("u2"), Name: "Tom", Role: tenant.RoleTenantMember, TenantID: f.id("t1")})
		},
		func() (commands.Outcome, error) {
			return f.h.CreateUser(ctx, m, access.CreateUser{UserID: f.id("u3"), Name: "Gone", Role: tenant.RoleAuditor})
		},
		func() (commands.Outcome, error) {
			return f.h.DisableUser(ctx, m, access.DisableUser{UserID: f.id("u3")})
		},
		func() (commands.Outcome, error) {
			out, err := f.h.IssueToken(ctx, m, access.IssueToken{UserID: f.id("u2")})
			f.seedToken = out.ID
			return out.Outcome, err
		},
		func() (commands.Outcome, error) {
			return f.h.CreateLocation(ctx, m, access.CreateLocation{LocationID: f.id("loc-1"), Name: "Ghent"})
		},
		func() (commands.Outcome, error) {
			return f.h.CreateLocation(ctx, m, access.CreateLocation{LocationID: f.id("loc-old"), Name: "Old"})
		},
		func() (commands.Outcome, error) {
			return f.h.RetireLocation(ctx, m, access.RetireLocation{LocationID: f.id("loc-old")})
		},
	}
	for _, step := range steps {
		if _, err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestHandlers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type run func(f fixture, m commands.Meta) (commands.Outcome, error)
	// token and joinToken issue for the named user or location of the case.
	token := func(user string, ttl time.Duration) run {
		return func(f fixture, m commands.Meta) (commands.Outcome, error) {
			id := ""
			if user != "" {
				id = f.id(user)
			}
			out, err := f.h.IssueToken(ctx, m, access.IssueToken{UserID: id, TTL: ttl})
			return out.Outcome, err
		}
	}
	joinToken := func(location string, labels map[string]string, ttl time.Duration) run {
		return func(f fixture, m commands.Meta) (commands.Outcome, error) {
			id := ""
			if location != "" {
				id = f.id(location)
			}
			out, err := f.h.IssueJoinToken(ctx, m, access.IssueJoinToken{LocationID: id, Labels: labels, TTL: ttl})
			return out.Outcome, err
		}
	}
	cases := []struct {
		name   string
		run    run
		want   error
		stream string // the stream type a successful command wrote to
		event  string
		tenant string // the tenant its events are tagged with
	}{
		{"create tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CreateTenant(ctx, m, access.CreateTenant{Name: "Gamma"})
		}, nil, domain.TenantStream, "tenant.created", "$id"},
		{"create an existing tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CreateTenant(ctx, m, access.CreateTenant{TenantID: f.id("t1"), Name: "Again"})
		}, domain.ErrConflict, "", "", ""},
		{"create a tenant without a name", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CreateTenant(ctx, m, access.CreateTenant{TenantID: f.id("t9")})
		}, domain.ErrInvalid, "", "", ""},
		{"rename tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.RenameTenant(ctx, m, access.RenameTenant{TenantID: f.id("t1"), Name: "Acme NV"})
		}, nil, domain.TenantStream, "tenant.renamed", "t1"},
		{"rename an unknown tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.RenameTenant(ctx, m, access.RenameTenant{TenantID: f.id("tx"), Name: "X"})
		}, domain.ErrNotFound, "", "", ""},
		{"suspend tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.SuspendTenant(ctx, m, access.SuspendTenant{TenantID: f.id("t1"), Reason: "unpaid"})
		}, nil, domain.TenantStream, "tenant.suspended", "t1"},
		{"suspend a suspended tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.SuspendTenant(ctx, m, access.SuspendTenant{TenantID: f.id("t2")})
		}, domain.ErrConflict, "", "", ""},
		{"resume tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.ResumeTenant(ctx, m, access.ResumeTenant{TenantID: f.id("t2")})
		}, nil, domain.TenantStream, "tenant.resumed", "t2"},
		{"resume an active tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.ResumeTenant(ctx, m, access.ResumeTenant{TenantID: f.id("t1")})
		}, domain.ErrConflict, "", "", ""},
		{"resume without an id", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.ResumeTenant(ctx, m, access.ResumeTenant{})
		}, domain.ErrInvalid, "", "", ""},
		{"create tenant user", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CreateUser(ctx, m, access.CreateUser{UserID: f.id("u9"), Name: "Ann", Role: tenant.RoleTenantAdmin, TenantID: f.id("t1")})
		}, nil, domain.UserStream, "user.created", "t1"},
		{"create a user of an unknown tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CreateUser(ctx, m, access.CreateUser{UserID: f.id("u9"), Name: "Ann", Role: tenant.RoleTenantAdmin, TenantID: f.id("tx")})
		}, domain.ErrNotFound, "", "", ""},
		{"create a tenant user without a tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CreateUser(ctx, m, access.CreateUser{UserID: f.id("u9"), Name: "Ann", Role: tenant.RoleTenantMember})
		}, domain.ErrInvalid, "", "", ""},
		{"create an operator within a tenant", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CreateUser(ctx, m, access.CreateUser{UserID: f.id("u9"), Name: "Ann", Role: tenant.RoleOperator, TenantID: f.id("t1")})
		}, domain.ErrInvalid, "", "", ""},
		{"create an existing user", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CreateUser(ctx, m, access.CreateUser{UserID: f.id("u1"), Name: "Olga", Role: tenant.RoleOperator})
		}, domain.ErrConflict, "", "", ""},
		{"disable user", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.DisableUser(ctx, m, access.DisableUser{UserID: f.id("u2"), Reason: "left"})
		}, nil, domain.UserStream, "user.disabled", "t1"},
		{"disable a disabled user", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.DisableUser(ctx, m, access.DisableUser{UserID: f.id("u3")})
		}, domain.ErrConflict, "", "", ""},
		{"disable an unknown user", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.DisableUser(ctx, m, access.DisableUser{UserID: f.id("ux")})
		}, domain.ErrNotFound, "", "", ""},
		{"enable user", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.EnableUser(ctx, m, access.EnableUser{UserID: f.id("u3")})
		}, nil, domain.UserStream, "user.enabled", ""},
		{"enable an active user", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.EnableUser(ctx, m, access.EnableUser{UserID: f.id("u1")})
		}, domain.ErrConflict, "", "", ""},
		{"issue token", token("u2", 0), nil, domain.TokenStream, "api_token.issued", "t1"},
		{"issue a token for an unknown user", token("ux", 0), domain.ErrNotFound, "", "", ""},
		{"issue a token for a disabled user", token("u3", 0), domain.ErrConflict, "", "", ""},
		{"issue a token without a user", token("", 0), domain.ErrInvalid, "", "", ""},
		{"issue a token for too long", token("u1", 3*365*24*time.Hour), domain.ErrInvalid, "", "", ""},
		{"issue a token with a negative lifetime", token("u1", -time.Hour), domain.ErrInvalid, "", "", ""},
		{"revoke token", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.RevokeToken(ctx, m, access.RevokeToken{TokenID: f.seedToken, Reason: "leaked"})
		}, nil, domain.TokenStream, "api_token.revoked", "t1"},
		{"revoke an unknown token", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.RevokeToken(ctx, m, access.RevokeToken{TokenID: f.id("tx")})
		}, domain.ErrNotFound, "", "", ""},
		{"create location", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CreateLocation(ctx, m, access.CreateLocation{Name: "Antwerp", Description: "DC 2"})
		}, nil, domain.LocationStream, "location.created", ""},
		{"create an existing location", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CreateLocation(ctx, m, access.CreateLocation{LocationID: f.id("loc-1"), Name: "Ghent"})
		}, domain.ErrConflict, "", "", ""},
		{"update location", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.UpdateLocation(ctx, m, access.UpdateLocation{LocationID: f.id("loc-1"), Name: "Gent", Description: "hall B"})
		}, nil, domain.LocationStream, "location.updated", ""},
		{"update a retired location", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.UpdateLocation(ctx, m, access.UpdateLocation{LocationID: f.id("loc-old"), Name: "x"})
		}, domain.ErrConflict, "", "", ""},
		{"update an unknown location", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.UpdateLocation(ctx, m, access.UpdateLocation{LocationID: f.id("loc-x"), Name: "x"})
		}, domain.ErrNotFound, "", "", ""},
		{"retire location", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.RetireLocation(ctx, m, access.RetireLocation{LocationID: f.id("loc-1")})
		}, nil, domain.LocationStream, "location.retired", ""},
		{"retire a retired location", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.RetireLocation(ctx, m, access.RetireLocation{LocationID: f.id("loc-old")})
		}, domain.ErrConflict, "", "", ""},
		{"issue join token", joinToken("loc-1", map[string]string{"rack": "a"}, 0),
			nil, domain.JoinTokenStream, "join_token.issued", ""},
		{"issue a join token for an unknown location", joinToken("loc-x", nil, 0), domain.ErrNotFound, "", "", ""},
		{"issue a join token for a retired location", joinToken("loc-old", nil, 0), domain.ErrConflict, "", "", ""},
		{"issue a join token with bad labels", joinToken("", map[string]string{"A B": "x"}, 0), domain.ErrInvalid, "", "", ""},
		{"issue a long-lived join token", joinToken("", nil, 48*time.Hour), domain.ErrInvalid, "", "", ""},
		{"revoke join token", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			jt, err := f.h.IssueJoinToken(ctx, commands.Meta{CommandID: f.id("issue-jt")}, access.IssueJoinToken{})
			if err != nil {
				return commands.Outcome{}, err
			}
			return f.h.RevokeJoinToken(ctx, m, access.RevokeJoinToken{TokenID: jt.ID})
		}, nil, domain.JoinTokenStream, "join_token.revoked", ""},
		{"revoke an unknown join token", func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.RevokeJoinToken(ctx, m, access.RevokeJoinToken{TokenID: f.id("jx")})
		}, domain.ErrNotFound, "", "", ""},
	}
	shared := newFixture(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := seed(t, shared, fmt.Sprintf("c%d.", i))
			corr := "corr-" + c.name
			meta := commands.Meta{CommandID: "cmd-" + c.name, Actor: "user:admin", CorrelationID: corr}
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
			wantTenant := c.tenant
			switch wantTenant {
			case "":
			case "$id":
				wantTenant = out.ID
			default:
				wantTenant = f.id(wantTenant)
			}
			if err != nil {
				t.Fatal(err)
			}
			evs := commandstest.Stream(t, f.s, domain.StreamID(c.stream, out.ID))
			last := evs[len(evs)-1]
			if last.Type != c.event || last.Metadata.Actor != "user:admin" || last.Metadata.Tenant != wantTenant ||
				out.Version != last.Version || out.Cursor.Less(last.Cursor()) || out.Duplicate {
				t.Fatalf("outcome %+v; last event %s v%d by %q in tenant %q", out, last.Type, last.Version, last.Metadata.Actor, last.Metadata.Tenant)
			}
			n := commandstest.CountCorrelated(t, f.s, corr)
			again, err := c.run(f, meta)
			if err != nil || !again.Duplicate || again.Cursor != out.Cursor || again.ID != out.ID || again.Version != out.Version {
				t.Fatalf("retry: %+v %v (first %+v)", again, err, out)
			}
			if commandstest.CountCorrelated(t, f.s, corr) != n {
				t.Fatal("a retry appended events")
			}
		})
	}
}
