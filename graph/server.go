// Package graph is Cairn's GraphQL API: queries on the read models,
// mutations that are the domain's commands, and subscriptions fed by the
// event log. The schema is in graph/schema, one file per area; resolvers
// follow it, one file per area (node.resolvers.go, ...). They read through
// the read-model reader and the event log's small interface (Deps), never
// SQL of their own. How requests arrive (HTTP, WebSocket, SSE, limits, the
// answer cache, error codes) is graph/transport's job.
package graph

import (
	"context"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn/eventstore"
	"cairn/graph/generated"
	"cairn/graph/live"
	"cairn/graph/transport"
	"cairn/internal/workpool"
)

// Config tunes the API. The zero value of each field takes the default
// docs/api.md documents.
type Config struct {
	// Transport bounds requests and tunes the connections.
	Transport transport.Options
	// ConsistencyTimeout bounds how long consistentWith waits.
	ConsistencyTimeout time.Duration
	// Live sizes the subscription hubs.
	Live live.Options
	// BatchWait is how long the loaders of relations (Node.location, ...)
	// collect keys before reading them in one query.
	BatchWait time.Duration
}

func (c *Config) defaults() {
	c.Transport = c.Transport.WithDefaults()
	if c.ConsistencyTimeout <= 0 {
		c.ConsistencyTimeout = 2 * time.Second
	}
	if c.BatchWait <= 0 {
		c.BatchWait = defaultBatchWait
	}
}

// verifyChain reads every event it checks: a check of the whole log costs a
// point per eventsPerCost events of it (the log's head position counts
// them, near enough), so aliasing it or asking it of a large log meets the
// complexity limit; a stream is short and costs streamVerifyCost.
const (
	eventsPerCost    = 1000
	streamVerifyCost = 10
)

func verifyChainCost(head eventstore.Cursor, streamID *string) int {
	if streamID != nil && *streamID != "" {
		return streamVerifyCost
	}
	return 1 + int(min(head.Position/eventsPerCost, 1<<30))
}

// deliveryWorkerIdle is how long a worker that delivered subscriptions'
// events waits for more before it ends.
const deliveryWorkerIdle = 10 * time.Second

// maxFirst bounds `first` on every connection.
const maxFirst = 500

// Server is the GraphQL API: its HTTP handler and the background work its
// subscriptions need (Run).
type Server struct {
	res     *Resolver
	handler *transport.Handler
}

// New builds the API over its dependencies.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg.defaults()
	if err := deps.check(); err != nil {
		return nil, err
	}
	read := func(ctx context.Context, after eventstore.Cursor, limit int) ([]eventstore.RecordedEvent, error) {
		return deps.Store.ReadAll(ctx, after, limit, eventstore.Filter{})
	}
	res := &Resolver{cfg: cfg, deps: deps, log: deps.Log, reader: deps.Reader, standby: deps.Standby,
		events: live.New(read, cfg.Live), projected: live.New(read, cfg.Live), workers: workpool.New(deliveryWorkerIdle)}
	td := transport.Deps{
		Log: deps.Log, Auth: deps.Auth, RequestID: deps.RequestID, Workers: res.workers,
		ReadModelsPosition: res.projected.Position,
		Extensions:         []transport.Extension{withLoaders{res: res}},
	}
	if gen, ok := deps.Projections.(transport.Generationer); ok {
		td.Generation = gen
		if deps.Standby != nil {
			td.Generation = &standbyGeneration{projections: gen, standbyUp: &res.standbyUp, now: time.Now}
		}
	}
	var cx generated.ComplexityRoot
	cx.Query.VerifyChain = func(child int, streamID *string) int {
		return child + verifyChainCost(res.events.Cursor(), streamID)
	}
	h, err := transport.New(generated.NewExecutableSchema(generated.Config{Resolvers: res, Complexity: cx}), cfg.Transport, td)
	if err != nil {
		return nil, err
	}
	return &Server{res: res, handler: h}, nil
}

// Handler serves /graphql: POST and GET, SSE (Accept: text/event-stream)
// and WebSocket upgrades.
func (s *Server) Handler() http.Handler { return s.handler }

// Run feeds the subscription hubs until ctx ends. Subscriptions deliver
// nothing before Run starts.
func (s *Server) Run(ctx context.Context) error {
	r := s.res
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return live.Feed(ctx, r.deps.Store, r.events) })
	g.Go(func() error { return live.Follow(ctx, r.events, r.projected, r.deps.Projections.WaitFor) })
	if r.standby != nil && r.deps.StandbyCheck != nil {
		g.Go(func() error { r.watchStandby(ctx); return nil })
	}
	err := g.Wait()
	r.events.Close()
	r.projected.Close()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// watchStandby checks the standby every second: queries read it only while
// it answers, and the primary the rest of the time.
func (r *Resolver) watchStandby(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		err := r.deps.StandbyCheck(cctx)
		cancel()
		if up := err == nil; up != r.standbyUp.Load() {
			r.standbyUp.Store(up)
			if up {
				r.log.Info().Msg("queries that do not wait for a write read the standby")
			} else if ctx.Err() == nil {
				r.log.Warn().Err(err).Msg("the standby does not answer: queries read the primary")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
