// Package access handles the commands of access control and placement:
// tenants, users, API tokens, locations, and the join tokens agents enroll
// with.
package access

import (
	"context"
	"time"

	"cairn/commands"
	"cairn/domain"
)

// Defaults of Options.
const (
	DefaultTokenTTL     = 90 * 24 * time.Hour
	DefaultMaxTokenTTL  = 2 * 365 * 24 * time.Hour
	DefaultJoinTokenTTL = 15 * time.Minute
)

// Options tune token lifetimes. The zero value takes the defaults.
type Options struct {
	// TokenTTL is an API token's lifetime when the caller asks for none.
	TokenTTL time.Duration
	// MaxTokenTTL caps the lifetime a caller may ask for.
	MaxTokenTTL time.Duration
	// JoinTokenTTL is a join token's lifetime when the caller asks for none.
	JoinTokenTTL time.Duration
	// CredentialTTL is the lifetime of a node credential; zero means it lasts
	// until revoked (decommissioning the node revokes it), since an agent has
	// no one to ask for a new one.
	CredentialTTL time.Duration
}

func (o *Options) defaults() {
	if o.TokenTTL <= 0 {
		o.TokenTTL = DefaultTokenTTL
	}
	if o.MaxTokenTTL <= 0 {
		o.MaxTokenTTL = DefaultMaxTokenTTL
	}
	if o.JoinTokenTTL <= 0 {
		o.JoinTokenTTL = DefaultJoinTokenTTL
	}
}

// Handlers runs access-control commands against the event store.
type Handlers struct {
	store commands.Store
	now   commands.Clock
	newID commands.IDGenerator
	opts  Options
}

// NewHandlers returns access handlers; clock stamps commands and ids names
// the entities created without a caller-chosen id (and every token).
func NewHandlers(store commands.Store, clock commands.Clock, ids commands.IDGenerator, opts Options) *Handlers {
	opts.defaults()
	return &Handlers{store: store, now: clock, newID: ids, opts: opts}
}

// execute decides one command on the aggregate S in stream streamType-id.
func execute[S any, PS interface {
	*S
	commands.Aggregate
}](ctx context.Context, h *Handlers, streamType, idField, id string, meta commands.Meta, input any,
	decide func(S, time.Time) ([]domain.Event, error)) (commands.Outcome, error) {
	if err := commands.RequireID(idField, id); err != nil {
		return commands.Outcome{}, err
	}
	at := h.now()
	res, err := commands.Execute[S, PS](ctx, h.store, streamType, id, meta, input,
		func(s S) ([]domain.Event, error) { return decide(s, at) })
	if err != nil {
		return commands.Outcome{}, err
	}
	return commands.Outcome{Result: res, ID: id}, nil
}

// inTenant tags a command's events with the tenant they belong to, so that a
// tenant's history can be read without looking into payloads.
func inTenant(meta commands.Meta, tenantID string) commands.Meta {
	if tenantID != "" {
		meta.Tenant = tenantID
	}
	return meta
}
