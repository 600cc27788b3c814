package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"cairn/auditapi"
	"cairn/auth"
	"cairn/commands/access"
	"cairn/commands/blueprints"
	"cairn/commands/nodes"
	"cairn/eventstore"
	"cairn/graph"
	"cairn/graph/graphiql"
	"cairn/internal/httpserver"
	"cairn/projections/readmodel"
)

// newID names entities created without a caller-chosen id.
func newID() string { return strings.ToLower(rand.Text()[:16]) }

// mountGraphQL serves the API at /graphql and GraphiQL at /graphiql, prints
// the bootstrap admin token on the first start, and returns the API's
// background work (the subscription feed, and the authenticator following
// revocations) for the caller to run.
func mountGraphQL(ctx context.Context, srv *httpserver.Server, store *eventstore.Store, js *jobSide, ss *serviceSide, replicas graph.Cluster, standby *pgxpool.Pool, log zerolog.Logger, out io.Writer) (func(context.Context) error, *access.Handlers, error) {
	accessH := access.NewHandlers(store, time.Now, newID, access.Options{})
	token, err := auth.BootstrapAdmin(ctx, accessH)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap the admin: %w", err)
	}
	if token != "" {
		fmt.Fprintf(out, "\nFirst start: the administrator's token (shown once; keep it safe):\n\n    %s\n\nUse it with: cairn login --server http://<address> --token %s\n\n", token, token)
	}
	// Revocations leave the cache the moment they are appended (Follow,
	// below), so the window only bounds a revocation Follow could miss;
	// long enough that agents heartbeating every few seconds, a fleet of
	// them, cost no reads of their credentials.
	authn := auth.NewAuthenticator(store, auth.AuthenticatorOptions{CacheTTL: time.Minute, CacheSize: 100_000})
	api, err := graph.New(graph.Config{}, graph.Deps{
		Log:             log.With().Str("component", "graphql").Logger(),
		Store:           store,
		Reader:          ss.reader,
		Auth:            authn,
		Projections:     ss.runner,
		ProjectionAdmin: ss.runner,
		Templates:       ss.templates,
		Services:        ss.services,
		Blueprints:      blueprints.NewHandlers(store, ss.services, ss.reader, ss.reader),
		Access:          accessH,
		Nodes:           nodes.NewHandlers(store, time.Now, newID),
		Jobs:            js.jobs,
		Dispatch:        js.dispatcher,
		Logs:            js.logs,
		Stats:           js.stats,
		Schedules:       js.schedules,
		RequestID:       httpserver.RequestID,
		Cluster:         replicas,
		Standby:         standbyReader(standby),
		StandbyCheck:    standbyCheck(standby),
	})
	if err != nil {
		return nil, nil, err
	}
	srv.Handle("/graphql", api.Handler())
	srv.Handle("/graphiql/", http.StripPrefix("/graphiql", graphiql.Handler()))
	srv.Handle("GET /graphiql", http.RedirectHandler("/graphiql/", http.StatusMovedPermanently))
	auditLog := log.With().Str("component", "audit").Logger()
	srv.Handle("GET /audit/export", auditapi.Export(store, authn, auditLog))
	srv.Handle("GET /audit/verify", auditapi.VerifyLog(store, authn))
	srv.Handle("POST /audit/verify-against", auditapi.VerifyAgainst(store, authn))
	run := func(ctx context.Context) error {
		g, ctx := errgroup.WithContext(ctx)
		g.Go(func() error { return api.Run(ctx) })
		g.Go(func() error { return authn.Follow(ctx, store) })
		return g.Wait()
	}
	return run, accessH, nil
}

// standbyReader reads the read models on the standby, if there is one.
func standbyReader(pool *pgxpool.Pool) *readmodel.Reader {
	if pool == nil {
		return nil
	}
	return readmodel.New(pool)
}

// standbyCheck tells whether the standby answers.
func standbyCheck(pool *pgxpool.Pool) func(context.Context) error {
	if pool == nil {
		return nil
	}
	return func(ctx context.Context) error { return pool.Ping(ctx) }
}
