package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

type replicaRow struct {
	ID        string     `json:"id"`
	Address   string     `json:"address"`
	Version   string     `json:"version"`
	StartedAt *time.Time `json:"startedAt"`
	LastSeen  *time.Time `json:"lastSeen"`
	Gone      bool       `json:"gone"`
	Owns      []string   `json:"owns"`
	Self      bool       `json:"self"`
}

const clusterQuery = `{ cluster { replicas { id address version startedAt lastSeen gone owns self } } }`

func newClusterCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "cluster",
		Example: `  cairn cluster status`,
		Short:   "The cairnd replicas serving the database",
		Args:    argsNone,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "List the replicas and what each owns",
		Long: `List the cairnd replicas sharing the database: where each serves, its version,
when it started and was last seen, and the once-only work it owns (dispatch:
leases, liveness, retries and schedule firings). The replica that answered is
marked with *; a replica silent for over 6 s shows as gone.

    cairn cluster status
    cairn cluster status -o json`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			var data struct {
				Cluster struct{ Replicas []replicaRow }
			}
			if err := c.Do(ctx, clusterQuery, nil, &data); err != nil {
				return err
			}
			rows := nonNil(data.Cluster.Replicas)
			if a.structured() {
				return a.writeData(cmd.OutOrStdout(), rows)
			}
			table := make([][]string, len(rows))
			for i, r := range rows {
				state := "up"
				if r.Gone {
					state = "gone"
				}
				id := r.ID
				if r.Self {
					id += " *"
				}
				table[i] = []string{id, r.Address, r.Version, state, orDash(strings.Join(r.Owns, ",")), when(r.StartedAt), when(r.LastSeen)}
			}
			return writeTable(cmd.OutOrStdout(), []string{"REPLICA", "ADDRESS", "VERSION", "STATE", "OWNS", "STARTED", "LAST SEEN"}, table)
		},
	})
	return cmd
}
