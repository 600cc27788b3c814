package commands

import (
	"context"

	"cairn/domain"
	"cairn/domain/node"
	"cairn/domain/tenant"
)

// Checks of the entities a command refers to, made before it is decided. They
// read the referenced stream at that moment: a reference that changes right
// after (a location retired in the same instant) is the process managers'
// concern, as it would be for a read model.

// RequireID refuses an empty id with a message naming the field.
func RequireID(field, id string) error {
	if id == "" {
		return &domain.ValidationError{Field: field, Reason: "is required"}
	}
	return nil
}

// RequireLocation checks that a location exists and takes new nodes and
// services; "" (no location) passes.
func RequireLocation(ctx context.Context, store Loader, id string) error {
	if id == "" {
		return nil
	}
	l, _, err := Load[tenant.Location](ctx, store, domain.LocationStream, id)
	switch {
	case err != nil:
		return err
	case !l.Exists():
		return &domain.NotFoundError{Entity: "location", ID: id}
	case l.Status != tenant.LocationStatusActive:
		return &domain.StateError{Entity: "location", ID: id, Command: "place anything in", State: string(l.Status)}
	}
	return nil
}

// RequireTenant loads a tenant that must exist.
func RequireTenant(ctx context.Context, store Loader, id string) (tenant.Tenant, error) {
	t, _, err := Load[tenant.Tenant](ctx, store, domain.TenantStream, id)
	if err == nil && !t.Exists() {
		err = &domain.NotFoundError{Entity: "tenant", ID: id}
	}
	return t, err
}

// RequireNode loads a node that must exist and not be decommissioned.
func RequireNode(ctx context.Context, store Loader, id string) (node.Node, error) {
	n, _, err := Load[node.Node](ctx, store, domain.NodeStream, id)
	switch {
	case err != nil:
		return n, err
	case !n.Exists():
		return n, &domain.NotFoundError{Entity: "node", ID: id}
	case n.Status == node.StatusDecommissioned:
		return n, &domain.StateError{Entity: "node", ID: id, Command: "send work to", State: string(n.Status)}
	}
	return n, nil
}
