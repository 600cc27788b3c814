package graph

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands/access"
	"cairn/commands/nodes"
	"cairn/eventstore"
)

// Principal is who a request acts as, as the API needs to know it.
type Principal struct {
	// TokenID is the API token's id ("node.<id>" for a node credential).
	TokenID   string
	UserID    string
	Name      string
	Role      string // admin, operator, tenant_admin, tenant_member, vendor, auditor, agent
	TenantID  string // tenant roles only
	NodeID    string // agent credentials only
	ExpiresAt time.Time
}

// Anonymous reports whether no token came with the request.
func (p Principal) Anonymous() bool { return p.Role == "" }

// Authenticator turns a bearer token into a principal. A token that does not
// authenticate is an *Error with CodeUnauthenticated; any other error means
// the check itself failed.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Principal, error)
}

// Policy says whether a principal may take an action ("node.drain",
// "service.create", ...), whatever the entity.
type Policy interface {
	Can(p Principal, action string) bool
	// Actions lists every action, for viewer.permissions.
	Actions() []string
}

// Projections is the part of the projection runner the API needs.
type Projections interface {
	// WaitFor returns once every read model has applied the event at c.
	WaitFor(ctx context.Context, c eventstore.Cursor) error
}

// Deps are the API's collaborators.
type Deps struct {
	Log         zerolog.Logger
	Store       *eventstore.Store
	Auth        Authenticator
	Policy      Policy
	Projections Projections
	Access      *access.Handlers
	Nodes       *nodes.Handlers
	// RequestID returns the id the HTTP middleware gave a request, for
	// logs and INTERNAL errors; nil: no ids.
	RequestID func(context.Context) string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

func (d *Deps) check() error {
	if d.Store == nil || d.Auth == nil || d.Policy == nil || d.Projections == nil || d.Access == nil || d.Nodes == nil {
		return errors.New("graph: Store, Auth, Policy, Projections, Access and Nodes are required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return nil
}

func (s *Server) requestID(ctx context.Context) string {
	if s.deps.RequestID == nil {
		return ""
	}
	return s.deps.RequestID(ctx)
}
