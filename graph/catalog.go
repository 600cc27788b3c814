package graph

import (
	"context"
	"encoding/json"

	"cairn/auth"
	"cairn/commands"
	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/graph/apierr"
	"cairn/graph/model"
	"cairn/graph/transport"
	"cairn/projections"
	"cairn/projections/readmodel"
)

// Catalog and service mutations return the entity as its own stream shows
// it right after the command (the service's resources as the read models
// show them).

var (
	errNoTemplates = apierr.New(apierr.CodeInternal, "this server does not run catalog commands")
	errNoServices  = apierr.New(apierr.CodeInternal, "this server does not run service commands")
)

func (r *Resolver) templatePayload(ctx context.Context, out commands.Outcome) (*model.TemplatePayload, error) {
	if !selects(ctx, "template") {
		return &model.TemplatePayload{Cursor: model.Cursor(out.Cursor), Duplicate: out.Duplicate}, nil
	}
	t, v, err := load[template.TemplateVersion](ctx, r, domain.TemplateStream, out.ID)
	if err != nil {
		return nil, err
	}
	row := readmodel.Template{
		ID: template.ID(t.Name, t.Version), Name: t.Name, Version: t.Version, Vendor: t.Vendor, Status: t.Status,
		Digest: t.Digest, Descriptor: json.RawMessage(t.Descriptor), RegisteredAt: t.RegisteredAt,
		PublishedAt: t.PublishedAt, DeprecatedAt: t.DeprecatedAt, DeprecationReason: t.DeprecationReason, StreamVersion: v,
	}
	var d ocl.Descriptor
	if json.Unmarshal(t.Descriptor, &d) == nil {
		row.Category, row.Description = d.Metadata.Category, d.Metadata.Description
	}
	return &model.TemplatePayload{Template: templateRowModel(row), Cursor: model.Cursor(out.Cursor), Duplicate: out.Duplicate}, nil
}

// authorizeTemplate authorizes publishing or deprecating a template
// version: a vendor acts on its own templates only.
func (r *Resolver) authorizeTemplate(ctx context.Context, action auth.Action, name, version string) (Principal, error) {
	if r.deps.Templates == nil {
		return transport.Principal(ctx), errNoTemplates
	}
	if _, err := r.authorize(ctx, auth.TemplateRead, auth.Resource{}); err != nil {
		return transport.Principal(ctx), err
	}
	vendor, err := r.deps.Templates.Vendor(ctx, name, version)
	if err != nil {
		return transport.Principal(ctx), err
	}
	return r.authorize(ctx, action, auth.Resource{Vendor: vendor})
}

func (r *Resolver) servicePayload(ctx context.Context, out commands.Outcome) (*model.ServicePayload, error) {
	if !selects(ctx, "service") {
		return &model.ServicePayload{Cursor: model.Cursor(out.Cursor), Duplicate: out.Duplicate}, nil
	}
	sv, v, err := load[service.Service](ctx, r, domain.ServiceStream, out.ID)
	if err != nil {
		return nil, err
	}
	row := readmodel.Service{
		ID: sv.ID, TenantID: sv.TenantID, Name: sv.Name, TemplateName: sv.TemplateName, TemplateVersion: sv.TemplateVersion,
		Status: sv.Status, FailedIn: sv.FailedIn, Cause: sv.Cause, Variables: json.RawMessage(sv.Variables),
		Outputs: json.RawMessage(sv.Outputs), ResourceIDs: sv.ResourceIDs, Remaining: sv.Remaining,
		RequestedAt: sv.RequestedAt, UpdatedAt: sv.UpdatedAt, Revision: sv.Revision, Blueprint: sv.Blueprint, Version: v,
	}
	models, err := r.servicesWithResources(ctx, []readmodel.Service{row})
	if err != nil {
		return nil, err
	}
	return &model.ServicePayload{Service: models[0], Cursor: model.Cursor(out.Cursor), Duplicate: out.Duplicate}, nil
}

// authorizeService authorizes a command on an existing service: to a
// tenant role another tenant's service does not exist.
func (r *Resolver) authorizeService(ctx context.Context, action auth.Action, id string) (Principal, error) {
	p := transport.Principal(ctx)
	if r.deps.Services == nil {
		return p, errNoServices
	}
	if _, err := r.authorizeOwn(ctx, auth.ServiceRead); err != nil {
		if _, err2 := r.authorizeOwn(ctx, action); err2 != nil {
			return p, err2
		}
	}
	if id == "" {
		return p, apierr.InvalidInput("serviceId", "is required")
	}
	sv, _, err := load[service.Service](ctx, r, domain.ServiceStream, id)
	if err != nil {
		return p, err
	}
	if !sv.Exists() || !sees(p, sv.TenantID) {
		return p, apierr.NotFound("service", id)
	}
	return r.authorize(ctx, action, auth.Resource{TenantID: sv.TenantID})
}

// variablesInput turns the API's variables object into the command's.
func variablesInput(v model.JSON) (map[string]json.RawMessage, error) {
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, apierr.InvalidInput("variables", "must be a JSON object of variable names to values")
	}
	return out, nil
}

var errNoProjections = apierr.New(apierr.CodeInternal, "this server runs no projections")

// projectionStatus reports each projection's live build, with the build a
// rebuild is filling when one runs.
func (r *Resolver) projectionStatus(ctx context.Context) ([]model.Projection, error) {
	st, err := r.deps.ProjectionAdmin.Status(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]int{}
	out := []model.Projection{}
	for _, b := range st {
		if b.State != projections.StateLive {
			continue
		}
		state := model.ProjectionStateStopped
		switch {
		case b.Retrying:
			state = model.ProjectionStateFailing
		case b.Running:
			state = model.ProjectionStateRunning
		}
		byName[b.Name] = len(out)
		out = append(out, model.Projection{Name: b.Name, Version: b.Version, State: state, Position: model.Cursor(b.Cursor),
			EventsBehind: b.EventsBehind, SecondsBehind: b.SecondsBehind, LastError: optional(b.LastError), ParkedEvents: int(b.Parked)})
	}
	for _, b := range st {
		i, ok := byName[b.Name]
		if b.State != projections.StateBuilding || !ok {
			continue
		}
		out[i].State = model.ProjectionStateRebuilding
		out[i].Rebuild = &model.ProjectionRebuild{Version: b.Version, Position: model.Cursor(b.Cursor), EventsBehind: b.EventsBehind, StartedAt: b.StartedAt}
	}
	return out, nil
}
