package readmodel

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"cairn/domain/resource"
	"cairn/domain/service"
)

// Service is a service as the services projection keeps it.
type Service struct {
	ID              string
	TenantID        string
	Name            string
	TemplateName    string
	TemplateVersion string
	Status          service.Status
	FailedIn        service.Phase
	Cause           string
	// Variables as deployed; sensitive values are sealed, as in the events.
	Variables   json.RawMessage
	Outputs     json.RawMessage
	ResourceIDs []string
	Remaining   []string
	RequestedAt time.Time
	// RegisteredAt: resources first created; FirstRunningAt: first started;
	// RemovedAt: nothing left. Zero until then.
	RegisteredAt   time.Time
	FirstRunningAt time.Time
	RemovedAt      time.Time
	UpdatedAt      time.Time
	// Revision numbers the declared template version and variables.
	Revision int
	// Blueprint names the blueprint that declared the service, if one did.
	Blueprint string
	Version   int64
	Position  int64
}

// ServiceFilter narrows a service list. Empty fields match every service.
type ServiceFilter struct {
	// TenantID scopes the list to one tenant's services.
	TenantID     string
	Status       []service.Status
	TemplateName string
	// Name: a case-insensitive substring.
	Name string
	// Blueprint: only the services this blueprint declared.
	Blueprint string
}

const serviceColumns = `id, tenant_id, name, template_name, template_version, state, coalesce(failed_in, ''),
	coalesce(cause, ''), coalesce(variables::text, ''), coalesce(outputs::text, ''), resource_ids::text,
	coalesce(remaining::text, ''), requested_at, registered_at, first_running_at, removed_at, updated_at,
	revision, coalesce(blueprint, ''), stream_version, position`

func scanService(rows pgx.Row) (Service, error) {
	var s Service
	var state, failedIn, variables, outputs, ids, remaining string
	var registered, running, removed, updated pgtype.Timestamptz
	err := rows.Scan(&s.ID, &s.TenantID, &s.Name, &s.TemplateName, &s.TemplateVersion, &state, &failedIn, &s.Cause,
		&variables, &outputs, &ids, &remaining, &s.RequestedAt, &registered, &running, &removed, &updated,
		&s.Revision, &s.Blueprint, &s.Version, &s.Position)
	if err != nil {
		return s, err
	}
	if err := jsonInto([]byte(ids), &s.ResourceIDs); err != nil {
		return s, err
	}
	if err := jsonInto([]byte(remaining), &s.Remaining); err != nil {
		return s, err
	}
	s.Variables, s.Outputs = raw(variables), raw(outputs)
	s.Status, s.FailedIn = service.Status(state), service.Phase(failedIn)
	s.RequestedAt, s.RegisteredAt, s.FirstRunningAt = s.RequestedAt.UTC(), ts(registered), ts(running)
	s.RemovedAt, s.UpdatedAt = ts(removed), ts(updated)
	return s, nil
}

func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// Services are listed newest first.
var serviceOrder = order{name: "services", cols: []string{"requested_at", "id"}, times: []bool{true, false}, desc: true}

// ListServices lists services, newest first.
func (r *Reader) ListServices(ctx context.Context, f ServiceFilter, p Page) (Connection[Service], error) {
	q := &query{}
	if f.TenantID != "" {
		q.add("tenant_id = " + q.arg(f.TenantID))
	}
	if len(f.Status) > 0 {
		q.add("state = ANY(" + q.arg(strs(f.Status)) + ")")
	}
	if f.TemplateName != "" {
		q.add("template_name = " + q.arg(f.TemplateName))
	}
	if f.Blueprint != "" {
		q.add("blueprint = " + q.arg(f.Blueprint))
	}
	if f.Name != "" {
		q.add("name ILIKE " + q.arg(like(f.Name)))
	}
	return list(ctx, r.db, serviceColumns+" FROM "+r.table("services"), q, serviceOrder, p, scanService,
		func(s *Service) []any { return []any{s.RequestedAt, s.ID} })
}

// Service returns one service, or a *domain.NotFoundError.
func (r *Reader) Service(ctx context.Context, id string) (Service, error) {
	return one(ctx, r.db, serviceColumns+" FROM "+r.table("services"), "service", id, scanService,
		func(s *Service) string { return s.ID })
}

// ServicesByID returns services in the order of ids, nil where none exists.
func (r *Reader) ServicesByID(ctx context.Context, ids []string) ([]*Service, error) {
	return byIDs(ctx, r.db, serviceColumns+" FROM "+r.table("services"), "services", ids, scanService,
		func(s *Service) string { return s.ID })
}

// Resource is a resource of a service.
type Resource struct {
	ID         string
	ServiceID  string
	Plugin     string
	Type       string
	Status     resource.Status
	FailedIn   resource.Phase
	Error      string
	Properties json.RawMessage
	DependsOn  []string
	Outputs    json.RawMessage
	// NodeID is the node the scheduler placed it on; Drift what was last
	// observed to differ from what its service wants (empty: nothing).
	NodeID      string
	Drift       resource.DriftKind
	DriftDetail string
	DriftSince  time.Time
	PlannedAt   time.Time
	UpdatedAt   time.Time
	Revision    int // the service revision it was made or updated for
	// Name is the instance's name in the descriptor ("" for old ones).
	Name string
	// Health is the last recorded result of each failing (or recovered)
	// health check; a check with none passes.
	Health   map[string]resource.CheckResult
	Version  int64
	Position int64
}

// ResourceFilter narrows a resource list. Empty fields match every resource.
type ResourceFilter struct {
	// TenantID scopes the list to the resources of one tenant's services.
	TenantID  string
	ServiceID string
	Status    []resource.Status
	Plugin    string
}

const resourceColumns = `id, service_id, plugin, type, state, coalesce(failed_in, ''), coalesce(error, ''),
	coalesce(properties::text, ''), depends_on::text, coalesce(outputs::text, ''), coalesce(node_id, ''),
	coalesce(drift, ''), coalesce(drift_detail, ''), drift_since, planned_at, updated_at, revision, coalesce(health::text, ''), coalesce(name, ''), stream_version, position`

func scanResource(rows pgx.Row) (Resource, error) {
	var r Resource
	var state, failedIn, props, deps, outputs, drift, health string
	var planned, updated, driftSince pgtype.Timestamptz
	err := rows.Scan(&r.ID, &r.ServiceID, &r.Plugin, &r.Type, &state, &failedIn, &r.Error, &props, &deps, &outputs,
		&r.NodeID, &drift, &r.DriftDetail, &driftSince, &planned, &updated, &r.Revision, &health, &r.Name, &r.Version, &r.Position)
	if err != nil {
		return r, err
	}
	if err := jsonInto([]byte(deps), &r.DependsOn); err != nil {
		return r, err
	}
	if health != "" {
		if err := jsonInto([]byte(health), &r.Health); err != nil {
			return r, err
		}
	}
	r.Properties, r.Outputs = raw(props), raw(outputs)
	r.Status, r.FailedIn = resource.Status(state), resource.Phase(failedIn)
	r.PlannedAt, r.UpdatedAt = ts(planned), ts(updated)
	r.Drift, r.DriftSince = resource.DriftKind(drift), ts(driftSince)
	return r, nil
}

var resourceOrder = order{name: "resources", cols: []string{"id"}, times: []bool{false}}

// ListResources lists resources by id.
func (r *Reader) ListResources(ctx context.Context, f ResourceFilter, p Page) (Connection[Resource], error) {
	q := &query{}
	if f.TenantID != "" {
		// A resource belongs to its service's tenant; both tables are kept by
		// one projection, so they always agree.
		q.add("service_id IN (SELECT id FROM " + r.table("services") + " WHERE tenant_id = " + q.arg(f.TenantID) + ")")
	}
	if f.ServiceID != "" {
		q.add("service_id = " + q.arg(f.ServiceID))
	}
	if len(f.Status) > 0 {
		q.add("state = ANY(" + q.arg(strs(f.Status)) + ")")
	}
	if f.Plugin != "" {
		q.add("plugin = " + q.arg(f.Plugin))
	}
	return list(ctx, r.db, resourceColumns+" FROM "+r.table("resources"), q, resourceOrder, p, scanResource,
		func(x *Resource) []any { return []any{x.ID} })
}

// Resource returns one resource, or a *domain.NotFoundError.
func (r *Reader) Resource(ctx context.Context, id string) (Resource, error) {
	return one(ctx, r.db, resourceColumns+" FROM "+r.table("resources"), "resource", id, scanResource,
		func(x *Resource) string { return x.ID })
}

// ResourcesByID returns resources in the order of ids, nil where none exists.
func (r *Reader) ResourcesByID(ctx context.Context, ids []string) ([]*Resource, error) {
	return byIDs(ctx, r.db, resourceColumns+" FROM "+r.table("resources"), "resources", ids, scanResource,
		func(x *Resource) string { return x.ID })
}

// ResourcesOfServices returns each service's resources (by id), in the order
// of serviceIDs: one query for a page of services.
func (r *Reader) ResourcesOfServices(ctx context.Context, serviceIDs []string) ([][]Resource, error) {
	out := make([][]Resource, len(serviceIDs))
	if len(serviceIDs) == 0 {
		return out, nil
	}
	rows, err := r.db.Query(ctx, "SELECT "+resourceColumns+" FROM "+r.table("resources")+
		" WHERE service_id = ANY($1) ORDER BY id", serviceIDs)
	if err != nil {
		return nil, err
	}
	all, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Resource, error) { return scanResource(row) })
	if err != nil {
		return nil, err
	}
	at := map[string][]int{}
	for i, id := range serviceIDs {
		at[id] = append(at[id], i)
	}
	for _, res := range all {
		for _, i := range at[res.ServiceID] {
			out[i] = append(out[i], res)
		}
	}
	return out, nil
}
