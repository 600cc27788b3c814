package main

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cairn/internal/ptr"
)

type userRow struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	TenantID  *string    `json:"tenantId"`
	Tenant    *named     `json:"tenant"`
	Status    string     `json:"status"`
	CreatedAt *time.Time `json:"createdAt"`
}

const userFields = `id name role tenantId tenant { name } status createdAt`

func newUsersCommand(a *app) *cobra.Command {
	var (
		tenant, role string
		limit        int
	)
	cmd := &cobra.Command{
		Use:   "users",
		Short: "List users; create, disable and enable them",
		Long: `List the users the caller may see: an administrator every one, a tenant's
administrator the tenant's. A user acts through API tokens (cairn tokens).

    cairn users --tenant acme
    cairn users create "deploy robot" --role tenant_admin --tenant acme
    cairn users disable "deploy robot" --reason "left the team"`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			filter := map[string]any{}
			if tenant != "" {
				t, err := resolveNamed(cmd.Context(), a, c, "tenant", tenant)
				if err != nil {
					return err
				}
				filter["tenantId"] = t.ID
			}
			if role != "" {
				filter["role"] = enumValues([]string{role})
			}
			rows, err := fetchList[userRow](cmd.Context(), a, c, `query ($first: Int, $after: String, $filter: UserFilter) {
  users(first: $first, after: $after, filter: $filter) { edges { node { `+userFields+` } } pageInfo { hasNextPage endCursor } } }`,
				"users", map[string]any{"filter": filter}, limit)
			if err != nil {
				return err
			}
			return a.writeUsers(cmd, rows)
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "only the users of this tenant (id or name)")
	cmd.Flags().StringVar(&role, "role", "", "only users with this role (admin, operator, tenant_admin, tenant_member, vendor, auditor)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many users (0: all)")
	cmd.AddCommand(newUserCreateCommand(a),
		userChange(a, "disable", "disableUser", "DisableUserInput", "Disable a user: their tokens stop working at once", "why, for the audit trail"),
		userChange(a, "enable", "enableUser", "EnableUserInput", "Enable a disabled user again", ""))
	return cmd
}

func (a *app) writeUsers(cmd *cobra.Command, rows []userRow) error {
	if a.structured() {
		return a.writeData(cmd.OutOrStdout(), nonNil(rows))
	}
	ids := make([]string, len(rows))
	table := make([][]string, len(rows))
	for i, u := range rows {
		ids[i] = u.ID
		tenant := nameOr(ptr.Value(u.TenantID), u.Tenant)
		table[i] = []string{u.Name, strings.ToLower(u.Role), orDash(tenant), u.Status, when(u.CreatedAt)}
	}
	return a.writeNamed(cmd.OutOrStdout(), []string{"NAME", "ROLE", "TENANT", "STATUS", "CREATED"}, ids, table)
}

func newUserCreateCommand(a *app) *cobra.Command {
	var role, tenant string
	cmd := &cobra.Command{
		Use:   "create NAME --role ROLE [--tenant TENANT]",
		Short: "Create a user",
		Long: `Create a user with a role. Tenant roles (tenant_admin, tenant_member) need
the tenant. Give the user a token with cairn tokens create --user NAME.

    cairn users create "Ana Lima" --role operator
    cairn users create "deploy robot" --role tenant_admin --tenant acme`,
		Args: argsOne("user name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if role == "" {
				return &usageError{errors.New("give the user's role with --role (admin, operator, tenant_admin, tenant_member, vendor, auditor)")}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			in := map[string]any{"name": args[0], "role": strings.ToUpper(role)}
			if tenant != "" {
				t, err := resolveNamed(cmd.Context(), a, c, "tenant", tenant)
				if err != nil {
					return err
				}
				in["tenantId"] = t.ID
			}
			var p struct{ User userRow }
			if err := a.mutate(cmd.Context(), c, "createUser", "CreateUserInput", "user { "+userFields+" }", in, &p); err != nil {
				return err
			}
			return a.writeUsers(cmd, []userRow{p.User})
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "admin, operator, tenant_admin, tenant_member, vendor or auditor")
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant (id or name) of a tenant role")
	return cmd
}

// userChange changes a user's state and shows them after.
func userChange(a *app, verb, mutation, inputType, short, reason string) *cobra.Command {
	return namedChange{kind: "user", verb: verb, short: short, mutation: mutation, inputType: inputType, idField: "userId",
		reason: reason, selection: "user { " + userFields + " }",
		show: func(cmd *cobra.Command, payload json.RawMessage) error {
			var p struct{ User userRow }
			if err := json.Unmarshal(payload, &p); err != nil {
				return err
			}
			return a.writeUsers(cmd, []userRow{p.User})
		}}.command(a)
}
