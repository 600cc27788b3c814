package main

import (
	"time"

	"github.com/spf13/cobra"
)

type nodeRow struct {
	ID         string     `json:"id"`
	Hostname   string     `json:"hostname"`
	Status     string     `json:"status"`
	Cordoned   bool       `json:"cordoned"`
	Labels     []label    `json:"labels"`
	LocationID *string    `json:"locationId"`
	EnrolledAt *time.Time `json:"enrolledAt"`
	UpdatedAt  *time.Time `json:"updatedAt"`
}

const nodesQuery = `query ($first: Int, $after: String, $filter: NodeFilter) {
  nodes(first: $first, after: $after, filter: $filter) {
    edges { node { id hostname status cordoned labels { key value } locationId enrolledAt updatedAt } }
    pageInfo { hasNextPage endCursor }
  }
}`

func newNodesCommand(a *app) *cobra.Command {
	var (
		statuses, labels   []string
		location, hostname string
		limit              int
	)
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "List nodes",
		Long: `List the nodes the caller may see, filtered by status, labels, location or
hostname. Labels select nodes carrying every one given.

    cairn nodes --status online,draining --label zone=a -o json`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter := map[string]any{}
			if s := enumValues(statuses); len(s) > 0 {
				filter["status"] = s
			}
			if len(labels) > 0 {
				ls, err := parseLabels(labels)
				if err != nil {
					return err
				}
				filter["labels"] = ls
			}
			if location != "" {
				filter["locationId"] = location
			}
			if hostname != "" {
				filter["hostname"] = hostname
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			rows, err := fetchList[nodeRow](cmd.Context(), a, c, nodesQuery, "nodes", map[string]any{"filter": filter}, limit)
			if err != nil {
				return err
			}
			if a.output == outputJSON {
				return writeJSON(cmd.OutOrStdout(), nonNil(rows))
			}
			table := make([][]string, len(rows))
			for i, n := range rows {
				status := n.Status
				if n.Cordoned && n.Status != "DRAINING" && n.Status != "DRAINED" {
					status += " (cordoned)"
				}
				loc := ""
				if n.LocationID != nil {
					loc = *n.LocationID
				}
				table[i] = []string{n.ID, n.Hostname, status, labelsText(n.Labels), orDash(loc), when(n.UpdatedAt)}
			}
			return writeTable(cmd.OutOrStdout(), []string{"ID", "HOSTNAME", "STATUS", "LABELS", "LOCATION", "UPDATED"}, table)
		},
	}
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only nodes in these states (enrolled, online, draining, drained, disconnected, down, decommissioned); repeat or separate with commas")
	cmd.Flags().StringArrayVarP(&labels, "label", "l", nil, "only nodes carrying this label, key=value; repeat for several")
	cmd.Flags().StringVar(&location, "location", "", "only nodes at this location id")
	cmd.Flags().StringVar(&hostname, "hostname", "", "only nodes whose hostname contains this (case-insensitive)")
	cmd.Flags().IntVar(&limit, "limit", 500, "at most this many nodes (0: all)")
	return cmd
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](rows []T) []T {
	if rows == nil {
		return []T{}
	}
	return rows
}
