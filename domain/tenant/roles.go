// Package tenant holds the aggregates access control needs: tenants, users,
// API tokens and locations, each with its own state type and stream.
package tenant

import (
	"cairn/domain"
	"fmt"
)

// Role is what a user or token may do.
type Role string

const (
	RoleAdmin        Role = "admin"
	RoleOperator     Role = "operator"
	RoleTenantAdmin  Role = "tenant_admin"
	RoleTenantMember Role = "tenant_member"
	RoleVendor       Role = "vendor"
	RoleAuditor      Role = "auditor"
)

// Roles lists every role.
var Roles = []Role{RoleAdmin, RoleOperator, RoleTenantAdmin, RoleTenantMember, RoleVendor, RoleAuditor}

// TenantScoped reports whether the role acts within one tenant.
func (r Role) TenantScoped() bool { return r == RoleTenantAdmin || r == RoleTenantMember }

// Valid reports whether r is a known role.
func (r Role) Valid() bool {
	for _, known := range Roles {
		if r == known {
			return true
		}
	}
	return false
}

// validateRoleAndTenant checks the role and that a tenant is given exactly for
// tenant roles.
func validateRoleAndTenant(role Role, tenantID string) error {
	if !role.Valid() {
		return domain.Invalid("role", fmt.Sprintf("%q must be one of admin, operator, tenant_admin, tenant_member, vendor, auditor", role))
	}
	if role.TenantScoped() {
		if tenantID == "" {
			return domain.Invalid("tenantId", fmt.Sprintf("is required for role %s", role))
		}
		return domain.ValidateID("tenantId", tenantID)
	}
	if tenantID != "" {
		return domain.Invalid("tenantId", fmt.Sprintf("must be empty for role %s, which is not tied to a tenant", role))
	}
	return nil
}
