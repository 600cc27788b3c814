package graph

import (
	"context"

	"cairn/auth"
	"cairn/domain/service"
	"cairn/eventstore"
	"cairn/graph/apierr"
	"cairn/graph/model"
	"cairn/graph/transport"
	"cairn/projections/audit"
)

// Entities as of a past moment are the auditor's view (projections/audit):
// one entity's stream replayed up to the moment. This file ties the API's
// entity types and moments to it, and decides who may look.

// entityKinds ties an API entity type to the kind of entity audit replays.
var entityKinds = map[model.EntityType]audit.Kind{
	model.EntityTypeNode:     audit.NodeKind,
	model.EntityTypeJob:      audit.JobKind,
	model.EntityTypeTemplate: audit.TemplateKind,
	model.EntityTypeService:  audit.ServiceKind,
	model.EntityTypeResource: audit.ResourceKind,
	model.EntityTypeTenant:   audit.TenantKind,
	model.EntityTypeUser:     audit.UserKind,
	model.EntityTypeAPIToken: audit.TokenKind,
	model.EntityTypeLocation: audit.LocationKind,
}

// pointOf turns the API's AsOf into a moment of the log.
func pointOf(a model.AsOf) (audit.Point, error) {
	switch {
	case a.Time != nil && a.Cursor != nil:
		return audit.Point{}, apierr.InvalidInput("asOf", "give either time or cursor, not both")
	case a.Time != nil:
		return audit.Point{Time: *a.Time}, nil
	case a.Cursor != nil:
		c := eventstore.Cursor(*a.Cursor)
		if c.IsZero() {
			return audit.Point{Start: true}, nil
		}
		return audit.Point{Cursor: c}, nil
	}
	return audit.Point{}, apierr.InvalidInput("asOf", "give a time or a cursor")
}

// entityState renders a replayed entity for the API.
func entityState(kind model.EntityType, id string, st audit.State) (*model.EntityState, error) {
	out := &model.EntityState{Type: kind, ID: id, Version: int(st.Version), Cursor: model.Cursor(st.Cursor)}
	if !st.Exists() {
		return out, nil
	}
	if !st.At.IsZero() {
		at := st.At
		out.Time = &at
	}
	js, err := audit.StateJSON(st.Entity)
	if err != nil {
		return nil, err
	}
	out.State = model.JSON(js)
	return out, nil
}

// auditable checks who may read an entity's past: auditors and admins any
// entity; tenant roles their own tenant's services (checked on the replay).
func (r *Resolver) auditable(ctx context.Context, ref model.EntityRef) (audit.Kind, error) {
	kind, ok := entityKinds[ref.Type]
	if !ok {
		return audit.Kind{}, apierr.InvalidInput("entity.type", "%s has no history to replay", ref.Type)
	}
	p := transport.Principal(ctx)
	if tenantScoped(p) && ref.Type == model.EntityTypeService {
		_, err := r.authorizeOwn(ctx, auth.ServiceRead)
		return kind, err
	}
	// The whole history, beyond any one tenant.
	_, err := r.authorize(ctx, auth.EventRead, auth.Resource{})
	return kind, err
}

// mayReadReplay hides another tenant's service from a tenant role, exactly
// as if it did not exist.
func (r *Resolver) mayReadReplay(ctx context.Context, ref model.EntityRef, st audit.State) error {
	p := transport.Principal(ctx)
	if !tenantScoped(p) || !st.Exists() {
		return nil
	}
	if svc, ok := st.Entity.(*service.Service); ok && svc.TenantID == p.TenantID {
		return nil
	}
	return apierr.NotFound(entityKinds[ref.Type].Name, ref.ID)
}
