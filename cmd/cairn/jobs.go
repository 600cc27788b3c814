package main

import (
	"cairn/internal/ptr"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

type jobRow struct {
	ID       string  `json:"id"`
	ParentID *string `json:"parentId"`
	Spec     struct {
		Kind   string  `json:"kind"`
		Action *string `json:"action"`
	} `json:"spec"`
	Status  string  `json:"status"`
	Attempt int     `json:"attempt"`
	NodeID  *string `json:"nodeId"`
	Node    *struct {
		Hostname string `json:"hostname"`
	} `json:"node"`
	TenantID    *string    `json:"tenantId"`
	Tenant      *named     `json:"tenant"`
	Submitter   string     `json:"submitter"`
	SubmittedAt *time.Time `json:"submittedAt"`
	FinishedAt  *time.Time `json:"finishedAt"`
}

const jobsQuery = `query ($first: Int, $after: String, $filter: JobFilter) {
  jobs(first: $first, after: $after, filter: $filter) {
    edges { node { id parentId spec { kind action } status attempt nodeId node { hostname } tenantId tenant { name } submitter submittedAt finishedAt } }
    pageInfo { hasNextPage endCursor }
  }
}`

func newJobsCommand(a *app) *cobra.Command {
	var (
		statuses               []string
		node, parent, tenantID string
		all                    bool
		limit                  int
	)
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List jobs",
		Long: `List jobs, newest first as the server orders them: by default the top-level
jobs (a fan-out's children are listed with --parent ID, or all with --all).

    cairn jobs --status running,queued --node web-1`,
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
			if node != "" {
				n, err := resolveNode(cmd.Context(), a, c, node)
				if err != nil {
					return err
				}
				filter["nodeId"] = n.ID
			}
			if tenantID != "" {
				t, err := resolveNamed(cmd.Context(), a, c, "tenant", tenantID)
				if err != nil {
					return err
				}
				filter["tenantId"] = t.ID
			}
			switch {
			case parent != "":
				filter["parentId"] = parent
			case !all:
				filter["topLevel"] = true
			}
			rows, err := fetchList[jobRow](cmd.Context(), a, c, jobsQuery, "jobs", map[string]any{"filter": filter}, limit)
			if err != nil {
				return err
			}
			if a.structured() {
				return a.writeData(cmd.OutOrStdout(), nonNil(rows))
			}
			table := make([][]string, len(rows))
			for i, j := range rows {
				what := j.Spec.Kind
				if j.Spec.Action != nil {
					what += " " + *j.Spec.Action
				}
				node, tenant := ptr.Value(j.NodeID), ptr.Value(j.TenantID)
				if j.Node != nil {
					node = j.Node.Hostname
				}
				tenant = nameOr(tenant, j.Tenant)
				table[i] = []string{j.ID, j.Status, what, orDash(node), strconv.Itoa(j.Attempt),
					orDash(tenant), j.Submitter, when(j.SubmittedAt), when(j.FinishedAt)}
			}
			return writeTable(cmd.OutOrStdout(), []string{"ID", "STATUS", "KIND", "NODE", "ATTEMPT", "TENANT", "SUBMITTER", "SUBMITTED", "FINISHED"}, table)
		},
	}
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only jobs in these states (queued, dispatched, running, cancelling, succeeded, failed, timed_out, cancelled, lost)")
	cmd.Flags().StringVar(&node, "node", "", "only jobs on this node (id or hostname)")
	cmd.Flags().StringVar(&parent, "parent", "", "only the children of this fan-out job")
	cmd.Flags().StringVar(&tenantID, "tenant", "", "only jobs of this tenant, by id or name (admins, operators and auditors)")
	cmd.Flags().BoolVar(&all, "all", false, "include the children of fan-out jobs")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many jobs (0: all)")
	return cmd
}
