package main

import (
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

type serviceRow struct {
	ID              string     `json:"id"`
	TenantID        string     `json:"tenantId"`
	Tenant          *named     `json:"tenant"`
	Name            string     `json:"name"`
	TemplateName    string     `json:"templateName"`
	TemplateVersion string     `json:"templateVersion"`
	Status          string     `json:"status"`
	FailedIn        *string    `json:"failedIn"`
	Cause           *string    `json:"cause"`
	Revision        int        `json:"revision"`
	Blueprint       *string    `json:"blueprint"`
	RequestedAt     *time.Time `json:"requestedAt"`
	UpdatedAt       *time.Time `json:"updatedAt"`
}

const servicesQuery = `query ($first: Int, $after: String, $filter: ServiceFilter) {
  services(first: $first, after: $after, filter: $filter) {
    edges { node { id tenantId tenant { name } name templateName templateVersion status failedIn cause revision blueprint requestedAt updatedAt } }
    pageInfo { hasNextPage endCursor }
  }
}`

func newServicesCommand(a *app) *cobra.Command {
	var (
		statuses                            []string
		tenantID, template, name, blueprint string
		limit                               int
	)
	cmd := &cobra.Command{
		Use:   "services",
		Short: "List services",
		Long: `List the services the caller may see (a tenant's users see their own
tenant's only), filtered by tenant, status, template or name.

    cairn services --status running --template postgres`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter := map[string]any{}
			if s := enumValues(statuses); len(s) > 0 {
				filter["status"] = s
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if tenantID != "" {
				t, err := resolveNamed(cmd.Context(), a, c, "tenant", tenantID)
				if err != nil {
					return err
				}
				filter["tenantId"] = t.ID
			}
			if template != "" {
				filter["templateName"] = template
			}
			if name != "" {
				filter["name"] = name
			}
			if blueprint != "" {
				filter["blueprint"] = blueprint
			}
			rows, err := fetchList[serviceRow](cmd.Context(), a, c, servicesQuery, "services", map[string]any{"filter": filter}, limit)
			if err != nil {
				return err
			}
			if a.structured() {
				return a.writeData(cmd.OutOrStdout(), nonNil(rows))
			}
			ids := make([]string, len(rows))
			table := make([][]string, len(rows))
			for i, s := range rows {
				status := s.Status
				if s.FailedIn != nil {
					status += " (in " + *s.FailedIn + ")"
				}
				tenant := nameOr(s.TenantID, s.Tenant)
				ids[i] = s.ID
				table[i] = []string{s.Name, tenant, s.TemplateName + "@" + s.TemplateVersion, status, when(s.UpdatedAt)}
				if a.output == outputWide {
					table[i] = append(table[i], orDash(deref(s.Blueprint)), strconv.Itoa(max(s.Revision, 1)))
				}
			}
			header := []string{"NAME", "TENANT", "TEMPLATE", "STATUS", "UPDATED"}
			if a.output == outputWide {
				header = append(header, "BLUEPRINT", "REVISION")
			}
			return a.writeNamed(cmd.OutOrStdout(), header, ids, table)
		},
	}
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only services in these states (registering, registered, starting, running, stopping, stopped, removing, removed, failed, ...)")
	cmd.Flags().StringVar(&tenantID, "tenant", "", "only this tenant's services, by id or name (tenant users see their own)")
	cmd.Flags().StringVar(&template, "template", "", "only services of this template name")
	cmd.Flags().StringVar(&name, "name", "", "only the service with this name")
	cmd.Flags().StringVar(&blueprint, "blueprint", "", "only the services this blueprint declared")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many services (0: all)")
	return cmd
}
