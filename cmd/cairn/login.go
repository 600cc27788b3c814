package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"cairn/graph/client"
)

// viewer is who a token authenticates as.
type viewer struct {
	ID       string  `json:"id"`
	UserID   *string `json:"userId"`
	Name     *string `json:"name"`
	Role     string  `json:"role"`
	TenantID *string `json:"tenantId"`
	NodeID   *string `json:"nodeId"`
}

const viewerQuery = `query { viewer { id userId name role tenantId nodeId } }`

func newLoginCommand(a *app) *cobra.Command {
	var server, token string
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Check an API token against a server and remember both",
		Long: `Check an API token against a server and remember both.

The token is verified with the server first; only then are the server and the
token written to the configuration file, readable by you alone. Without
--token the token is taken from ` + TokenEnv + `, or else read from the first
line of standard input (so that it does not show in the process list):

    cairn login --server http://cairn.example:8080 < token.txt`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if server == "" {
				server = a.getenv(ServerEnv)
			}
			if server == "" {
				return &usageError{fmt.Errorf("which server? give --server URL (or set %s)", ServerEnv)}
			}
			srv, err := normalizeServer(server)
			if err != nil {
				return &usageError{err}
			}
			if token == "" {
				token = a.getenv(TokenEnv)
			}
			if token == "" {
				line, err := bufio.NewReader(a.stdin).ReadString('\n')
				token = strings.TrimSpace(line)
				if token == "" {
					return &usageError{fmt.Errorf("no token: give --token, set %s, or pipe it on standard input (%v)", TokenEnv, err)}
				}
			}
			c := client.New(srv, token, a.http)
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			var data struct {
				Viewer viewer `json:"viewer"`
			}
			if err := c.Do(ctx, viewerQuery, nil, &data); err != nil {
				return fmt.Errorf("the server did not accept the token: %w", err)
			}
			path, err := a.saveConfig(config{Server: srv, Token: token})
			if err != nil {
				return err
			}
			if a.structured() {
				return a.writeData(cmd.OutOrStdout(), map[string]any{"server": srv, "config": path, "viewer": data.Viewer})
			}
			v := data.Viewer
			who := v.ID
			switch {
			case v.Name != nil && *v.Name != "":
				who = *v.Name
			case v.UserID != nil:
				who = *v.UserID
			}
			scope := ""
			if v.TenantID != nil {
				scope = ", tenant " + *v.TenantID
			}
			if v.NodeID != nil {
				scope = ", node " + *v.NodeID
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Logged in to %s as %s (%s%s); saved in %s\n", srv, who, v.Role, scope, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "address of cairnd, e.g. http://127.0.0.1:8080 (env "+ServerEnv+")")
	cmd.Flags().StringVar(&token, "token", "", "API token, cairn_<id>_<secret> (env "+TokenEnv+"; default: read from standard input)")
	return cmd
}
