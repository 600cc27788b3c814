package auth

import (
	"context"
	"crypto/subtle"
	"strings"
	"sync"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/jointoken"
	"cairn/domain/tenant"
	"cairn/internal/bearer"
)

// Defaults of AuthenticatorOptions.
const (
	DefaultCacheTTL  = 5 * time.Second
	DefaultCacheSize = 10_000
)

// AuthenticatorOptions tune an Authenticator. The zero value takes the defaults.
type AuthenticatorOptions struct {
	// Clock tells the time tokens expire against; default time.Now.
	Clock func() time.Time
	// CacheTTL is how long a verified token is trusted without reading its
	// streams again: a revocation, a disabled user or a suspended tenant
	// takes effect within it.
	CacheTTL time.Duration
	// CacheSize bounds the verified tokens kept.
	CacheSize int
}

// Authenticator turns bearer tokens into principals. It reads the token's
// stream (and its user's and tenant's) from the log, and keeps what it
// verified for CacheTTL so that a busy client costs no reads. It is safe for
// concurrent use.
type Authenticator struct {
	store commands.Loader
	opts  AuthenticatorOptions

	mu    sync.Mutex
	cache map[string]verified // by token id
	// dropped counts what left the cache by revocation or Forget: a
	// verification that read its streams before one of them does not
	// cache its answer, which the revocation may already have outdated.
	dropped   uint64
	listeners []func(Revocation)
	following chan struct{} // closed once Follow has its starting point
	started   sync.Once
}

type verified struct {
	hash      string // the token's stored secret hash
	principal Principal
	at        time.Time // when its streams were read
}

// NewAuthenticator returns an authenticator reading from store.
func NewAuthenticator(store commands.Loader, opts AuthenticatorOptions) *Authenticator {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	return &Authenticator{store: store, opts: opts, cache: map[string]verified{}, following: make(chan struct{})}
}

// Authenticate checks a bearer token ("cairn_<id>_<secret>", with or without
// a "Bearer " prefix) and returns who it acts as. A token that does not
// authenticate yields an error for which errors.Is(err, ErrUnauthenticated)
// holds; its message says why, for the server's log only. Any other error
// means the check could not be made (the database is unreachable, say).
// Long-lived connections call it again from time to time: expiry is checked
// on every call, revocation once the cache window has passed.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (Principal, error) {
	token = strings.TrimSpace(token)
	if len(token) > 7 && strings.EqualFold(token[:7], "bearer ") {
		token = strings.TrimSpace(token[7:])
	}
	if token == "" {
		return Principal{}, &UnauthenticatedError{Reason: "no token"}
	}
	id, secret, err := bearer.Parse(bearer.APIToken, token)
	if err != nil {
		return Principal{}, &UnauthenticatedError{Reason: "malformed token: it " + err.Error()}
	}
	hash := bearer.Hash(secret)
	now := a.opts.Clock()
	v, ok, dropped := a.cached(id, now)
	if ok {
		return check(v, hash, now)
	}
	v, err = a.load(ctx, id, now)
	if err != nil {
		return Principal{}, err
	}
	a.remember(id, v, dropped)
	return check(v, hash, now)
}

// check verifies the presented secret against a verified token, in constant
// time, and the token's expiry at now.
func check(v verified, hash string, now time.Time) (Principal, error) {
	if subtle.ConstantTimeCompare([]byte(hash), []byte(v.hash)) != 1 {
		return Principal{}, &UnauthenticatedError{TokenID: v.principal.TokenID, Reason: "the secret does not match"}
	}
	if exp := v.principal.ExpiresAt; !exp.IsZero() && !now.Before(exp) {
		return Principal{}, &UnauthenticatedError{TokenID: v.principal.TokenID, Reason: "expired at " + exp.Format(time.RFC3339)}
	}
	return v.principal, nil
}

// load reads a token's streams and checks that it, its user and its tenant
// may act now. A node credential's id is "node.<node id>".
func (a *Authenticator) load(ctx context.Context, id string, now time.Time) (verified, error) {
	refuse := func(reason string) (verified, error) {
		return verified{}, &UnauthenticatedError{TokenID: id, Reason: reason}
	}
	if nodeID, ok := strings.CutPrefix(id, bearer.NodeCredentialPrefix); ok {
		c, _, err := commands.Load[jointoken.Credential](ctx, a.store, domain.NodeCredentialStream, nodeID)
		switch {
		case err != nil:
			return verified{}, err
		case !c.Exists():
			return refuse("no such node credential")
		case c.Status != jointoken.CredentialStatusActive:
			return refuse("the node credential is " + string(c.Status))
		}
		return verified{hash: c.SecretHash, at: now, principal: Principal{
			Kind: KindAgent, ID: nodeID, TokenID: id, Role: RoleAgent, NodeID: nodeID, ExpiresAt: c.ExpiresAt,
		}}, nil
	}
	t, _, err := commands.Load[tenant.APIToken](ctx, a.store, domain.TokenStream, id)
	switch {
	case err != nil:
		return verified{}, err
	case !t.Exists():
		return refuse("no such token")
	case t.Status != tenant.TokenStatusActive:
		return refuse("the token is " + string(t.Status))
	}
	u, _, err := commands.Load[tenant.User](ctx, a.store, domain.UserStream, t.UserID)
	switch {
	case err != nil:
		return verified{}, err
	case !u.Active():
		return refuse("user " + t.UserID + " is " + orMissing(string(u.Status)))
	}
	if t.TenantID != "" {
		tn, _, err := commands.Load[tenant.Tenant](ctx, a.store, domain.TenantStream, t.TenantID)
		switch {
		case err != nil:
			return verified{}, err
		case tn.Status != tenant.TenantStatusActive:
			return refuse("tenant " + t.TenantID + " is " + orMissing(string(tn.Status)))
		}
	}
	return verified{hash: t.SecretHash, at: now, principal: Principal{
		Kind: KindUser, ID: u.ID, UserID: u.ID, Name: u.Name, TokenID: id,
		Role: t.Role, TenantID: t.TenantID, ExpiresAt: t.ExpiresAt,
	}}, nil
}

func orMissing(status string) string {
	if status == "" {
		return "missing"
	}
	return status
}

// cached returns the token's verification if it is fresh, and how many
// drops the cache had seen, for remember.
func (a *Authenticator) cached(id string, now time.Time) (verified, bool, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.cache[id]
	if !ok || now.Sub(v.at) >= a.opts.CacheTTL || now.Before(v.at) {
		return verified{}, false, a.dropped
	}
	return v, true, a.dropped
}

// remember keeps a verified token, unless something was dropped from the
// cache since the verification began (dropped is the count then); when the
// cache is full it first drops the stale entries and, if none are, an
// arbitrary one, so memory stays bounded whatever the clients do.
func (a *Authenticator) remember(id string, v verified, dropped uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dropped != dropped {
		return
	}
	if _, ok := a.cache[id]; !ok && len(a.cache) >= a.opts.CacheSize {
		for k, old := range a.cache {
			if v.at.Sub(old.at) >= a.opts.CacheTTL {
				delete(a.cache, k)
			}
		}
		for k := range a.cache {
			if len(a.cache) < a.opts.CacheSize {
				break
			}
			delete(a.cache, k)
		}
	}
	a.cache[id] = v
}

// Forget drops a token from the cache, so that a revocation this process
// recorded takes effect at once rather than after the cache window.
func (a *Authenticator) Forget(tokenID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.cache, tokenID)
	a.dropped++
}

// nodeCredentialID is the token id of a node's credential.
func nodeCredentialID(nodeID string) string { return bearer.NodeCredentialPrefix + nodeID }
