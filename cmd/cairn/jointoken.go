package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

const joinTokenMutation = `mutation ($input: CreateJoinTokenInput!) {
  createJoinToken(input: $input) { token joinToken { id expiresAt labels { key value } locationId } } }`

func newJoinTokenCommand(a *app) *cobra.Command {
	var (
		labels   []string
		location string
		ttl      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "join-token",
		Short: "Issue a single-use join token to enroll a node",
		Long: `Issue a short-lived, single-use join token. Start cairn-agent on the new node
with it; the agent trades it for the node's own credential and never needs it
again. The token is shown once.

    cairn nodes join-token --label role=web --ttl 30m
    CAIRN_JOIN_TOKEN=<token> cairn-agent --server https://cairn.example --data-dir /var/lib/cairn-agent`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			input := map[string]any{}
			if len(labels) > 0 {
				ls, err := parseLabels(labels)
				if err != nil {
					return err
				}
				input["labels"] = ls
			}
			if location != "" {
				input["locationId"] = location
			}
			if ttl != 0 {
				if ttl < time.Second {
					return &usageError{fmt.Errorf("--ttl must be at least a second")}
				}
				input["ttlSeconds"] = int(ttl / time.Second)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			var out struct {
				CreateJoinToken struct {
					Token     string `json:"token"`
					JoinToken struct {
						ID         string     `json:"id"`
						ExpiresAt  *time.Time `json:"expiresAt"`
						Labels     []label    `json:"labels"`
						LocationID *string    `json:"locationId"`
					} `json:"joinToken"`
				} `json:"createJoinToken"`
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			if err := c.Do(ctx, joinTokenMutation, map[string]any{"input": input}, &out); err != nil {
				return err
			}
			t := out.CreateJoinToken
			if a.structured() {
				return a.writeData(cmd.OutOrStdout(), t)
			}
			fmt.Fprintln(cmd.OutOrStdout(), t.Token)
			fmt.Fprintf(cmd.ErrOrStderr(), "cairn: join token %s, single use, expires %s UTC; labels %s\n",
				t.JoinToken.ID, when(t.JoinToken.ExpiresAt), labelsText(t.JoinToken.Labels))
			fmt.Fprintf(cmd.ErrOrStderr(), "cairn: on the node: CAIRN_JOIN_TOKEN=<token> cairn-agent --server %s --data-dir /var/lib/cairn-agent\n",
				serverOf(c.Endpoint()))
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&labels, "label", "l", nil, "label the enrolled node gets, key=value (repeat for several)")
	cmd.Flags().StringVar(&location, "location", "", "location id the enrolled node joins")
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "how long the token stays valid (default 15m, at most 24h)")
	return cmd
}

// serverOf is the server's base URL from its GraphQL endpoint.
func serverOf(endpoint string) string {
	const suffix = "/graphql"
	if len(endpoint) > len(suffix) && endpoint[len(endpoint)-len(suffix):] == suffix {
		return endpoint[:len(endpoint)-len(suffix)]
	}
	return endpoint
}
