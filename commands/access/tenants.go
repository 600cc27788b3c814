package access

import (
	"context"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/tenant"
)

// CreateTenant creates a tenant; TenantID is optional.
type CreateTenant struct {
	TenantID string `json:"tenantId,omitempty"`
	Name     string `json:"name"`
}

// RenameTenant changes a tenant's display name.
type RenameTenant struct {
	TenantID string `json:"tenantId"`
	Name     string `json:"name"`
}

// SuspendTenant stops a tenant's users from acting; its services keep running.
type SuspendTenant struct {
	TenantID string `json:"tenantId"`
	Reason   string `json:"reason,omitempty"`
}

// ResumeTenant lifts a suspension.
type ResumeTenant struct {
	TenantID string `json:"tenantId"`
}

// CreateTenant creates a tenant.
func (h *Handlers) CreateTenant(ctx context.Context, meta commands.Meta, in CreateTenant) (commands.Outcome, error) {
	id, err := commands.EntityID(ctx, h.store, &meta, domain.TenantStream, in.TenantID, h.newID)
	if err != nil {
		return commands.Outcome{}, err
	}
	return execute(ctx, h, domain.TenantStream, "tenantId", id, inTenant(meta, id), in, func(t tenant.Tenant, at time.Time) ([]domain.Event, error) {
		return t.Create(tenant.CreateTenant{TenantID: id, Name: in.Name, At: at})
	})
}

// RenameTenant renames a tenant; the same name changes nothing.
func (h *Handlers) RenameTenant(ctx context.Context, meta commands.Meta, in RenameTenant) (commands.Outcome, error) {
	return execute(ctx, h, domain.TenantStream, "tenantId", in.TenantID, inTenant(meta, in.TenantID), in, func(t tenant.Tenant, at time.Time) ([]domain.Event, error) {
		return t.Rename(tenant.RenameTenant{TenantID: in.TenantID, Name: in.Name, At: at})
	})
}

// SuspendTenant suspends an active tenant.
func (h *Handlers) SuspendTenant(ctx context.Context, meta commands.Meta, in SuspendTenant) (commands.Outcome, error) {
	return execute(ctx, h, domain.TenantStream, "tenantId", in.TenantID, inTenant(meta, in.TenantID), in, func(t tenant.Tenant, at time.Time) ([]domain.Event, error) {
		return t.Suspend(tenant.SuspendTenant{TenantID: in.TenantID, Reason: in.Reason, At: at})
	})
}

// ResumeTenant resumes a suspended tenant.
func (h *Handlers) ResumeTenant(ctx context.Context, meta commands.Meta, in ResumeTenant) (commands.Outcome, error) {
	return execute(ctx, h, domain.TenantStream, "tenantId", in.TenantID, inTenant(meta, in.TenantID), in, func(t tenant.Tenant, at time.Time) ([]domain.Event, error) {
		return t.Resume(tenant.ResumeTenant{TenantID: in.TenantID, At: at})
	})
}
