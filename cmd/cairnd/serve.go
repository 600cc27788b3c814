package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"cairn/cluster"
	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/internal/database"
	"cairn/internal/httpserver"
	"cairn/internal/memtrim"
	"cairn/internal/seal"
	"cairn/migrations"
)

func newServeCommand(cfg *config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the control-plane server",
		Long: `Run the control-plane server. It applies pending migrations, opens the event
log as the cairn_app role and serves HTTP (/healthz, /readyz, /metrics) until
SIGTERM or SIGINT. It then stops accepting connections, lets requests in flight
finish (15 s at most), closes the database and stops the embedded PostgreSQL
cluster if it started one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := cfg.logger(cmd.ErrOrStderr())
			if cfg.gcPercent > 0 {
				debug.SetGCPercent(cfg.gcPercent)
			}
			// Bind first: a busy port should fail before a database starts.
			ln, err := net.Listen("tcp", cfg.Listen)
			if err != nil {
				return fmt.Errorf("listen on %s (choose another address with --listen or %s): %w", cfg.Listen, envOf("listen"), err)
			}
			if cfg.DebugListen != "" {
				stop, err := serveProfiles(cfg.DebugListen, log)
				if err != nil {
					ln.Close()
					return err
				}
				defer stop()
			}
			if err := serve(cmd.Context(), cfg, log, ln); err != nil {
				return err
			}
			log.Info().Msg("cairnd stopped")
			return nil
		},
	}
	cfg.bindServeFlags(cmd.Flags())
	return cmd
}

// serve runs cairnd on ln until ctx ends and returns nil after a clean
// shutdown. It closes ln.
func serve(ctx context.Context, cfg *config, log zerolog.Logger, ln net.Listener) (err error) {
	defer func() {
		if cerr := ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, fmt.Errorf("close listener: %w", cerr))
		}
	}()

	be, err := openBackend(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, be.Close()) }()

	// Migrations need the schema's owner: the login role, without SET ROLE.
	// The pool stays open so that readiness can check the schema version,
	// which the app role may not read.
	owner, err := database.Open(ctx, be.url, database.Options{MaxConns: 2, AppName: "cairnd schema"})
	if err != nil {
		return err
	}
	defer owner.Close()
	st, err := migrations.Up(ctx, owner)
	if err != nil {
		return err
	}
	log.Info().Int64("schema_version", st.Current).Msg("database schema up to date")

	serveURL, err := be.serveURL(ctx, owner)
	if err != nil {
		return err
	}
	if be.embedded != nil {
		// A try-out cluster on one host: more replicas join the embedded
		// database through its socket (the role needs no password there).
		keyFile := cfg.SecretsKeyFile
		if keyFile == "" {
			keyFile = filepath.Join(cfg.DataDir, secretsKeyFile)
		}
		log.Info().Str("database_url", serveURL).Str("database_owner_url", be.url).
			Msgf("more replicas on this host can join this one: start them with DATABASE_URL=%q DATABASE_OWNER_URL=%q and --secrets-key-file %s",
				serveURL, be.url, keyFile)
	}
	// The replica's id names its sessions in pg_stat_activity, so an
	// operator sees (and can end) one replica's connections.
	replicaID := cluster.NewReplicaID()
	pool, err := database.Open(ctx, serveURL, database.Options{Role: database.AppRole, AppName: cluster.SessionName(replicaID)})
	if err != nil {
		return err
	}
	defer pool.Close()

	store := eventstore.New(pool, events.Registry(), eventstore.Options{
		Log: log.With().Str("component", "eventstore").Logger(),
	})
	defer store.Close()
	checkpointsCtx, stopCheckpoints := context.WithCancel(ctx)
	checkpointsDone := make(chan struct{})
	go func() { defer close(checkpointsDone); store.RunCheckpoints(checkpointsCtx, cfg.CheckpointEvery) }()
	defer func() { stopCheckpoints(); <-checkpointsDone }()

	// Memory a burst of work took comes back once the server is quiet.
	go memtrim.Run(ctx, memtrim.DefaultInterval)

	metrics := prometheus.NewRegistry()
	srv, err := httpserver.New(httpserver.Deps{
		Log:        log.With().Str("component", "http").Logger(),
		Pool:       pool,
		Store:      store,
		StoreStats: store.Stats,
		Schema: func(ctx context.Context) (migrations.Status, error) {
			return migrations.Check(ctx, owner)
		},
		Metrics: metrics,
	})
	if err != nil {
		return err
	}
	mountPortal(srv)
	key, err := loadSecretsKey(cfg.DataDir, cfg.SecretsKeyFile)
	if err != nil {
		return fmt.Errorf("secrets key: %w", err)
	}
	sealer, err := seal.New(key)
	if err != nil {
		return fmt.Errorf("secrets key: %w", err)
	}
	// Several replicas may share the database: each announces itself, and
	// the dispatcher's decisions have one owner at a time.
	cs, err := newClusterSide(ctx, pool, replicaID, advertisedAddress(cfg.Advertise, ln.Addr(), os.Hostname), sealer, metrics, log)
	if err != nil {
		return err
	}
	if st.Current > st.Latest {
		// A rolling upgrade under way: a newer replica migrated the
		// database. This one keeps serving but owns nothing once-only,
		// which the newer code may now do differently.
		note := fmt.Sprintf("the database schema is at version %d, newer than this cairnd knows (%d): "+
			"this replica serves the API and its agents but owns no once-only work until it is upgraded", st.Current, st.Latest)
		log.Warn().Msg(note)
		srv.Note(note)
		cs.passive = true
	}
	clusterCtx, stopCluster := context.WithCancel(ctx)
	clusterDone := make(chan error, 1)
	go func() { clusterDone <- cs.run(clusterCtx) }()
	defer func() {
		stopCluster()
		if err2 := <-clusterDone; err2 != nil {
			err = errors.Join(err, fmt.Errorf("cluster: %w", err2))
		}
	}()
	js, err := newJobSide(store, pool, sealer, cfg.Jobs, cs.dispatch, cs.presence, log)
	if err != nil {
		return err
	}
	// The read models are written through sessions that may not append
	// events, so that readers of the log need not wait for their
	// transactions.
	readModels, err := database.Open(ctx, serveURL, database.Options{Role: database.AppRole, AppName: eventstore.ReadModelAppName})
	if err != nil {
		return err
	}
	defer readModels.Close()
	ss, err := newServiceSide(ctx, store, pool, readModels, js, sealer, cfg, log)
	if err != nil {
		return err
	}
	ss.orchLease = cs.orchestrator
	srv.ReadyAfter("the read models' first build", ss.runner.Ready())
	ssCtx, stopSS := context.WithCancel(ctx)
	ssDone := make(chan error, 1)
	go func() { ssDone <- ss.run(ssCtx) }()
	defer func() {
		stopSS()
		if err2 := <-ssDone; err2 != nil {
			err = errors.Join(err, fmt.Errorf("projections and orchestrator: %w", err2))
		}
	}()
	var standby *pgxpool.Pool
	if cfg.DatabaseReadURL != "" {
		// Opening does not wait for the standby: queries read the primary
		// until it answers.
		if standby, err = database.Open(ctx, cfg.DatabaseReadURL, database.Options{Role: database.AppRole, AppName: "cairnd standby reads", Lazy: true}); err != nil {
			return fmt.Errorf("%s: %w", DatabaseReadURLEnv, err)
		}
		defer standby.Close()
		log.Info().Msg("queries that do not wait for a write read the standby DATABASE_READ_URL names while it answers")
	}
	runAPI, accessH, err := mountGraphQL(ctx, srv, store, js, ss, cs.registry, standby, log, os.Stderr)
	if err != nil {
		return err
	}
	jobsCtx, stopJobs := context.WithCancel(ctx)
	jobsDone := make(chan error, 1)
	go func() { jobsDone <- js.dispatcher.Run(jobsCtx) }()
	retentionDone := make(chan struct{})
	go func() { defer close(retentionDone); js.retention(jobsCtx, cfg.Jobs, log) }()
	defer func() { stopJobs(); <-retentionDone }()
	defer func() {
		stopJobs()
		if err2 := <-jobsDone; err2 != nil && !errors.Is(err2, context.Canceled) {
			err = errors.Join(err, fmt.Errorf("dispatcher: %w", err2))
		}
	}()
	if cfg.Jobs.LocalAgent != "" {
		agentDone := make(chan error, 1)
		go func() {
			agentDone <- runLocalAgent(jobsCtx, cfg.Jobs.LocalAgent, cfg.DataDir, ln.Addr(), accessH, log)
		}()
		defer func() {
			stopJobs()
			if err2 := <-agentDone; err2 != nil {
				log.Error().Err(err2).Msg("local agent")
			}
		}()
	}
	apiCtx, stopAPI := context.WithCancel(ctx)
	apiDone := make(chan error, 1)
	go func() { apiDone <- runAPI(apiCtx) }()
	defer func() { stopAPI(); err = errors.Join(err, <-apiDone) }()

	log.Info().Str("addr", ln.Addr().String()).Msgf("cairnd listening on http://%s", ln.Addr())
	return srv.Serve(ctx, ln)
}
