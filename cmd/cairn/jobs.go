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
	Status      string     `json:"status"`
	Attempt     int        `json:"attempt"`
	NodeID      *string    `json:"nodeId"`
	TenantID    *string    `json:"tenantId"`
	Submitter   string     `json:"submitter"`
	SubmittedAt *time.Time `json:"submittedAt"`
	FinishedAt  *time.Time `json:"finishedAt"`
}

const jobsQuery = `query ($first: Int, $after: String, $filter: JobFilter) {
  jobs(first: $first, after: $after, filter: $filter) {
    edges { node { id parentId spec { kind action } status attempt nodeId tenantId submitter submittedAt finishedAt } }
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

    cairn jobs --status running,queued --node n1`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter := map[string]any{}
			if s := enumValues(statuses); len(s) > 0 {
				filter["status"] = s
			}
			if node != "" {
				filter["nodeId"] = node
			}
			if tenantID != "" {
				filter["tenantId"] = tenantID
			}
			switch {
			case parent != "":
				filter["parentId"] = parent
			case !all:
				filter["topLevel"] = true
			}
			c, err := a.client()
			if err != nil {
				return err
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
				table[i] = []string{j.ID, j.Status, what, orDash(ptr.Value(j.NodeID)), strconv.Itoa(j.Attempt),
					orDash(ptr.Value(j.TenantID)), j.Submitter, when(j.SubmittedAt), when(j.FinishedAt)}
			}
			return writeTable(cmd.OutOrStdout(), []string{"ID", "STATUS", "KIND", "NODE", "ATTEMPT", "TENANT", "SUBMITTER", "SUBMITTED", "FINISHED"}, table)
		},
	}
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only jobs in these states (queued, dispatched, running, cancelling, succeeded, failed, timed_out, cancelled, lost)")
	cmd.Flags().StringVar(&node, "node", "", "only jobs on this node id")
	cmd.Flags().StringVar(&parent, "parent", "", "only the children of this fan-out job")
	cmd.Flags().StringVar(&tenantID, "tenant", "", "only jobs of this tenant (admins, operators and auditors)")
	cmd.Flags().BoolVar(&all, "all", false, "include the children of fan-out jobs")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many jobs (0: all)")
	return cmd
}
