package access_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/commandstest"
	"cairn/domain"
	"cairn/domain/tenant"
	"cairn/internal/bearer"
)

// A token is shown once and stored only as a hash; its lifetime defaults to
// 90 days and follows the caller's wish within the cap.
func TestTokensAreStoredHashed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seed(t, newFixture(t), "")
	out, err := f.h.IssueToken(ctx, commands.Meta{CommandID: "tok-once"}, access.IssueToken{UserID: "u2"})
	if err != nil {
		t.Fatal(err)
	}
	id, secret, err := bearer.Parse(bearer.APIToken, out.Token)
	if err != nil || id != out.ID || !out.ExpiresAt.Equal(t0.Add(90*24*time.Hour)) {
		t.Fatalf("token %q (id %q): %v, expires %s", out.Token, out.ID, err, out.ExpiresAt)
	}
	if n := commandstest.CountContaining(t, f.s, secret); n != 0 {
		t.Fatalf("the clear secret is in %d events", n)
	}
	if n := commandstest.CountContaining(t, f.s, bearer.Hash(secret)); n != 1 {
		t.Fatalf("the secret's hash is in %d events, want 1", n)
	}
	tok, _, err := commands.Load[tenant.APIToken](ctx, f.s, domain.TokenStream, out.ID)
	if err != nil || tok.Role != tenant.RoleTenantMember || tok.TenantID != "t1" || tok.UserID != "u2" {
		t.Fatalf("token takes the user's role and tenant: %+v %v", tok, err)
	}
	// A retry is recognised but cannot show the secret again.
	again, err := f.h.IssueToken(ctx, commands.Meta{CommandID: "tok-once"}, access.IssueToken{UserID: "u2"})
	if err != nil || !again.Duplicate || again.Token != "" || again.ID != out.ID || !again.ExpiresAt.Equal(out.ExpiresAt) {
		t.Fatalf("retry: %+v %v", again, err)
	}
	short, err := f.h.IssueToken(ctx, commands.Meta{}, access.IssueToken{UserID: "u1", TTL: time.Hour})
	if err != nil || !short.ExpiresAt.Equal(t0.Add(time.Hour)) || !strings.HasPrefix(short.Token, "cairn_"+short.ID+"_") {
		t.Fatalf("short token: %+v %v", short, err)
	}
}
