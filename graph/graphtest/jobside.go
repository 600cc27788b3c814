// Package graphtest serves the GraphQL API over test environments, for tests
// and benchmarks of the API's clients (the agent, the CLI).
package graphtest

import (
	"context"
	"net/http"
	"net/http/httptest"

	"github.com/rs/zerolog"

	"cairn/dispatch/dispatchtest"
	"cairn/eventstore"
	"cairn/graph"
	"cairn/graph/transport"
	"cairn/projections/readmodel"
)

// visibility stands in for the projection runner: the job side reads
// streams, not read models, so an event is consistent once readers see it.
type visibility struct{ store *eventstore.Store }

func (v visibility) WaitFor(ctx context.Context, c eventstore.Cursor) error {
	return v.store.WaitVisible(ctx, c)
}

// API is the GraphQL API served on a real HTTP listener, as cairnd serves it.
type API struct {
	Server *httptest.Server
	URL    string // base URL; the API is at URL + "/graphql"
	stop   context.CancelFunc
	done   chan error
}

// ServeJobSide starts the API over a job side (dispatchtest.Start) on a
// local listener. Many agents of one test share an address and a few
// tokens: unless cfg sets them, no quota limits their requests.
func ServeJobSide(e *dispatchtest.Env, cfg graph.Config, log zerolog.Logger) (*API, error) {
	unlimited := transport.Quota{Rate: 1e9, Burst: 1e9, Subscriptions: 1e9}
	if cfg.Transport.Quota == (transport.Quota{}) {
		cfg.Transport.Quota = unlimited
	}
	if cfg.Transport.AnonymousQuota == (transport.Quota{}) {
		cfg.Transport.AnonymousQuota = unlimited
	}
	srv, err := graph.New(cfg, graph.Deps{
		Log: log, Store: e.Store, Reader: readmodel.New(e.Pool), Auth: e.Auth, Projections: visibility{e.Store},
		Access: e.Access, Nodes: e.Nodes, Jobs: e.Jobs, Dispatch: e.Dispatcher, Logs: e.Logs, Stats: e.Stats, Schedules: e.Schedules,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", srv.Handler())
	hs := httptest.NewServer(mux)
	ctx, cancel := context.WithCancel(context.Background())
	a := &API{Server: hs, URL: hs.URL, stop: cancel, done: make(chan error, 1)}
	go func() { a.done <- srv.Run(ctx) }()
	return a, nil
}

// Close stops the API and its listener, ending open connections.
func (a *API) Close() error {
	a.Server.CloseClientConnections()
	a.Server.Close()
	a.stop()
	return <-a.done
}
