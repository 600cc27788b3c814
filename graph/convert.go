package graph

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"cairn/auth"
	"cairn/commands"
	"cairn/domain"
	"cairn/domain/jointoken"
	"cairn/domain/node"
	"cairn/domain/tenant"
	"cairn/graph/apierr"
	"cairn/graph/model"
	"cairn/graph/transport"
)

// Mutations return the entity they changed as its own stream shows it right
// after the command: one stream read, consistent with the returned cursor
// whatever the read models' lag, made only when the entity is selected.

func load[S any, PS interface {
	*S
	commands.Aggregate
}](ctx context.Context, r *Resolver, streamType, id string) (S, int64, error) {
	return commands.Load[S, PS](ctx, r.deps.Store, streamType, id)
}

func upper[T ~string](v T) string { return strings.ToUpper(string(v)) }

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func labels(m map[string]string) []model.Label {
	out := make([]model.Label, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, model.Label{Key: k, Value: m[k]})
	}
	return out
}

func labelMap(in []model.LabelInput) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for _, l := range in {
		out[l.Key] = l.Value
	}
	return out
}

func toRole[T ~string](r T) model.Role { return model.Role(strings.ToUpper(string(r))) }

func fromRole(r model.Role) tenant.Role { return tenant.Role(strings.ToLower(string(r))) }

func tenantModel(t tenant.Tenant, version int64) *model.Tenant {
	return &model.Tenant{
		ID: t.ID, Name: t.Name, Status: model.TenantStatus(upper(t.Status)),
		SuspendReason: optional(t.SuspendReason), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Version: int(version), AllowedActions: t.AllowedCommands(),
	}
}

func userModel(u tenant.User, version int64) *model.User {
	return &model.User{
		ID: u.ID, Name: u.Name, Role: toRole(u.Role), TenantID: optional(u.TenantID),
		Status: model.UserStatus(upper(u.Status)), DisableReason: optional(u.DisableReason),
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, Version: int(version), AllowedActions: u.AllowedCommands(),
	}
}

func tokenModel(t tenant.APIToken, now time.Time) *model.APIToken {
	status := model.TokenStatus(upper(t.Status))
	if t.Status == tenant.TokenStatusActive && !now.Before(t.ExpiresAt) {
		status = model.TokenStatusExpired
	}
	return &model.APIToken{
		ID: t.ID, UserID: t.UserID, Role: toRole(t.Role), TenantID: optional(t.TenantID),
		Status: status, ExpiresAt: t.ExpiresAt, IssuedAt: t.IssuedAt,
		RevokedAt: timePtr(t.RevokedAt), RevokeReason: optional(t.RevokeReason),
	}
}

func locationModel(l tenant.Location, version int64) *model.Location {
	return &model.Location{
		ID: l.ID, Name: l.Name, Description: optional(l.Description), Status: model.LocationStatus(upper(l.Status)),
		CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt, Version: int(version),
	}
}

func joinTokenModel(t jointoken.JoinToken) *model.JoinToken {
	return &model.JoinToken{
		ID: t.ID, LocationID: optional(t.LocationID), Labels: labels(t.Labels), ExpiresAt: t.ExpiresAt,
		CreatedAt: t.IssuedAt, UsedAt: timePtr(t.RedeemedAt), UsedByNodeID: optional(t.NodeID),
	}
}

func nodeModel(n node.Node, version int64) *model.ServerNode {
	out := &model.ServerNode{
		ID: n.ID, Hostname: n.Hostname, Status: model.NodeStatus(upper(n.Status)), Cordoned: n.Cordoned,
		DrainReason: optional(n.DrainReason), Labels: labels(n.Labels), LocationID: optional(n.LocationID),
		FactsAt: timePtr(n.FactsAt), EnrolledAt: n.EnrolledAt, ConnectedAt: timePtr(n.ConnectedAt),
		DisconnectedAt: timePtr(n.DisconnectedAt), UpdatedAt: n.UpdatedAt, Version: int(version),
		AllowedActions: slices.Clone(node.Allowed[n.Status]),
	}
	if !n.FactsAt.IsZero() {
		out.Facts = factsModel(n.Facts)
	}
	if out.AllowedActions == nil {
		out.AllowedActions = []string{}
	}
	return out
}

func factsModel(f node.Facts) *model.NodeFacts {
	out := &model.NodeFacts{
		CPU:         &model.CPUFacts{Model: f.CPU.Model, Cores: f.CPU.Cores, Threads: f.CPU.Threads},
		MemoryBytes: int64(f.MemoryBytes),
		Os:          &model.OSFacts{Name: f.OS.Name, Version: f.OS.Version, Kernel: f.OS.Kernel, Arch: f.OS.Arch},
		Disks:       []model.DiskFacts{},
		Network:     []model.NetworkInterface{},
	}
	for _, d := range f.Disks {
		out.Disks = append(out.Disks, model.DiskFacts{Device: d.Device, Mountpoint: d.Mountpoint, Filesystem: d.Filesystem, SizeBytes: int64(d.SizeBytes)})
	}
	for _, n := range f.Network {
		out.Network = append(out.Network, model.NetworkInterface{Name: n.Name, Mac: n.MAC, Addresses: slices.Clone(n.Addresses), Mtu: n.MTU})
	}
	return out
}

// selects reports whether the request selects field of the value the
// current resolver returns. A mutation's payload loads the entity after
// the command only when it is asked for: agents report thousands of job
// results a second and a flood of creations asks for cursors, and neither
// reads the entity back, so reading its stream again would be wasted.
func selects(ctx context.Context, field string) bool {
	return slices.Contains(graphql.CollectAllFields(ctx), field)
}

func (r *Resolver) tenantPayload(ctx context.Context, out commands.Outcome) (*model.TenantPayload, error) {
	p := &model.TenantPayload{Cursor: model.Cursor(out.Cursor), Duplicate: out.Duplicate}
	if !selects(ctx, "tenant") {
		return p, nil
	}
	t, v, err := load[tenant.Tenant](ctx, r, domain.TenantStream, out.ID)
	if err != nil {
		return nil, err
	}
	p.Tenant = tenantModel(t, v)
	return p, nil
}

func (r *Resolver) userPayload(ctx context.Context, out commands.Outcome) (*model.UserPayload, error) {
	p := &model.UserPayload{Cursor: model.Cursor(out.Cursor), Duplicate: out.Duplicate}
	if !selects(ctx, "user") {
		return p, nil
	}
	u, v, err := load[tenant.User](ctx, r, domain.UserStream, out.ID)
	if err != nil {
		return nil, err
	}
	p.User = userModel(u, v)
	return p, nil
}

func (r *Resolver) locationPayload(ctx context.Context, out commands.Outcome) (*model.LocationPayload, error) {
	p := &model.LocationPayload{Cursor: model.Cursor(out.Cursor), Duplicate: out.Duplicate}
	if !selects(ctx, "location") {
		return p, nil
	}
	l, v, err := load[tenant.Location](ctx, r, domain.LocationStream, out.ID)
	if err != nil {
		return nil, err
	}
	p.Location = locationModel(l, v)
	return p, nil
}

func (r *Resolver) nodePayload(ctx context.Context, out commands.Outcome) (*model.NodePayload, error) {
	p := &model.NodePayload{Cursor: model.Cursor(out.Cursor), Duplicate: out.Duplicate}
	if !selects(ctx, "node") {
		return p, nil
	}
	n, v, err := load[node.Node](ctx, r, domain.NodeStream, out.ID)
	if err != nil {
		return nil, err
	}
	p.Node = nodeModel(n, v)
	return p, nil
}

// visibleUser loads a user the caller may know of, for action: to a tenant
// role another tenant's user does not exist, and a caller who may neither
// read users nor take the action is refused before anything is looked up.
func (r *Resolver) visibleUser(ctx context.Context, userID string, action auth.Action) (tenant.User, error) {
	if _, err := r.authorizeRole(ctx, auth.UserRead, action); err != nil {
		return tenant.User{}, err
	}
	if userID == "" {
		return tenant.User{}, apierr.InvalidInput("userId", "is required")
	}
	u, _, err := load[tenant.User](ctx, r, domain.UserStream, userID)
	if err != nil {
		return u, err
	}
	if !u.Exists() || !sees(transport.Principal(ctx), u.TenantID) {
		return u, apierr.NotFound("user", userID)
	}
	return u, nil
}

// manageUser authorizes disabling or enabling a user.
func (r *Resolver) manageUser(ctx context.Context, userID string) (Principal, error) {
	u, err := r.visibleUser(ctx, userID, auth.UserUpdate)
	if err != nil {
		return transport.Principal(ctx), err
	}
	return r.authorize(ctx, auth.UserUpdate, auth.Resource{TenantID: u.TenantID, Grants: u.Role})
}
