package graph

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"cairn/auth"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/domain/ocl"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/domain/tenant"
	"cairn/graph/apierr"
	"cairn/graph/model"
	"cairn/internal/ptr"
	"cairn/projections/readmodel"
)

// Queries read the read models the projections keep (projections/readmodel):
// lists are keyset pages, and what a list's rows need from other read models
// (a service's resources) is fetched for the whole page in one query.

// page turns a connection's Relay arguments into a read-model page: first
// and after page forwards, last and before backwards; first or last 0 asks
// only whether there are rows.
func page(first *int, after *string, last *int, before *string) (readmodel.Page, error) {
	back, err := backwards(first, after != nil, last, before != nil)
	if err != nil {
		return readmodel.Page{}, err
	}
	if back {
		n, err := pageSizeOf("last", last, readmodel.DefaultFirst)
		return readmodel.Page{Last: n, Before: ptr.Value(before), Empty: n == 0}, err
	}
	n, err := pageSize(first, readmodel.DefaultFirst)
	return readmodel.Page{First: n, After: ptr.Value(after), Empty: n == 0}, err
}

// backwards reports whether a connection's Relay arguments page from the
// end (last, before), refusing a mix of both directions.
func backwards(first *int, after bool, last *int, before bool) (bool, error) {
	if first != nil && (last != nil || before) || last != nil && after {
		return false, apierr.InvalidInput("last", "page forwards (first, after) or backwards (last, before), not both")
	}
	return last != nil || before, nil
}

// listPage reads a list query's page arguments, then waits until the read
// models have reached consistentWith: what every list query does after its
// access check.
func (r *Resolver) listPage(ctx context.Context, first *int, after *string, last *int, before *string, consistentWith *model.Cursor) (readmodel.Page, error) {
	pg, err := page(first, after, last, before)
	if err != nil {
		return readmodel.Page{}, err
	}
	return pg, r.waitConsistent(ctx, consistentWith)
}

// pageInfo converts a read-model page's information.
func pageInfo(p readmodel.PageInfo) *model.PageInfo {
	return &model.PageInfo{HasNextPage: p.HasNextPage, HasPreviousPage: p.HasPreviousPage,
		StartCursor: optional(p.StartCursor), EndCursor: optional(p.EndCursor)}
}

// single is a one-row connection (an agent's own node, a tenant's own
// tenant) that has no further page.
func single[E any](edge E, ok bool, cursor string) ([]E, *model.PageInfo) {
	if !ok {
		return []E{}, &model.PageInfo{}
	}
	return []E{edge}, &model.PageInfo{StartCursor: &cursor, EndCursor: &cursor}
}

// visibleOne reads one entity for a query: not found is null, not an error.
func visibleOne[T any](v T, err error) (*T, error) {
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func lowerAll[T ~string, U ~string](in []U) []T {
	out := make([]T, 0, len(in))
	for _, v := range in {
		out = append(out, T(strings.ToLower(string(v))))
	}
	return out
}

func nodeRowModel(n readmodel.Node) *model.ServerNode {
	out := &model.ServerNode{
		ID: n.ID, Hostname: n.Hostname, Status: model.NodeStatus(upper(n.Status)), Cordoned: n.Cordoned,
		DrainReason: optional(n.DrainReason), Labels: labels(n.Labels), LocationID: optional(n.LocationID),
		FactsAt: timePtr(n.FactsAt), EnrolledAt: n.EnrolledAt, ConnectedAt: timePtr(n.ConnectedAt),
		DisconnectedAt: timePtr(n.DisconnectedAt), UpdatedAt: n.UpdatedAt, Version: int(n.Version),
		AllowedActions: slices.Clone(node.Allowed[n.Status]),
	}
	if n.Facts != nil {
		out.Facts = factsModel(*n.Facts)
	}
	if out.AllowedActions == nil {
		out.AllowedActions = []string{}
	}
	return out
}

func nodeFilter(f *model.NodeFilter) readmodel.NodeFilter {
	if f == nil {
		return readmodel.NodeFilter{}
	}
	return readmodel.NodeFilter{Status: lowerAll[node.Status](f.Status), Labels: labelMap(f.Labels),
		LocationID: ptr.Value(f.LocationID), Hostname: ptr.Value(f.Hostname)}
}

// nodeMatches applies a filter to one node (an agent's own).
func nodeMatches(n readmodel.Node, f readmodel.NodeFilter) bool {
	if len(f.Status) > 0 && !slices.Contains(f.Status, n.Status) {
		return false
	}
	for k, v := range f.Labels {
		if n.Labels[k] != v {
			return false
		}
	}
	if f.LocationID != "" && n.LocationID != f.LocationID {
		return false
	}
	return f.Hostname == "" || strings.Contains(strings.ToLower(n.Hostname), strings.ToLower(f.Hostname))
}

func jobRowModel(j readmodel.Job) *model.Job {
	d := job.Job{
		ID: j.ID, ParentID: j.ParentID, Spec: j.Spec, Target: j.Target, Timeout: j.Timeout, Grace: j.Grace,
		Retries: j.Retry, Queue: j.Queue, Submitter: j.Submitter, Status: j.Status, Attempt: j.Attempt,
		NodeID: j.NodeID, LeaseUntil: j.LeaseUntil, Acknowledged: j.Acknowledged, NotBefore: j.NotBefore,
		Result: j.Result, CancelReason: j.CancelReason, LostReason: j.LostReason, Children: j.Children,
		SubmittedAt: j.SubmittedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, UpdatedAt: j.UpdatedAt,
	}
	if j.Counts != nil {
		d.Counts = *j.Counts
	}
	return jobModel(loadedJob{Job: d, version: j.Version, tenant: j.TenantID})
}

func serviceRowModel(s readmodel.Service, rs []readmodel.Resource) *model.Service {
	out := &model.Service{
		ID: s.ID, TenantID: s.TenantID, Name: s.Name, TemplateName: s.TemplateName, TemplateVersion: s.TemplateVersion,
		Variables: model.JSON(maskSealed(s.Variables)), Status: model.ServiceStatus(upper(s.Status)),
		Cause: optional(s.Cause), Remaining: nonNil(s.Remaining), Outputs: model.JSON(s.Outputs),
		Resources: make([]model.Resource, 0, len(rs)), RequestedAt: s.RequestedAt, UpdatedAt: s.UpdatedAt,
		Version: int(s.Version), Revision: max(s.Revision, 1), Blueprint: optional(s.Blueprint), AllowedActions: nonNil(service.AllowedCommands(s.Status, s.FailedIn)),
	}
	if s.FailedIn != "" {
		p := model.ServicePhase(upper(s.FailedIn))
		out.FailedIn = &p
	}
	for _, r := range rs {
		out.Resources = append(out.Resources, *resourceRowModel(r))
	}
	return out
}

func resourceRowModel(r readmodel.Resource) *model.Resource {
	out := &model.Resource{
		ID: r.ID, ServiceID: r.ServiceID, Name: optional(r.Name), Plugin: r.Plugin, Type: r.Type, Properties: model.JSON(r.Properties),
		DependsOn: nonNil(r.DependsOn), Outputs: model.JSON(r.Outputs), Status: model.ResourceStatus(upper(r.Status)),
		Error: optional(r.Error), PlannedAt: r.PlannedAt, UpdatedAt: r.UpdatedAt, Version: int(r.Version), Revision: max(r.Revision, 1),
	}
	if r.FailedIn != "" {
		p := model.ResourcePhase(upper(r.FailedIn))
		out.FailedIn = &p
	}
	out.NodeID = optional(r.NodeID)
	out.Health = []model.HealthCheckResult{}
	for _, name := range slices.Sorted(maps.Keys(r.Health)) {
		h := r.Health[name]
		out.Health = append(out.Health, model.HealthCheckResult{Name: name, Healthy: h.Healthy, Detail: optional(h.Detail), Since: h.Since})
	}
	if r.Drift != "" {
		out.Drift = &model.ResourceDrift{Kind: model.DriftKind(upper(r.Drift)), Detail: r.DriftDetail, Since: r.DriftSince}
	}
	return out
}

// SealedValue stands for the value of a sensitive variable: it is set, and
// kept sealed; the API never returns it.
const SealedValue = `"(sealed)"`

// maskSealed replaces the sealed values of sensitive variables by
// SealedValue (an optional one left unset stays null).
func maskSealed(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var vars map[string]json.RawMessage
	if json.Unmarshal(raw, &vars) != nil {
		return raw
	}
	for k, v := range vars {
		var probe struct {
			Sealed string `json:"sealed"`
		}
		if json.Unmarshal(v, &probe) == nil && probe.Sealed != "" {
			vars[k] = json.RawMessage(SealedValue)
		}
	}
	out, err := json.Marshal(vars)
	if err != nil {
		return raw
	}
	return out
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

func templateRowModel(t readmodel.Template) *model.TemplateVersion {
	out := &model.TemplateVersion{
		ID: t.ID, Name: t.Name, Version: t.Version, Vendor: t.Vendor, Category: optional(t.Category),
		Description: optional(t.Description), Status: model.TemplateStatus(upper(t.Status)),
		Descriptor: model.JSON(t.Descriptor), Digest: t.Digest, Variables: []model.TemplateVariable{},
		Flavors: []model.TemplateFlavor{}, RegisteredAt: t.RegisteredAt, PublishedAt: timePtr(t.PublishedAt),
		DeprecatedAt: timePtr(t.DeprecatedAt), DeprecationReason: optional(t.DeprecationReason),
		StreamVersion: int(t.StreamVersion), AllowedActions: nonNil(template.AllowedCommands(t.Status)),
	}
	var d ocl.Descriptor
	if json.Unmarshal(t.Descriptor, &d) != nil {
		return out
	}
	for _, name := range slices.Sorted(maps.Keys(d.Variables)) {
		v := d.Variables[name]
		mv := model.TemplateVariable{Name: name, Type: model.VariableType(upper(v.Type)), Description: optional(v.Description),
			Required: v.Required, Sensitive: v.Sensitive}
		if len(v.Default) > 0 && !v.Sensitive {
			mv.Default = model.JSON(v.Default)
		}
		if x := v.Validation; x != nil {
			mv.Pattern, mv.MinLength, mv.MaxLength, mv.Minimum, mv.Maximum = optional(x.Pattern), x.MinLength, x.MaxLength, x.Minimum, x.Maximum
			for _, e := range x.Enum {
				mv.Enum = append(mv.Enum, model.JSON(e))
			}
		}
		out.Variables = append(out.Variables, mv)
	}
	for _, name := range slices.Sorted(maps.Keys(d.Flavors)) {
		f := d.Flavors[name]
		vars, err := json.Marshal(f.Variables)
		if err != nil || f.Variables == nil {
			vars = []byte("{}")
		}
		out.Flavors = append(out.Flavors, model.TemplateFlavor{Name: name, Description: optional(f.Description), Variables: model.JSON(vars)})
	}
	return out
}

func tenantRowModel(t readmodel.Tenant) *model.Tenant {
	return &model.Tenant{
		ID: t.ID, Name: t.Name, Status: model.TenantStatus(upper(t.Status)), SuspendReason: optional(t.SuspendReason),
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Version: int(t.Version),
		AllowedActions: nonNil(tenant.TenantAllowedCommands(t.Status)),
	}
}

func userRowModel(u readmodel.User) *model.User {
	return &model.User{
		ID: u.ID, Name: u.Name, Role: toRole(u.Role), TenantID: optional(u.TenantID), Status: model.UserStatus(upper(u.Status)),
		DisableReason: optional(u.DisableReason), CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, Version: int(u.Version),
		AllowedActions: nonNil(tenant.UserAllowedCommands(u.Status)),
	}
}

func tokenRowModel(t readmodel.APIToken, now time.Time) *model.APIToken {
	return tokenModel(tenant.APIToken{ID: t.ID, UserID: t.UserID, Role: t.Role, TenantID: t.TenantID, Status: t.Status,
		ExpiresAt: t.ExpiresAt, IssuedAt: t.IssuedAt, RevokedAt: t.RevokedAt, RevokeReason: t.RevokeReason}, now)
}

func locationRowModel(l readmodel.Location) *model.Location {
	return &model.Location{ID: l.ID, Name: l.Name, Description: optional(l.Description), Status: model.LocationStatus(upper(l.Status)),
		CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt, Version: int(l.Version)}
}

// servicesWithResources converts a page of services, reading the resources
// of all of them in one query.
func (r *Resolver) servicesWithResources(ctx context.Context, svcs []readmodel.Service) ([]*model.Service, error) {
	ids := make([]string, len(svcs))
	for i, sv := range svcs {
		ids[i] = sv.ID
	}
	var rs [][]readmodel.Resource
	if len(ids) > 0 {
		var err error
		if rs, err = r.readModels(ctx).ResourcesOfServices(ctx, ids); err != nil {
			return nil, err
		}
	}
	out := make([]*model.Service, len(svcs))
	for i, sv := range svcs {
		var mine []readmodel.Resource
		if i < len(rs) {
			mine = rs[i]
		}
		out[i] = serviceRowModel(sv, mine)
	}
	return out, nil
}

// readService reads one service the caller may see: to a tenant role
// another tenant's service does not exist.
func (r *Resolver) readService(ctx context.Context, p Principal, id string) (*model.Service, error) {
	sv, err := visibleOne(r.readModels(ctx).Service(ctx, id))
	if err != nil || sv == nil {
		return nil, err
	}
	if auth.Can(p, auth.ServiceRead, auth.Resource{TenantID: sv.TenantID}) != nil {
		return nil, nil
	}
	out, err := r.servicesWithResources(ctx, []readmodel.Service{*sv})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// scopedTenant is the tenant a list is narrowed to: a tenant role's own,
// whatever the filter asks.
func scopedTenant(p Principal, asked *string) string {
	if tenantScoped(p) {
		return p.TenantID
	}
	return ptr.Value(asked)
}

func isNotFound(err error) bool { return err != nil && errors.Is(err, domain.ErrNotFound) }
