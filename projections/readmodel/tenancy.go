package readmodel

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"cairn/domain/tenant"
)

// Tenant is a tenant as the tenancy projection keeps it.
type Tenant struct {
	ID            string
	Name          string
	Status        tenant.TenantStatus
	SuspendReason string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Version       int64
}

// TenantFilter narrows a tenant list.
type TenantFilter struct {
	Status []tenant.TenantStatus
	// Name: a case-insensitive substring.
	Name string
}

const tenantColumns = `id, name, status, coalesce(suspend_reason, ''), created_at, updated_at, stream_version`

func scanTenant(row pgx.Row) (Tenant, error) {
	var t Tenant
	var status string
	var created, updated pgtype.Timestamptz
	err := row.Scan(&t.ID, &t.Name, &status, &t.SuspendReason, &created, &updated, &t.Version)
	t.Status, t.CreatedAt, t.UpdatedAt = tenant.TenantStatus(status), ts(created), ts(updated)
	return t, err
}

var tenantOrder = order{name: "tenants", cols: []string{"id"}, times: []bool{false}}

// ListTenants lists tenants by id.
func (r *Reader) ListTenants(ctx context.Context, f TenantFilter, p Page) (Connection[Tenant], error) {
	q := &query{}
	if len(f.Status) > 0 {
		q.add("status = ANY(" + q.arg(strs(f.Status)) + ")")
	}
	if f.Name != "" {
		q.add("name ILIKE " + q.arg(like(f.Name)))
	}
	return list(ctx, r.db, tenantColumns+" FROM "+r.table("tenants"), q, tenantOrder, p, scanTenant,
		func(t *Tenant) []any { return []any{t.ID} })
}

// Tenant returns one tenant, or a *domain.NotFoundError.
func (r *Reader) Tenant(ctx context.Context, id string) (Tenant, error) {
	return one(ctx, r.db, tenantColumns+" FROM "+r.table("tenants"), "tenant", id, scanTenant, func(t *Tenant) string { return t.ID })
}

// TenantsByID returns tenants in the order of ids, nil where none exists.
func (r *Reader) TenantsByID(ctx context.Context, ids []string) ([]*Tenant, error) {
	return byIDs(ctx, r.db, tenantColumns+" FROM "+r.table("tenants"), "tenants", ids, scanTenant, func(t *Tenant) string { return t.ID })
}

// User is a user as the tenancy projection keeps it.
type User struct {
	ID            string
	Name          string
	Role          tenant.Role
	TenantID      string
	Status        tenant.UserStatus
	DisableReason string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Version       int64
}

// UserFilter narrows a user list.
type UserFilter struct {
	// TenantID scopes the list to one tenant's users.
	TenantID string
	Role     []tenant.Role
	Status   []tenant.UserStatus
}

const userColumns = `id, name, role, coalesce(tenant_id, ''), status, coalesce(disable_reason, ''), created_at, updated_at, stream_version`

func scanUser(row pgx.Row) (User, error) {
	var u User
	var role, status string
	var created, updated pgtype.Timestamptz
	err := row.Scan(&u.ID, &u.Name, &role, &u.TenantID, &status, &u.DisableReason, &created, &updated, &u.Version)
	u.Role, u.Status, u.CreatedAt, u.UpdatedAt = tenant.Role(role), tenant.UserStatus(status), ts(created), ts(updated)
	return u, err
}

var userOrder = order{name: "users", cols: []string{"id"}, times: []bool{false}}

// ListUsers lists users by id.
func (r *Reader) ListUsers(ctx context.Context, f UserFilter, p Page) (Connection[User], error) {
	q := &query{}
	if f.TenantID != "" {
		q.add("tenant_id = " + q.arg(f.TenantID))
	}
	if len(f.Role) > 0 {
		q.add("role = ANY(" + q.arg(strs(f.Role)) + ")")
	}
	if len(f.Status) > 0 {
		q.add("status = ANY(" + q.arg(strs(f.Status)) + ")")
	}
	return list(ctx, r.db, userColumns+" FROM "+r.table("users"), q, userOrder, p, scanUser,
		func(u *User) []any { return []any{u.ID} })
}

// User returns one user, or a *domain.NotFoundError.
func (r *Reader) User(ctx context.Context, id string) (User, error) {
	return one(ctx, r.db, userColumns+" FROM "+r.table("users"), "user", id, scanUser, func(u *User) string { return u.ID })
}

// UsersByID returns users in the order of ids, nil where none exists.
func (r *Reader) UsersByID(ctx context.Context, ids []string) ([]*User, error) {
	return byIDs(ctx, r.db, userColumns+" FROM "+r.table("users"), "users", ids, scanUser, func(u *User) string { return u.ID })
}

// APIToken is an API token, without its secret: read models never hold it.
type APIToken struct {
	ID           string
	UserID       string
	Role         tenant.Role
	TenantID     string
	Status       tenant.TokenStatus
	ExpiresAt    time.Time
	IssuedAt     time.Time
	RevokedAt    time.Time
	RevokeReason string
	Version      int64
}

// APITokenFilter narrows a token list. Revoked tokens are left out unless
// IncludeRevoked.
type APITokenFilter struct {
	UserID         string
	TenantID       string
	IncludeRevoked bool
}

const tokenColumns = `id, user_id, role, coalesce(tenant_id, ''), status, expires_at, issued_at, revoked_at,
	coalesce(revoke_reason, ''), stream_version`

func scanToken(row pgx.Row) (APIToken, error) {
	var t APIToken
	var role, status string
	var expires, issued, revoked pgtype.Timestamptz
	err := row.Scan(&t.ID, &t.UserID, &role, &t.TenantID, &status, &expires, &issued, &revoked, &t.RevokeReason, &t.Version)
	t.Role, t.Status = tenant.Role(role), tenant.TokenStatus(status)
	t.ExpiresAt, t.IssuedAt, t.RevokedAt = ts(expires), ts(issued), ts(revoked)
	return t, err
}

var tokenOrder = order{name: "api_tokens", cols: []string{"id"}, times: []bool{false}}

// ListAPITokens lists API tokens by id.
func (r *Reader) ListAPITokens(ctx context.Context, f APITokenFilter, p Page) (Connection[APIToken], error) {
	q := &query{}
	if f.UserID != "" {
		q.add("user_id = " + q.arg(f.UserID))
	}
	if f.TenantID != "" {
		q.add("tenant_id = " + q.arg(f.TenantID))
	}
	if !f.IncludeRevoked {
		q.add("status <> 'revoked'")
	}
	return list(ctx, r.db, tokenColumns+" FROM "+r.table("api_tokens"), q, tokenOrder, p, scanToken,
		func(t *APIToken) []any { return []any{t.ID} })
}

// APIToken returns one token, or a *domain.NotFoundError.
func (r *Reader) APIToken(ctx context.Context, id string) (APIToken, error) {
	return one(ctx, r.db, tokenColumns+" FROM "+r.table("api_tokens"), "api token", id, scanToken, func(t *APIToken) string { return t.ID })
}

// Location is a location as the tenancy projection keeps it.
type Location struct {
	ID          string
	Name        string
	Description string
	Status      tenant.LocationStatus
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Version     int64
}

// LocationFilter narrows a location list.
type LocationFilter struct {
	Status []tenant.LocationStatus
}

const locationColumns = `id, name, coalesce(description, ''), status, created_at, updated_at, stream_version`

func scanLocation(row pgx.Row) (Location, error) {
	var l Location
	var status string
	var created, updated pgtype.Timestamptz
	err := row.Scan(&l.ID, &l.Name, &l.Description, &status, &created, &updated, &l.Version)
	l.Status, l.CreatedAt, l.UpdatedAt = tenant.LocationStatus(status), ts(created), ts(updated)
	return l, err
}

var locationOrder = order{name: "locations", cols: []string{"id"}, times: []bool{false}}

// ListLocations lists locations by id.
func (r *Reader) ListLocations(ctx context.Context, f LocationFilter, p Page) (Connection[Location], error) {
	q := &query{}
	if len(f.Status) > 0 {
		q.add("status = ANY(" + q.arg(strs(f.Status)) + ")")
	}
	return list(ctx, r.db, locationColumns+" FROM "+r.table("locations"), q, locationOrder, p, scanLocation,
		func(l *Location) []any { return []any{l.ID} })
}

// Location returns one location, or a *domain.NotFoundError.
func (r *Reader) Location(ctx context.Context, id string) (Location, error) {
	return one(ctx, r.db, locationColumns+" FROM "+r.table("locations"), "location", id, scanLocation, func(l *Location) string { return l.ID })
}

// LocationsByID returns locations in the order of ids, nil where none exists.
func (r *Reader) LocationsByID(ctx context.Context, ids []string) ([]*Location, error) {
	return byIDs(ctx, r.db, locationColumns+" FROM "+r.table("locations"), "locations", ids, scanLocation, func(l *Location) string { return l.ID })
}
