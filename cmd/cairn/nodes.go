package main

import (
	"time"

	"github.com/spf13/cobra"

	"cairn/domain/placement"
	"cairn/internal/ptr"
)

type nodeRow struct {
	ID         string     `json:"id"`
	Hostname   string     `json:"hostname"`
	Status     string     `json:"status"`
	Cordoned   bool       `json:"cordoned"`
	Labels     []label    `json:"labels"`
	LocationID *string    `json:"locationId"`
	Location   *named     `json:"location"`
	EnrolledAt *time.Time `json:"enrolledAt"`
	UpdatedAt  *time.Time `json:"updatedAt"`
	Capacity   *struct {
		Allocatable resourcesRow `json:"allocatable"`
		Allocated   resourcesRow `json:"allocated"`
		Allocations int          `json:"allocations"`
		Fill        float64      `json:"fill"`
	} `json:"capacity"`
}

// resourcesRow is the API's Resources.
type resourcesRow struct {
	CPU         float64 `json:"cpu"`
	MemoryBytes int64   `json:"memoryBytes"`
	DiskBytes   int64   `json:"diskBytes"`
}

// nodeRowFields are the fields of a nodeRow.
const nodeRowFields = `id hostname status cordoned labels { key value } locationId location { name } enrolledAt updatedAt
  capacity { allocatable { cpu memoryBytes diskBytes } allocated { cpu memoryBytes diskBytes } allocations fill }`

const nodesQuery = `query ($first: Int, $after: String, $filter: NodeFilter) {
  nodes(first: $first, after: $after, filter: $filter) { edges { node { ` + nodeRowFields + ` } } pageInfo { hasNextPage endCursor } }
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
hostname. Labels select nodes carrying every one given. CPU and MEMORY show
what the scheduler allocated of what the node offers (its facts less its
reserve).

    cairn nodes --status online,draining --label zone=a -o json`,
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
			if len(labels) > 0 {
				ls, err := parseLabels(labels)
				if err != nil {
					return err
				}
				filter["labels"] = ls
			}
			if location != "" {
				l, err := resolveNamed(cmd.Context(), a, c, "location", location)
				if err != nil {
					return err
				}
				filter["locationId"] = l.ID
			}
			if hostname != "" {
				filter["hostname"] = hostname
			}
			// Pages of 200: a node with its capacity costs about 26 of the
			// server's complexity limit of 10,000.
			rows, err := fetchPages[nodeRow](cmd.Context(), a, c, nodesQuery, "nodes", map[string]any{"filter": filter}, limit, 200)
			if err != nil {
				return err
			}
			return a.writeNodes(cmd, rows)
		},
	}
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only nodes in these states (enrolled, online, draining, drained, disconnected, down, decommissioned); repeat or separate with commas")
	cmd.Flags().StringArrayVarP(&labels, "label", "l", nil, "only nodes carrying this label, key=value; repeat for several")
	cmd.Flags().StringVar(&location, "location", "", "only nodes at this location (id or name)")
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

// writeNodes prints nodes by hostname, their location by name; -o wide
// adds their ids.
func (a *app) writeNodes(cmd *cobra.Command, rows []nodeRow) error {
	if a.structured() {
		return a.writeData(cmd.OutOrStdout(), nonNil(rows))
	}
	ids := make([]string, len(rows))
	table := make([][]string, len(rows))
	for i, n := range rows {
		status := n.Status
		if n.Cordoned && n.Status != "DRAINING" && n.Status != "DRAINED" {
			status += " (cordoned)"
		}
		loc := nameOr(ptr.Value(n.LocationID), n.Location)
		cpu, mem := "-", "-"
		if c := n.Capacity; c != nil && (c.Allocatable.CPU > 0 || c.Allocatable.MemoryBytes > 0) {
			cpu = placement.FormatCPU(int64(c.Allocated.CPU*1000)) + "/" + placement.FormatCPU(int64(c.Allocatable.CPU*1000))
			mem = placement.FormatBytes(c.Allocated.MemoryBytes) + "/" + placement.FormatBytes(c.Allocatable.MemoryBytes)
		}
		ids[i] = n.ID
		table[i] = []string{n.Hostname, status, labelsText(n.Labels), orDash(loc), cpu, mem, when(n.UpdatedAt)}
	}
	return a.writeNamed(cmd.OutOrStdout(), []string{"HOSTNAME", "STATUS", "LABELS", "LOCATION", "CPU", "MEMORY", "UPDATED"}, ids, table)
}
