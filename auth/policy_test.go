package auth_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"cairn/auth"
	"cairn/domain/tenant"
)

// grid is the policy written out independently of auth.Table: one row per
// action, one column per role (admin, operator, tenant_admin, tenant_member,
// vendor, auditor, agent). A: anywhere, T: own tenant, N: own node, V: own
// templates, -: forbidden.
const grid = `
node.read          A A - - - A N
node.enroll        A A - - - - -
node.update        A A - - - - -
node.drain         A A - - - - -
node.decommission  A A - - - - -
node.join_token    A A - - - - -
node.heartbeat     A - - - - - N
node.report_facts  A - - - - - N
job.read           A A T T - A N
job.submit         A A - - - - -
job.cancel         A A - - - - -
job.lease          A - - - - - N
job.acknowledge    A - - - - - N
job.start          A - - - - - N
job.finish         A - - - - - N
job.log            A - - - - - N
template.read      A A A A A A -
template.register  A - - - V - -
template.publish   A - - - V - -
template.deprecate A - - - V - -
service.read       A A T T - A -
service.create     A - T T - - -
service.start      A - T T - - -
service.stop       A - T T - - -
service.remove     A - T T - - -
service.cleanup    A A - - - - -
tenant.read        A A T T - A -
tenant.create      A A - - - - -
tenant.update      A A - - - - -
user.read          A A T - - A -
user.create        A A T - - - -
user.update        A A T - - - -
token.read         A - T - - A -
token.issue        A - T - - - -
token.revoke       A - T - - - -
location.read      A A A A - A -
location.create    A A - - - - -
location.update    A A - - - - -
event.read         A A T T - A -
projection.read    A A - - - - -
projection.rebuild A - - - - - -
`

var columns = []auth.Role{tenant.RoleAdmin, tenant.RoleOperator, tenant.RoleTenantAdmin, tenant.RoleTenantMember, tenant.RoleVendor, tenant.RoleAuditor, auth.RoleAgent}

func principal(role auth.Role) auth.Principal {
	p := auth.Principal{Kind: auth.KindUser, ID: "me", UserID: "me", TokenID: "tok", Role: role}
	switch role {
	case tenant.RoleTenantAdmin, tenant.RoleTenantMember:
		p.TenantID = "acme"
	case auth.RoleAgent:
		p = auth.Principal{Kind: auth.KindAgent, ID: "n1", TokenID: "node.n1", Role: role, NodeID: "n1"}
	}
	return p
}

// grantable is a role every granting role may hand out, so that the grant
// check does not hide the scope check here (TestGrants covers it).
const grantable = tenant.RoleTenantMember

// Every role × every action, on the principal's own entity and on another's.
func TestPolicyMatrix(t *testing.T) {
	t.Parallel()
	own := auth.Resource{TenantID: "acme", NodeID: "n1", Vendor: "me", Grants: grantable}
	others := map[string]auth.Resource{
		"T": {TenantID: "other", NodeID: "n1", Vendor: "me", Grants: grantable},
		"N": {TenantID: "acme", NodeID: "n2", Vendor: "me", Grants: grantable},
		"V": {TenantID: "acme", NodeID: "n1", Vendor: "someone", Grants: grantable},
	}
	var rows []auth.Action
	for _, line := range strings.Split(strings.TrimSpace(grid), "\n") {
		fields := strings.Fields(line)
		action := auth.Action(fields[0])
		rows = append(rows, action)
		if len(fields) != 1+len(columns) {
			t.Fatalf("grid row %q has %d cells", line, len(fields)-1)
		}
		for i, role := range columns {
			cell := fields[1+i]
			t.Run(string(role)+"/"+string(action), func(t *testing.T) {
				scope, inTable := auth.Table[role][action]
				if want := map[string]auth.Scope{"A": auth.Anywhere, "T": auth.OwnTenant, "N": auth.OwnNode, "V": auth.OwnTemplates}[cell]; scope != want || inTable != (cell != "-") {
					t.Fatalf("table says %q (present %v), grid says %s", scope, inTable, cell)
				}
				p := principal(role)
				err := auth.Can(p, action, own)
				if (err == nil) != (cell != "-") {
					t.Fatalf("on its own entity: %v", err)
				}
				var fe *auth.ForbiddenError
				if err != nil && (!errors.As(err, &fe) || !errors.Is(err, auth.ErrForbidden) || fe.Role != role || fe.Action != action) {
					t.Fatalf("refusal is not a *ForbiddenError naming role and action: %v", err)
				}
				if other, scoped := others[cell]; scoped {
					if err := auth.Can(p, action, other); !errors.As(err, &fe) {
						t.Fatalf("on another's entity: %v", err)
					}
				}
			})
		}
	}
	if !slices.Equal(rows, auth.Actions) {
		t.Fatalf("grid rows %v differ from auth.Actions %v", rows, auth.Actions)
	}
	if !slices.Equal(columns, auth.Roles) || len(auth.Table) != len(auth.Roles) {
		t.Fatalf("roles: grid %v, auth.Roles %v, table has %d", columns, auth.Roles, len(auth.Table))
	}
	for role, row := range auth.Table {
		for action := range row {
			if !slices.Contains(auth.Actions, action) {
				t.Errorf("%s: unknown action %q in the table", role, action)
			}
		}
	}
}

// Nobody hands out, or manages, a role above their own; only an admin makes
// (or disables) admins.
func TestGrants(t *testing.T) {
	t.Parallel()
	cases := []struct {
		role   auth.Role
		grants auth.Role
		ok     bool
	}{
		{tenant.RoleAdmin, tenant.RoleAdmin, true},
		{tenant.RoleOperator, tenant.RoleAdmin, false},
		{tenant.RoleOperator, tenant.RoleAuditor, true},
		{tenant.RoleTenantAdmin, tenant.RoleTenantAdmin, true},
		{tenant.RoleTenantAdmin, tenant.RoleOperator, false},
		{tenant.RoleTenantAdmin, "", false},
	}
	for _, c := range cases {
		for _, action := range []auth.Action{auth.UserCreate, auth.TokenIssue, auth.UserUpdate, auth.TokenRevoke} {
			if _, allowed := auth.Table[c.role][action]; !allowed {
				continue
			}
			err := auth.Can(principal(c.role), action, auth.Resource{TenantID: "acme", Grants: c.grants})
			if (err == nil) != c.ok {
				t.Errorf("%s %s granting %q: %v", c.role, action, c.grants, err)
			}
		}
	}
}

// A user principal cannot act as an agent, nor an agent as a user.
func TestKindMustMatchRole(t *testing.T) {
	t.Parallel()
	fake := auth.Principal{Kind: auth.KindUser, ID: "u", Role: auth.RoleAgent, NodeID: "n1"}
	if err := auth.Can(fake, auth.NodeHeartbeat, auth.Resource{NodeID: "n1"}); !errors.Is(err, auth.ErrForbidden) {
		t.Fatalf("user with role agent: %v", err)
	}
	odd := auth.Principal{Kind: auth.KindAgent, ID: "n1", Role: tenant.RoleAdmin, NodeID: "n1"}
	if err := auth.Can(odd, auth.NodeRead, auth.Resource{}); !errors.Is(err, auth.ErrForbidden) {
		t.Fatalf("agent with role admin: %v", err)
	}
	if err := auth.Can(auth.Principal{}, auth.TemplateRead, auth.Resource{}); !errors.Is(err, auth.ErrForbidden) {
		t.Fatalf("anonymous: %v", err)
	}
}
