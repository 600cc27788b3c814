package access

import (
	"context"
	"fmt"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/tenant"
	"cairn/internal/bearer"
)

// IssueToken issues an API token that acts as a user, with the user's role
// and tenant.
type IssueToken struct {
	UserID string `json:"userId"`
	// TTL is the token's lifetime; zero takes the configured default.
	TTL time.Duration `json:"ttl,omitempty"`
}

// RevokeToken stops a token from authenticating.
type RevokeToken struct {
	TokenID string `json:"tokenId"`
	Reason  string `json:"reason,omitempty"`
}

// IssuedToken is a new token. Outcome.ID is the token's id.
type IssuedToken struct {
	commands.Outcome
	// Token is the bearer token, "cairn_<id>_<secret>". It is shown once: the
	// log keeps only a hash, so a retried command (Duplicate) returns it empty.
	Token     string
	ExpiresAt time.Time
}

// IssueToken issues a token for an existing, active user.
func (h *Handlers) IssueToken(ctx context.Context, meta commands.Meta, in IssueToken) (IssuedToken, error) {
	if err := commands.RequireID("userId", in.UserID); err != nil {
		return IssuedToken{}, err
	}
	ttl, err := h.tokenTTL(in.TTL)
	if err != nil {
		return IssuedToken{}, err
	}
	u, _, err := commands.Load[tenant.User](ctx, h.store, domain.UserStream, in.UserID)
	switch {
	case err != nil:
		return IssuedToken{}, err
	case !u.Exists():
		return IssuedToken{}, &domain.NotFoundError{Entity: "user", ID: in.UserID}
	case !u.Active():
		return IssuedToken{}, &domain.StateError{Entity: "user", ID: in.UserID, Command: "issue a token for", State: string(u.Status)}
	}
	id, err := commands.EntityID(ctx, h.store, &meta, domain.TokenStream, "", h.newID)
	if err != nil {
		return IssuedToken{}, err
	}
	minted, err := bearer.Mint(bearer.APIToken, id)
	if err != nil {
		return IssuedToken{}, err
	}
	var expires time.Time
	out, err := execute(ctx, h, domain.TokenStream, "tokenId", id, inTenant(meta, u.TenantID), in, func(t tenant.APIToken, at time.Time) ([]domain.Event, error) {
		expires = at.Add(ttl).UTC()
		return t.Issue(tenant.IssueToken{TokenID: id, UserID: u.ID, Role: u.Role, TenantID: u.TenantID,
			SecretHash: minted.Hash, ExpiresAt: expires, At: at})
	})
	if err != nil {
		return IssuedToken{}, err
	}
	if out.Duplicate {
		t, _, err := commands.Load[tenant.APIToken](ctx, h.store, domain.TokenStream, id)
		return IssuedToken{Outcome: out, ExpiresAt: t.ExpiresAt}, err
	}
	return IssuedToken{Outcome: out, Token: minted.Clear, ExpiresAt: expires}, nil
}

func (h *Handlers) tokenTTL(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl == 0:
		return h.opts.TokenTTL, nil
	case ttl < 0:
		return 0, &domain.ValidationError{Field: "ttl", Reason: "must be positive, or zero for the default"}
	case ttl > h.opts.MaxTokenTTL:
		return 0, &domain.ValidationError{Field: "ttl", Reason: fmt.Sprintf("must be at most %s", h.opts.MaxTokenTTL)}
	}
	return ttl, nil
}

// RevokeToken revokes an active token, expired or not.
func (h *Handlers) RevokeToken(ctx context.Context, meta commands.Meta, in RevokeToken) (commands.Outcome, error) {
	t, _, err := commands.Load[tenant.APIToken](ctx, h.store, domain.TokenStream, in.TokenID)
	if err != nil {
		return commands.Outcome{}, err
	}
	return execute(ctx, h, domain.TokenStream, "tokenId", in.TokenID, inTenant(meta, t.TenantID), in, func(t tenant.APIToken, at time.Time) ([]domain.Event, error) {
		return t.Revoke(tenant.RevokeToken{TokenID: in.TokenID, Reason: in.Reason, At: at})
	})
}
