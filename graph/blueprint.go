package graph

import (
	"context"
	"errors"

	"cairn/auth"
	"cairn/commands/blueprints"
	"cairn/domain/blueprint"
	"cairn/graph/apierr"
	"cairn/graph/model"
	"cairn/graph/transport"
	"cairn/internal/ptr"
)

var errNoBlueprints = errors.New("this server does not apply blueprints")

// blueprintInput reads the tenant the blueprint is for (the file's, the
// input's, or a tenant role's own) and authorizes deploying, and with prune
// removing, that tenant's services.
func (r *Resolver) blueprintInput(ctx context.Context, input model.ApplyBlueprintInput) (Principal, blueprints.Apply, error) {
	p := transport.Principal(ctx)
	if r.deps.Blueprints == nil {
		return p, blueprints.Apply{}, errNoBlueprints
	}
	in := blueprints.Apply{Document: []byte(input.Document), TenantID: ptr.Value(input.TenantID), Prune: ptr.Value(input.Prune)}
	tenantID := in.TenantID
	if b, err := blueprint.Parse(in.Document); err == nil && b.Tenant != "" && tenantID == "" {
		tenantID = b.Tenant
	}
	if tenantScoped(p) {
		if tenantID == "" {
			tenantID = p.TenantID
		}
		in.TenantID = tenantID
	}
	if tenantID == "" {
		// Parse errors (with their paths) come first; then the missing tenant.
		if _, err := r.authorizeOwn(ctx, auth.ServiceCreate); err != nil {
			return p, in, err
		}
		if _, err := blueprint.Parse(in.Document); err != nil {
			return p, in, err
		}
		return p, in, apierr.InvalidInput("tenantId", "is required: name the tenant in the file (tenant:) or here")
	}
	actions := []auth.Action{auth.ServiceCreate, auth.ServiceStart, auth.ServiceStop}
	if in.Prune {
		actions = append(actions, auth.ServiceRemove)
	}
	for _, a := range actions {
		var err error
		if p, err = r.authorize(ctx, a, auth.Resource{TenantID: tenantID}); err != nil {
			return p, in, err
		}
	}
	return p, in, nil
}

func blueprintModel(res blueprints.Result) *model.BlueprintResult {
	out := &model.BlueprintResult{Blueprint: res.Blueprint, TenantID: res.TenantID, Changed: res.Changed(),
		Cursor: model.Cursor(res.Cursor), Changes: make([]model.BlueprintChange, 0, len(res.Changes))}
	for _, c := range res.Changes {
		mc := model.BlueprintChange{Service: c.Service, ServiceID: optional(c.ServiceID), Path: optional(c.Path), Detail: optional(c.Detail)}
		for _, s := range c.Steps {
			mc.Steps = append(mc.Steps, model.BlueprintStep(upper(s)))
		}
		out.Changes = append(out.Changes, mc)
	}
	return out
}
