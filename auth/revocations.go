package auth

import (
	"context"
	"errors"

	"cairn/domain"
	"cairn/eventstore"
)

// A Revocation says who may no longer act: a token (or a node's
// credential), every token of a user, or every token of a tenant's users.
type Revocation struct {
	TokenID  string
	UserID   string
	TenantID string
}

// Matches reports whether p is one the revocation stops.
func (r Revocation) Matches(p Principal) bool {
	return (r.TokenID != "" && p.TokenID == r.TokenID) ||
		(r.UserID != "" && p.UserID == r.UserID) ||
		(r.TenantID != "" && p.TenantID == r.TenantID)
}

// revokingEvents end tokens; each names the stream of what it stops.
var revokingEvents = []string{"api_token.revoked", "user.disabled", "tenant.suspended", "node_credential.revoked"}

func revocationOf(e eventstore.RecordedEvent) (Revocation, bool) {
	for _, k := range []struct {
		stream string
		rev    func(id string) Revocation
	}{
		{domain.TokenStream, func(id string) Revocation { return Revocation{TokenID: id} }},
		{domain.UserStream, func(id string) Revocation { return Revocation{UserID: id} }},
		{domain.TenantStream, func(id string) Revocation { return Revocation{TenantID: id} }},
		{domain.NodeCredentialStream, func(id string) Revocation { return Revocation{TokenID: nodeCredentialID(id)} }},
	} {
		if id, ok := domain.EntityID(k.stream, e.StreamID); ok && e.StreamType == k.stream {
			return k.rev(id), true
		}
	}
	return Revocation{}, false
}

// Changes is the event log as Follow reads it. *eventstore.Store
// implements it.
type Changes interface {
	Head(ctx context.Context) (eventstore.Cursor, error)
	Subscribe(ctx context.Context, opts eventstore.SubscribeOptions, handle func(context.Context, eventstore.Batch) error) error
}

// Follow keeps the authenticator true to the log until ctx ends: a token
// revoked, a user disabled, a tenant suspended or a node's credential
// revoked leaves the cache at once (in this process, as soon as it is
// appended; in another, as soon as the notification arrives), and the
// listeners registered with OnRevoke hear of it, so that open connections
// of what was stopped end too.
func (a *Authenticator) Follow(ctx context.Context, log Changes) error {
	head, err := log.Head(ctx)
	if err == nil {
		// What was cached before the starting point may have been revoked
		// before it too: only what is verified from here on is kept.
		a.mu.Lock()
		clear(a.cache)
		a.dropped++
		a.mu.Unlock()
		a.started.Do(func() { close(a.following) })
		err = log.Subscribe(ctx, eventstore.SubscribeOptions{From: head, Filter: eventstore.Filter{EventTypes: revokingEvents}},
			func(_ context.Context, b eventstore.Batch) error {
				for _, e := range b.Events {
					if rev, ok := revocationOf(e); ok {
						a.revoke(rev)
					}
				}
				return nil
			})
	}
	// Ending with its context is how Follow stops, not a failure.
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Following is closed once Follow sees every revocation from then on.
func (a *Authenticator) Following() <-chan struct{} { return a.following }

// OnRevoke registers f to hear of every revocation Follow sees.
func (a *Authenticator) OnRevoke(f func(Revocation)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.listeners = append(a.listeners, f)
}

func (a *Authenticator) revoke(rev Revocation) {
	a.mu.Lock()
	a.dropped++
	for id, v := range a.cache {
		if rev.Matches(v.principal) || id == rev.TokenID {
			delete(a.cache, id)
		}
	}
	listeners := append([]func(Revocation){}, a.listeners...)
	a.mu.Unlock()
	for _, f := range listeners {
		f(rev)
	}
}
