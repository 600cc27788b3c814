package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

type tokenRow struct {
	ID        string     `json:"id"`
	UserID    string     `json:"userId"`
	User      *named     `json:"user"`
	Role      string     `json:"role"`
	Status    string     `json:"status"`
	IssuedAt  *time.Time `json:"issuedAt"`
	ExpiresAt *time.Time `json:"expiresAt"`
	RevokedAt *time.Time `json:"revokedAt"`
}

const tokenFields = `id userId user { name } role status issuedAt expiresAt revokedAt`

func newTokensCommand(a *app) *cobra.Command {
	var (
		user    string
		revoked bool
		limit   int
	)
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: "List API tokens; create and revoke them",
		Long: `List API tokens (never their secrets: a token is shown once, when it is
made). A token acts as its user, with the user's role.

    cairn tokens --user "deploy robot"
    cairn tokens create --user "deploy robot" --ttl 720h
    cairn tokens revoke TOKEN_ID --reason "leaked in a log"`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			filter := map[string]any{"includeRevoked": revoked}
			if user != "" {
				u, err := resolveNamed(cmd.Context(), a, c, "user", user)
				if err != nil {
					return err
				}
				filter["userId"] = u.ID
			}
			rows, err := fetchList[tokenRow](cmd.Context(), a, c, `query ($first: Int, $after: String, $filter: ApiTokenFilter) {
  apiTokens(first: $first, after: $after, filter: $filter) { edges { node { `+tokenFields+` } } pageInfo { hasNextPage endCursor } } }`,
				"apiTokens", map[string]any{"filter": filter}, limit)
			if err != nil {
				return err
			}
			return a.writeTokens(cmd, rows)
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "only the tokens of this user (id or name)")
	cmd.Flags().BoolVar(&revoked, "revoked", false, "include revoked and expired tokens")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many tokens (0: all)")
	cmd.AddCommand(newTokenCreateCommand(a), newTokenRevokeCommand(a))
	return cmd
}

func (a *app) writeTokens(cmd *cobra.Command, rows []tokenRow) error {
	if a.structured() {
		return a.writeData(cmd.OutOrStdout(), nonNil(rows))
	}
	table := make([][]string, len(rows))
	for i, t := range rows {
		user := nameOr(t.UserID, t.User)
		table[i] = []string{t.ID, user, t.Role, t.Status, when(t.IssuedAt), when(t.ExpiresAt)}
	}
	// A token has no name: its id is how people tell tokens apart.
	return writeTable(cmd.OutOrStdout(), []string{"ID", "USER", "ROLE", "STATUS", "ISSUED", "EXPIRES"}, table)
}

func newTokenCreateCommand(a *app) *cobra.Command {
	var (
		user string
		ttl  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create [--user USER] [--ttl DURATION]",
		Short: "Create an API token and print its secret, once",
		Long: `Create an API token for a user (default: yourself) and print the secret.
It is shown this once: Cairn keeps only its hash.

    cairn tokens create --user "deploy robot" --ttl 720h`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			in := map[string]any{}
			if user != "" {
				u, err := resolveNamed(cmd.Context(), a, c, "user", user)
				if err != nil {
					return err
				}
				in["userId"] = u.ID
			}
			if ttl > 0 {
				in["ttlSeconds"] = int(ttl / time.Second)
			}
			var p struct {
				APIToken tokenRow `json:"apiToken"`
				Token    string   `json:"token"`
			}
			if err := a.mutate(cmd.Context(), c, "createApiToken", "CreateApiTokenInput", "apiToken { "+tokenFields+" } token", in, &p); err != nil {
				return err
			}
			if a.structured() {
				return a.writeData(cmd.OutOrStdout(), p)
			}
			user := nameOr(p.APIToken.UserID, p.APIToken.User)
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Token %s for %s (%s), valid until %s. Its secret, shown once:\n\n    %s\n",
				p.APIToken.ID, user, p.APIToken.Role, when(p.APIToken.ExpiresAt), p.Token)
			return err
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user (id or name) the token acts as (default: you)")
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "how long the token is valid (default: the server's)")
	return cmd
}

func newTokenRevokeCommand(a *app) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     "revoke TOKEN_ID",
		Example: `  cairn tokens revoke TOKEN_ID --reason "leaked in a log"`,
		Short:   "Revoke an API token: it stops working at once, on every replica",
		Args:    argsOne("token id (cairn tokens lists them)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var p struct {
				APIToken tokenRow `json:"apiToken"`
			}
			if err := a.mutate(cmd.Context(), c, "revokeApiToken", "RevokeApiTokenInput", "apiToken { "+tokenFields+" }",
				withOptional(map[string]any{"tokenId": args[0]}, "reason", reason), &p); err != nil {
				return err
			}
			return a.writeTokens(cmd, []tokenRow{p.APIToken})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}
