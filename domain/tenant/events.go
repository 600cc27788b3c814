package tenant

import (
	"time"

	"cairn/domain"
)

// TenantCreated records a new tenant.
type TenantCreated struct {
	TenantID string    `json:"tenantId"`
	Name     string    `json:"name"`
	At       time.Time `json:"at"`
}

// TenantRenamed records a tenant's new name.
type TenantRenamed struct {
	TenantID string    `json:"tenantId"`
	Name     string    `json:"name"`
	At       time.Time `json:"at"`
}

// TenantSuspended records that a tenant's users may no longer act.
type TenantSuspended struct {
	TenantID string    `json:"tenantId"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// TenantResumed lifts a suspension.
type TenantResumed struct {
	TenantID string    `json:"tenantId"`
	At       time.Time `json:"at"`
}

// UserCreated records a new user with one role.
type UserCreated struct {
	UserID   string    `json:"userId"`
	Name     string    `json:"name"`
	Role     Role      `json:"role"`
	TenantID string    `json:"tenantId,omitempty"` // for tenant roles only
	At       time.Time `json:"at"`
}

// UserDisabled records that a user may no longer act.
type UserDisabled struct {
	UserID string    `json:"userId"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// UserEnabled lifts a disable.
type UserEnabled struct {
	UserID string    `json:"userId"`
	At     time.Time `json:"at"`
}

// TokenIssued records an API token; only the hash of its secret is kept.
type TokenIssued struct {
	TokenID    string    `json:"tokenId"`
	UserID     string    `json:"userId"`
	Role       Role      `json:"role"`
	TenantID   string    `json:"tenantId,omitempty"`
	SecretHash string    `json:"secretHash"`
	ExpiresAt  time.Time `json:"expiresAt"`
	At         time.Time `json:"at"`
}

// TokenRevoked records that a token no longer authenticates.
type TokenRevoked struct {
	TokenID string    `json:"tokenId"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}

// LocationCreated records a new location (a site or datacenter grouping nodes).
type LocationCreated struct {
	LocationID  string    `json:"locationId"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	At          time.Time `json:"at"`
}

// LocationUpdated records a location's new name and description.
type LocationUpdated struct {
	LocationID  string    `json:"locationId"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	At          time.Time `json:"at"`
}

// LocationRetired records that a location takes no new nodes or services.
type LocationRetired struct {
	LocationID string    `json:"locationId"`
	At         time.Time `json:"at"`
}

func (TenantCreated) EventType() string   { return "tenant.created" }
func (TenantRenamed) EventType() string   { return "tenant.renamed" }
func (TenantSuspended) EventType() string { return "tenant.suspended" }
func (TenantResumed) EventType() string   { return "tenant.resumed" }
func (UserCreated) EventType() string     { return "user.created" }
func (UserDisabled) EventType() string    { return "user.disabled" }
func (UserEnabled) EventType() string     { return "user.enabled" }
func (TokenIssued) EventType() string     { return "api_token.issued" }
func (TokenRevoked) EventType() string    { return "api_token.revoked" }
func (LocationCreated) EventType() string { return "location.created" }
func (LocationUpdated) EventType() string { return "location.updated" }
func (LocationRetired) EventType() string { return "location.retired" }

// RegisterEvents registers the tenant, user, API token and location events at
// their current schema versions.
func RegisterEvents(r *domain.Registry) {
	domain.Register[TenantCreated](r, 1)
	domain.Register[TenantRenamed](r, 1)
	domain.Register[TenantSuspended](r, 1)
	domain.Register[TenantResumed](r, 1)
	domain.Register[UserCreated](r, 1)
	domain.Register[UserDisabled](r, 1)
	domain.Register[UserEnabled](r, 1)
	domain.Register[TokenIssued](r, 1)
	domain.Register[TokenRevoked](r, 1)
	domain.Register[LocationCreated](r, 1)
	domain.Register[LocationUpdated](r, 1)
	domain.Register[LocationRetired](r, 1)
}
