package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"cairn/auth"
	"cairn/commands/access"
	"cairn/commands/nodes"
	"cairn/eventstore"
	"cairn/graph"
	"cairn/graph/graphiql"
	"cairn/internal/httpserver"
)

// newID names entities created without a caller-chosen id.
func newID() string { return strings.ToLower(rand.Text()[:16]) }

// visibility stands in for the projection runner's WaitFor until cairnd runs
// the projections: the API then serves nothing from the read models, so an
// event is consistent as soon as readers of the log can see it.
type visibility struct{ store *eventstore.Store }

func (v visibility) WaitFor(ctx context.Context, c eventstore.Cursor) error {
	return v.store.WaitVisible(ctx, c)
}

// mountGraphQL serves the API at /graphql and GraphiQL at /graphiql, prints
// the bootstrap admin token on the first start, and returns the API's
// background work (the subscription feed) for the caller to run.
func mountGraphQL(ctx context.Context, srv *httpserver.Server, store *eventstore.Store, log zerolog.Logger, out io.Writer) (func(context.Context) error, error) {
	accessH := access.NewHandlers(store, time.Now, newID, access.Options{})
	token, err := auth.BootstrapAdmin(ctx, accessH)
	if err != nil {
		return nil, fmt.Errorf("bootstrap the admin: %w", err)
	}
	if token != "" {
		fmt.Fprintf(out, "\nFirst start: the administrator's token (shown once; keep it safe):\n\n    %s\n\nUse it with: cairn login --server http://<address> --token %s\n\n", token, token)
	}
	api, err := graph.New(graph.Config{}, graph.Deps{
		Log:         log.With().Str("component", "graphql").Logger(),
		Store:       store,
		Auth:        auth.NewAuthenticator(store, auth.AuthenticatorOptions{}),
		Projections: visibility{store},
		Access:      accessH,
		Nodes:       nodes.NewHandlers(store, time.Now, newID),
		RequestID:   httpserver.RequestID,
	})
	if err != nil {
		return nil, err
	}
	srv.Handle("/graphql", api.Handler())
	srv.Handle("/graphiql/", http.StripPrefix("/graphiql", graphiql.Handler()))
	srv.Handle("GET /graphiql", http.RedirectHandler("/graphiql/", http.StatusMovedPermanently))
	return api.Run, nil
}
