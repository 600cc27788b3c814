package models

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"cairn/domain/tenant"
	"cairn/projections"
)

// Tenancy keeps the access-control entities: read.tenants, read.users,
// read.api_tokens (never the secret's hash: a read model is no place for
// it) and read.locations.
type Tenancy struct{}

func (Tenancy) Name() string { return "tenancy" }
func (Tenancy) Version() int { return 1 }
func (Tenancy) Tables() []string {
	return []string{"tenants", "users", "api_tokens", "locations"}
}
func (Tenancy) Filter() projections.Filter {
	return projections.Filter{StreamTypes: []string{"tenant", "user", "api_token", "location"}}
}

func (Tenancy) Setup(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE TABLE %[1]s (
			id             text PRIMARY KEY,
			name           text NOT NULL,
			status         text NOT NULL,
			suspend_reason text,
			created_at     timestamptz,
			updated_at     timestamptz,
			stream_version bigint NOT NULL,
			position       bigint NOT NULL
		);
		CREATE TABLE %[2]s (
			id             text PRIMARY KEY,
			name           text NOT NULL,
			role           text NOT NULL,
			tenant_id      text,
			status         text NOT NULL,
			disable_reason text,
			created_at     timestamptz,
			updated_at     timestamptz,
			stream_version bigint NOT NULL,
			position       bigint NOT NULL
		);
		CREATE TABLE %[3]s (
			id             text PRIMARY KEY,
			user_id        text NOT NULL,
			role           text NOT NULL,
			tenant_id      text,
			status         text NOT NULL,
			expires_at     timestamptz,
			issued_at      timestamptz,
			revoked_at     timestamptz,
			revoke_reason  text,
			stream_version bigint NOT NULL,
			position       bigint NOT NULL
		);
		CREATE TABLE %[4]s (
			id             text PRIMARY KEY,
			name           text NOT NULL,
			description    text,
			status         text NOT NULL,
			created_at     timestamptz,
			updated_at     timestamptz,
			stream_version bigint NOT NULL,
			position       bigint NOT NULL
		);`, t.Table("tenants"), t.Table("users"), t.Table("api_tokens"), t.Table("locations")))
	return err
}

func (Tenancy) Index(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE INDEX ON %[1]s (tenant_id, id);
		CREATE INDEX ON %[2]s (user_id, id);
		CREATE INDEX ON %[2]s (tenant_id, id);`, t.Table("users"), t.Table("api_tokens")))
	return err
}

type versioned struct{ version, position int64 }

func (v *versioned) at(e *projections.Event) { v.version, v.position = e.Version, e.Position }

type tenantRow struct {
	tenant.Tenant
	versioned
}
type userRow struct {
	tenant.User
	versioned
}
type tokenRow struct {
	tenant.APIToken
	versioned
}
type locationRow struct {
	tenant.Location
	versioned
}

func (Tenancy) Apply(ctx context.Context, tx pgx.Tx, t projections.Target, evs []projections.Event) error {
	tenants, err := fold(ctx, tx, evs, "tenant", loadTenants(t), func(r *tenantRow, e *projections.Event) {
		r.Tenant.Apply(e.Data)
		r.ID = e.EntityID()
		r.at(e)
	})
	if err != nil {
		return err
	}
	users, err := fold(ctx, tx, evs, "user", loadUsers(t), func(r *userRow, e *projections.Event) {
		r.User.Apply(e.Data)
		r.ID = e.EntityID()
		r.at(e)
	})
	if err != nil {
		return err
	}
	tokens, err := fold(ctx, tx, evs, "api_token", loadTokens(t), func(r *tokenRow, e *projections.Event) {
		r.APIToken.Apply(e.Data)
		r.ID = e.EntityID()
		r.at(e)
	})
	if err != nil {
		return err
	}
	locations, err := fold(ctx, tx, evs, "location", loadLocations(t), func(r *locationRow, e *projections.Event) {
		r.Location.Apply(e.Data)
		r.ID = e.EntityID()
		r.at(e)
	})
	if err != nil {
		return err
	}

	out := newSplit(column{"id", kText}, column{"name", kText}, column{"status", kText}, column{"suspend_reason", kNText},
		column{"created_at", kTime}, column{"updated_at", kTime}, column{"stream_version", kInt}, column{"position", kInt})
	for _, f := range tenants {
		r := f.state
		out.row(f.existed).text(r.ID).text(r.Name).text(string(r.Status)).ntext(r.SuspendReason).time(r.CreatedAt).time(r.UpdatedAt).
			int(r.version).int(r.position)
	}
	stmts := out.writes(t.Table("tenants"), "id")
	out = newSplit(column{"id", kText}, column{"name", kText}, column{"role", kText}, column{"tenant_id", kNText},
		column{"status", kText}, column{"disable_reason", kNText}, column{"created_at", kTime}, column{"updated_at", kTime},
		column{"stream_version", kInt}, column{"position", kInt})
	for _, f := range users {
		r := f.state
		out.row(f.existed).text(r.ID).text(r.Name).text(string(r.Role)).ntext(r.TenantID).text(string(r.Status)).ntext(r.DisableReason).
			time(r.CreatedAt).time(r.UpdatedAt).int(r.version).int(r.position)
	}
	stmts = append(stmts, out.writes(t.Table("users"), "id")...)
	out = newSplit(column{"id", kText}, column{"user_id", kText}, column{"role", kText}, column{"tenant_id", kNText},
		column{"status", kText}, column{"expires_at", kTime}, column{"issued_at", kTime}, column{"revoked_at", kTime},
		column{"revoke_reason", kNText}, column{"stream_version", kInt}, column{"position", kInt})
	for _, f := range tokens {
		r := f.state
		out.row(f.existed).text(r.ID).text(r.UserID).text(string(r.Role)).ntext(r.TenantID).text(string(r.Status)).time(r.ExpiresAt).
			time(r.IssuedAt).time(r.RevokedAt).ntext(r.RevokeReason).int(r.version).int(r.position)
	}
	stmts = append(stmts, out.writes(t.Table("api_tokens"), "id")...)
	out = newSplit(column{"id", kText}, column{"name", kText}, column{"description", kNText}, column{"status", kText},
		column{"created_at", kTime}, column{"updated_at", kTime}, column{"stream_version", kInt}, column{"position", kInt})
	for _, f := range locations {
		r := f.state
		out.row(f.existed).text(r.ID).text(r.Name).ntext(r.Description).text(string(r.Status)).time(r.CreatedAt).time(r.UpdatedAt).
			int(r.version).int(r.position)
	}
	return write(ctx, tx, append(stmts, out.writes(t.Table("locations"), "id")...)...)
}

func loadTenants(t projections.Target) func(context.Context, pgx.Tx, []string) (map[string]*tenantRow, error) {
	sql := `SELECT id, name, status, coalesce(suspend_reason, ''), created_at, updated_at, stream_version, position
		FROM ` + t.Table("tenants") + ` WHERE id = ANY($1)`
	return func(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*tenantRow, error) {
		return loadRows(ctx, tx, sql, ids, func(rows pgx.Rows, r *tenantRow) (string, error) {
			var status string
			var created, updated pgtype.Timestamptz
			if err := rows.Scan(&r.ID, &r.Name, &status, &r.SuspendReason, &created, &updated, &r.version, &r.position); err != nil {
				return "", err
			}
			r.Status, r.CreatedAt, r.UpdatedAt = tenant.TenantStatus(status), ts(created), ts(updated)
			return r.ID, nil
		})
	}
}

func loadUsers(t projections.Target) func(context.Context, pgx.Tx, []string) (map[string]*userRow, error) {
	sql := `SELECT id, name, role, coalesce(tenant_id, ''), status, coalesce(disable_reason, ''), created_at, updated_at,
		stream_version, position FROM ` + t.Table("users") + ` WHERE id = ANY($1)`
	return func(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*userRow, error) {
		return loadRows(ctx, tx, sql, ids, func(rows pgx.Rows, r *userRow) (string, error) {
			var role, status string
			var created, updated pgtype.Timestamptz
			if err := rows.Scan(&r.ID, &r.Name, &role, &r.TenantID, &status, &r.DisableReason, &created, &updated,
				&r.version, &r.position); err != nil {
				return "", err
			}
			r.Role, r.Status, r.CreatedAt, r.UpdatedAt = tenant.Role(role), tenant.UserStatus(status), ts(created), ts(updated)
			return r.ID, nil
		})
	}
}

func loadTokens(t projections.Target) func(context.Context, pgx.Tx, []string) (map[string]*tokenRow, error) {
	sql := `SELECT id, user_id, role, coalesce(tenant_id, ''), status, expires_at, issued_at, revoked_at,
		coalesce(revoke_reason, ''), stream_version, position FROM ` + t.Table("api_tokens") + ` WHERE id = ANY($1)`
	return func(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*tokenRow, error) {
		return loadRows(ctx, tx, sql, ids, func(rows pgx.Rows, r *tokenRow) (string, error) {
			var role, status string
			var expires, issued, revoked pgtype.Timestamptz
			if err := rows.Scan(&r.ID, &r.UserID, &role, &r.TenantID, &status, &expires, &issued, &revoked,
				&r.RevokeReason, &r.version, &r.position); err != nil {
				return "", err
			}
			r.Role, r.Status = tenant.Role(role), tenant.TokenStatus(status)
			r.ExpiresAt, r.IssuedAt, r.RevokedAt = ts(expires), ts(issued), ts(revoked)
			return r.ID, nil
		})
	}
}

func loadLocations(t projections.Target) func(context.Context, pgx.Tx, []string) (map[string]*locationRow, error) {
	sql := `SELECT id, name, coalesce(description, ''), status, created_at, updated_at, stream_version, position
		FROM ` + t.Table("locations") + ` WHERE id = ANY($1)`
	return func(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*locationRow, error) {
		return loadRows(ctx, tx, sql, ids, func(rows pgx.Rows, r *locationRow) (string, error) {
			var status string
			var created, updated pgtype.Timestamptz
			if err := rows.Scan(&r.ID, &r.Name, &r.Description, &status, &created, &updated, &r.version, &r.position); err != nil {
				return "", err
			}
			r.Status, r.CreatedAt, r.UpdatedAt = tenant.LocationStatus(status), ts(created), ts(updated)
			return r.ID, nil
		})
	}
}
