package graph

import (
	"context"
	"crypto/rand"
	"errors"

	"cairn/auth"
	"cairn/commands"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/graph/apierr"
	"cairn/graph/model"
	"cairn/graph/transport"
)

// authenticated returns the caller of a field any signed-in caller may use,
// and UNAUTHENTICATED without a token or once the session has ended.
func authenticated(ctx context.Context) (Principal, error) {
	p := transport.Principal(ctx)
	if sess := transport.SessionOf(ctx); sess != nil {
		if err := sess.Err(); err != nil {
			return p, err
		}
	}
	if p.Role == "" {
		return p, apierr.Unauthenticated("this needs a token: send Authorization: Bearer <token> (see docs/api.md)")
	}
	return p, nil
}

// authorize returns the caller when the policy lets it take action on the
// resource, and the error the API reports otherwise: UNAUTHENTICATED without
// a token, FORBIDDEN with one.
func (r *Resolver) authorize(ctx context.Context, action auth.Action, res auth.Resource) (Principal, error) {
	p, err := authenticated(ctx)
	if err != nil {
		return p, err
	}
	if err := auth.Can(p, action, res); err != nil {
		return p, err
	}
	return p, nil
}

// authorizeOwn authorizes a read whose results the resolver narrows to what
// the caller may see (its own tenant's, its own node's).
func (r *Resolver) authorizeOwn(ctx context.Context, action auth.Action) (Principal, error) {
	p := transport.Principal(ctx)
	return r.authorize(ctx, action, auth.Resource{TenantID: p.TenantID, NodeID: p.NodeID})
}

// authorizeRole refuses a caller whose role includes none of the actions:
// no token, or a role without them, anywhere. It runs before an entity is
// looked up by id, so that a caller who may neither read nor change such
// entities cannot tell one that exists from one that does not.
func (r *Resolver) authorizeRole(ctx context.Context, actions ...auth.Action) (Principal, error) {
	p := transport.Principal(ctx)
	own := auth.Resource{TenantID: p.TenantID, NodeID: p.NodeID, Vendor: p.UserID, Grants: p.Role}
	var first error
	for _, a := range actions {
		_, err := r.authorize(ctx, a, own)
		if err == nil {
			return p, nil
		}
		if first == nil {
			first = err
		}
	}
	return p, first
}

// tenantScoped reports whether p sees only its own tenant's data.
func tenantScoped(p Principal) bool {
	return p.Role == tenant.RoleTenantAdmin || p.Role == tenant.RoleTenantMember
}

// sees reports whether p may read data of tenant t ("" is data of no
// tenant, which tenant roles do not see unless the caller allows it).
func sees(p Principal, t string) bool { return !tenantScoped(p) || t == p.TenantID }

// meta is the command metadata of a mutation: who acts, within which tenant,
// with the client's command id for idempotent retries. Each request gets a
// correlation id so its events can be found together.
func meta(ctx context.Context, p Principal, commandID *string) commands.Meta {
	m := commands.Meta{Actor: actor(p), Tenant: p.TenantID, CorrelationID: correlationID(ctx)}
	if commandID != nil {
		m.CommandID = *commandID
	}
	return m
}

func actor(p Principal) string {
	if p.ID == "" {
		return "anonymous"
	}
	return p.ID
}

type correlationKey struct{}

// correlationID is the request's correlation id, made on first use.
func correlationID(ctx context.Context) string {
	if v, ok := ctx.Value(correlationKey{}).(*string); ok {
		if *v == "" {
			*v = rand.Text()
		}
		return *v
	}
	return rand.Text()
}

// waitConsistent waits until the read models applied the event at c, at
// most ConsistencyTimeout; then it fails with CONFLICT naming the cursor.
func (r *Resolver) waitConsistent(ctx context.Context, c *model.Cursor) error {
	if c == nil || eventstore.Cursor(*c).IsZero() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, r.cfg.ConsistencyTimeout)
	defer cancel()
	err := r.deps.Projections.WaitFor(wctx, eventstore.Cursor(*c))
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return &apierr.Error{Code: apierr.CodeConflict,
			Message:    "the read models have not reached cursor " + eventstore.Cursor(*c).String() + " within " + r.cfg.ConsistencyTimeout.String() + "; retry the query",
			Extensions: map[string]any{"cursor": eventstore.Cursor(*c).String(), "reason": "NOT_CONSISTENT_YET"},
			Cause:      err}
	}
	return err
}

// pageSize checks a connection's first argument.
func pageSize(first *int, def int) (int, error) { return pageSizeOf("first", first, def) }

// pageSizeOf checks a connection's first or last argument.
func pageSizeOf(arg string, n *int, def int) (int, error) {
	if n == nil {
		return def, nil
	}
	switch {
	case *n < 0:
		return 0, apierr.InvalidInput(arg, "must not be negative")
	case *n > maxFirst:
		return 0, apierr.InvalidInput(arg, "is %d; at most %d per page: page with a cursor", *n, maxFirst)
	default:
		return *n, nil
	}
}
