package main

import (
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"cairn/internal/ptr"
)

type tenantRow struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	Status        string     `json:"status"`
	SuspendReason *string    `json:"suspendReason"`
	CreatedAt     *time.Time `json:"createdAt"`
}

const tenantFields = `id name status suspendReason createdAt`

func newTenantsCommand(a *app) *cobra.Command {
	var (
		statuses []string
		limit    int
	)
	cmd := &cobra.Command{
		Use:   "tenants",
		Short: "List tenants; create, rename, suspend and resume them",
		Long: `List the tenants (operators and auditors see every one, a tenant's people
their own). The subcommands create, rename, suspend and resume them; each
takes a tenant by id or by name.

    cairn tenants
    cairn tenants create Acme --id acme
    cairn tenants suspend Acme --reason "unpaid invoice"`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			filter := map[string]any{}
			if s := enumValues(statuses); len(s) > 0 {
				filter["status"] = s
			}
			rows, err := fetchList[tenantRow](cmd.Context(), a, c, `query ($first: Int, $after: String, $filter: TenantFilter) {
  tenants(first: $first, after: $after, filter: $filter) { edges { node { `+tenantFields+` } } pageInfo { hasNextPage endCursor } } }`,
				"tenants", map[string]any{"filter": filter}, limit)
			if err != nil {
				return err
			}
			return a.writeTenants(cmd, rows)
		},
	}
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only tenants in these states (active, suspended)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many tenants (0: all)")
	cmd.AddCommand(newTenantCreateCommand(a), newTenantRenameCommand(a),
		tenantChange(a, "suspend", "suspendTenant", "SuspendTenantInput", "Suspend a tenant: its people can no longer sign in or change anything",
			"why, for the tenant's people and the audit trail"),
		tenantChange(a, "resume", "resumeTenant", "ResumeTenantInput", "Resume a suspended tenant", ""))
	return cmd
}

func (a *app) writeTenants(cmd *cobra.Command, rows []tenantRow) error {
	if a.structured() {
		return a.writeData(cmd.OutOrStdout(), nonNil(rows))
	}
	ids := make([]string, len(rows))
	table := make([][]string, len(rows))
	for i, t := range rows {
		ids[i] = t.ID
		table[i] = []string{t.Name, t.Status, orDash(ptr.Value(t.SuspendReason)), when(t.CreatedAt)}
	}
	return a.writeNamed(cmd.OutOrStdout(), []string{"NAME", "STATUS", "REASON", "CREATED"}, ids, table)
}

func newTenantCreateCommand(a *app) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "create NAME [--id ID]",
		Short: "Create a tenant",
		Long: `Create a tenant. Its id is generated unless --id gives one (a short word
is easier to type in other commands, which take the name as well).

    cairn tenants create "Acme Corp" --id acme`,
		Args: argsOne("tenant name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var p struct{ Tenant tenantRow }
			if err := a.mutate(cmd.Context(), c, "createTenant", "CreateTenantInput", "tenant { "+tenantFields+" }",
				withOptional(map[string]any{"name": args[0]}, "id", id), &p); err != nil {
				return err
			}
			return a.writeTenants(cmd, []tenantRow{p.Tenant})
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "the tenant's id (default: generated)")
	return cmd
}

func newTenantRenameCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "rename TENANT NEW_NAME",
		Example: `  cairn tenants rename acme "Acme Corp"`,
		Short:   "Rename a tenant",
		Args:    argsExactly("a tenant (id or name) and its new name", 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			t, err := resolveNamed(cmd.Context(), a, c, "tenant", args[0])
			if err != nil {
				return err
			}
			var p struct{ Tenant tenantRow }
			if err := a.mutate(cmd.Context(), c, "renameTenant", "RenameTenantInput", "tenant { "+tenantFields+" }",
				map[string]any{"tenantId": t.ID, "name": args[1]}, &p); err != nil {
				return err
			}
			return a.writeTenants(cmd, []tenantRow{p.Tenant})
		},
	}
}

// tenantChange changes a tenant's state and shows it after.
func tenantChange(a *app, verb, mutation, inputType, short, reason string) *cobra.Command {
	return namedChange{kind: "tenant", verb: verb, short: short, mutation: mutation, inputType: inputType, idField: "tenantId",
		reason: reason, selection: "tenant { " + tenantFields + " }",
		show: func(cmd *cobra.Command, payload json.RawMessage) error {
			var p struct{ Tenant tenantRow }
			if err := json.Unmarshal(payload, &p); err != nil {
				return err
			}
			return a.writeTenants(cmd, []tenantRow{p.Tenant})
		}}.command(a)
}
