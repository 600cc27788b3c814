package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/internal/database"
)

// embeddedDatabase is the database cairnd keeps in its embedded cluster.
const embeddedDatabase = "cairn"

// backend is the PostgreSQL server cairnd works with: the one DATABASE_URL
// names, or an embedded cluster it runs itself.
//
// Two roles act on it. The schema's owner (url) runs the migrations and
// reads the schema's version; the role cairnd serves as (serveURL) may only
// become the application role. On the embedded cluster the owner is the
// bootstrap user and cairnd serves as database.ServerRole. On a server of
// your own, DATABASE_OWNER_URL names the owner and DATABASE_URL the serving
// role; without DATABASE_OWNER_URL, DATABASE_URL's role does both, and a
// session of it could leave the application role (cairnd says so at start).
type backend struct {
	url      string // the schema's owner
	serve    string // the serving role; "" until serveURL made it
	embedded *database.Embedded
	log      zerolog.Logger
}

// serveURL is the URL of the role cairnd serves as. On the embedded cluster
// it makes that role first (the migrations must have run: it joins the
// application role they create).
func (b *backend) serveURL(ctx context.Context, owner *pgxpool.Pool) (string, error) {
	if b.serve != "" {
		return b.serve, nil
	}
	if b.embedded == nil {
		return b.url, nil
	}
	if err := database.EnsureServerRole(ctx, owner); err != nil {
		return "", err
	}
	b.serve = b.embedded.Cluster.URLAs(embeddedDatabase, database.ServerRole)
	return b.serve, nil
}

// openBackend uses the server DATABASE_URL names, or else starts (creating
// it on first use) the embedded cluster in the data directory.
func openBackend(ctx context.Context, cfg *config, log zerolog.Logger) (*backend, error) {
	if cfg.DatabaseURL != "" {
		pc, err := pgconn.ParseConfig(cfg.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", DatabaseURLEnv, err)
		}
		log.Info().Str("host", pc.Host).Uint16("port", pc.Port).Str("database", pc.Database).Str("user", pc.User).
			Msg("using the PostgreSQL server DATABASE_URL names")
		if cfg.DatabaseOwnerURL == "" {
			log.Warn().Msgf("%s is unset, so %s's role both owns the schema and serves: a session of it can leave the application role. "+
				"Name the owner in %s and a role that is only a member of %s in %s (docs/operations.md)",
				DatabaseOwnerURLEnv, DatabaseURLEnv, DatabaseOwnerURLEnv, database.AppRole, DatabaseURLEnv)
			return &backend{url: cfg.DatabaseURL, serve: cfg.DatabaseURL, log: log}, nil
		}
		if _, err := pgconn.ParseConfig(cfg.DatabaseOwnerURL); err != nil {
			return nil, fmt.Errorf("%s: %w", DatabaseOwnerURLEnv, err)
		}
		return &backend{url: cfg.DatabaseOwnerURL, serve: cfg.DatabaseURL, log: log}, nil
	}

	// As root, the server runs as an unprivileged user that must be able to
	// pass through the data directory to reach pgdata/.
	if err := os.MkdirAll(cfg.DataDir, 0o711); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	log.Info().Str("pgdata", cfg.pgDataDir()).Msg("starting embedded PostgreSQL (set DATABASE_URL to use a server of your own)")
	emb, err := database.StartEmbedded(ctx, cfg.pgDataDir(), embeddedDatabase,
		serverLog(log.With().Str("component", "postgres").Logger()))
	if err != nil {
		return nil, fmt.Errorf("start embedded PostgreSQL in %s: %w", cfg.pgDataDir(), err)
	}
	log.Info().Str("socket_dir", emb.Cluster.SocketDir()).Msg("embedded PostgreSQL started")
	return &backend{url: emb.URL, embedded: emb, log: log}, nil
}

// Close stops the embedded cluster, if cairnd started one.
func (b *backend) Close() error {
	if b.embedded == nil {
		return nil
	}
	if err := b.embedded.Stop(); err != nil {
		return fmt.Errorf("stop embedded PostgreSQL: %w", err)
	}
	b.log.Info().Msg("embedded PostgreSQL stopped")
	return nil
}

// serverLog forwards the embedded server's log lines. Its start-up,
// shutdown and checkpoint messages (severity LOG) are debug detail next to
// cairnd's own account; warnings and errors keep their weight, and the
// DETAIL, HINT or STATEMENT lines after one take its level.
func serverLog(log zerolog.Logger) func(string) {
	level := zerolog.InfoLevel
	return func(line string) {
		if l, ok := serverLogLevel(line); ok {
			level = l
		}
		log.WithLevel(level).Msg(line)
	}
}

// serverLogLevel maps the severity of a PostgreSQL log line to a zerolog
// level; ok is false for lines that continue the previous message.
func serverLogLevel(line string) (level zerolog.Level, ok bool) {
	switch {
	// Refusals while the server starts or stops answer our own polling for it,
	// and the database exists on every start but the first: all expected.
	case strings.Contains(line, "the database system is starting up"),
		strings.Contains(line, "the database system is shutting down"),
		strings.Contains(line, fmt.Sprintf("database %q already exists", embeddedDatabase)):
		return zerolog.DebugLevel, true
	case strings.Contains(line, "PANIC:"), strings.Contains(line, "FATAL:"), strings.Contains(line, "ERROR:"):
		return zerolog.ErrorLevel, true
	case strings.Contains(line, "WARNING:"):
		return zerolog.WarnLevel, true
	case strings.Contains(line, "LOG:"), strings.Contains(line, "DEBUG"):
		return zerolog.DebugLevel, true
	case strings.Contains(line, "INFO:"), strings.Contains(line, "NOTICE:"):
		return zerolog.InfoLevel, true
	default:
		return 0, false
	}
}
