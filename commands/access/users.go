package access

import (
	"context"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/tenant"
)

// CreateUser creates a user with one role; tenant roles name an existing
// tenant, other roles none. UserID is optional.
type CreateUser struct {
	UserID   string      `json:"userId,omitempty"`
	Name     string      `json:"name"`
	Role     tenant.Role `json:"role"`
	TenantID string      `json:"tenantId,omitempty"`
}

// DisableUser stops a user, and every token of the user, from acting.
type DisableUser struct {
	UserID string `json:"userId"`
	Reason string `json:"reason,omitempty"`
}

// EnableUser lets a disabled user act again.
type EnableUser struct {
	UserID string `json:"userId"`
}

// CreateUser creates a user.
func (h *Handlers) CreateUser(ctx context.Context, meta commands.Meta, in CreateUser) (commands.Outcome, error) {
	if in.TenantID != "" && in.Role.TenantScoped() {
		// Other combinations are the domain's to refuse, with a better reason.
		if _, err := commands.RequireTenant(ctx, h.store, in.TenantID); err != nil {
			return commands.Outcome{}, err
		}
	}
	id, err := commands.EntityID(ctx, h.store, &meta, domain.UserStream, in.UserID, h.newID)
	if err != nil {
		return commands.Outcome{}, err
	}
	return execute(ctx, h, domain.UserStream, "userId", id, inTenant(meta, in.TenantID), in, func(u tenant.User, at time.Time) ([]domain.Event, error) {
		return u.Create(tenant.CreateUser{UserID: id, Name: in.Name, Role: in.Role, TenantID: in.TenantID, At: at})
	})
}

// DisableUser disables an active user.
func (h *Handlers) DisableUser(ctx context.Context, meta commands.Meta, in DisableUser) (commands.Outcome, error) {
	return h.userCommand(ctx, meta, in.UserID, in, func(u tenant.User, at time.Time) ([]domain.Event, error) {
		return u.Disable(tenant.DisableUser{UserID: in.UserID, Reason: in.Reason, At: at})
	})
}

// EnableUser enables a disabled user.
func (h *Handlers) EnableUser(ctx context.Context, meta commands.Meta, in EnableUser) (commands.Outcome, error) {
	return h.userCommand(ctx, meta, in.UserID, in, func(u tenant.User, at time.Time) ([]domain.Event, error) {
		return u.Enable(tenant.EnableUser{UserID: in.UserID, At: at})
	})
}

// userCommand tags the events with the user's tenant, which it reads first.
func (h *Handlers) userCommand(ctx context.Context, meta commands.Meta, id string, input any,
	decide func(tenant.User, time.Time) ([]domain.Event, error)) (commands.Outcome, error) {
	u, _, err := commands.Load[tenant.User](ctx, h.store, domain.UserStream, id)
	if err != nil {
		return commands.Outcome{}, err
	}
	return execute(ctx, h, domain.UserStream, "userId", id, inTenant(meta, u.TenantID), input, decide)
}
