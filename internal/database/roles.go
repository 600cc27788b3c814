package database

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ServerRole is the login role cairnd serves as on its embedded cluster: a
// member of AppRole and nothing else, so a session of it can only ever read
// and append events (and write the read models), whatever it tries with
// RESET ROLE or SET ROLE. Migrations run as the schema's owner, apart.
const ServerRole = "cairn_server"

// EnsureServerRole makes ServerRole, through a pool of a role that may
// create roles (the embedded cluster's bootstrap user). Roles are
// cluster-wide, so several Cairn databases of one cluster share it.
func EnsureServerRole(ctx context.Context, admin *pgxpool.Pool) error {
	_, err := admin.Exec(ctx, `
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '`+ServerRole+`') THEN
    CREATE ROLE `+ServerRole+` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT;
  END IF;
EXCEPTION WHEN duplicate_object THEN
  NULL; -- another database of the cluster made it concurrently
END
$$`)
	if err != nil {
		return fmt.Errorf("create the %s role: %w", ServerRole, err)
	}
	if _, err := admin.Exec(ctx, "GRANT "+pgx.Identifier{AppRole}.Sanitize()+" TO "+pgx.Identifier{ServerRole}.Sanitize()); err != nil {
		return fmt.Errorf("grant %s to %s: %w", AppRole, ServerRole, err)
	}
	return nil
}
