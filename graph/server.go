// Package graph is Cairn's GraphQL API: queries on the read models,
// mutations that are the domain's commands, subscriptions fed by the event
// log, and the HTTP, WebSocket and SSE transports they travel over. The
// schema is in graph/schema, one file per area; resolvers follow it, one file
// per area (node.resolvers.go, ...).
package graph

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/rs/zerolog"
	"github.com/vektah/gqlparser/v2/ast"
	"golang.org/x/sync/errgroup"

	"cairn/eventstore"
	"cairn/graph/generated"
	"cairn/graph/live"
	"cairn/projections/readmodel"
)

// Config tunes the API. The zero value of each field takes the default
// docs/api.md documents.
type Config struct {
	// MaxDepth bounds the nesting of an operation's selections.
	MaxDepth int
	// MaxComplexity bounds an operation's cost: one per field, a
	// connection's selection counted `first` times.
	MaxComplexity int
	// MaxBodyBytes bounds a request body (and a WebSocket message).
	MaxBodyBytes int64
	// RequestTimeout bounds a query or mutation over HTTP.
	RequestTimeout time.Duration
	// DisableIntrospection turns off __schema and __type.
	DisableIntrospection bool
	// RecheckInterval is how often a long-lived connection's token is
	// checked again, so that a revoked or expired token stops working.
	RecheckInterval time.Duration
	// KeepAlive is the interval of keep-alive messages on WebSocket and SSE.
	KeepAlive time.Duration
	// ConsistencyTimeout bounds how long consistentWith waits.
	ConsistencyTimeout time.Duration
	// Live sizes the subscription hubs.
	Live live.Options
	// BatchWait is how long the loaders of relations (Node.location, ...)
	// collect keys before reading them in one query.
	BatchWait time.Duration
	// AnswerCache is how many query answers are kept to serve again while
	// the read models have not changed (see respcache.go); default 512,
	// negative: none. Only with projections that offer a Generation.
	AnswerCache int
}

func (c *Config) defaults() {
	if c.MaxDepth <= 0 {
		c.MaxDepth = 12
	}
	if c.MaxComplexity <= 0 {
		c.MaxComplexity = 10_000
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.RecheckInterval <= 0 {
		c.RecheckInterval = 30 * time.Second
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 15 * time.Second
	}
	if c.ConsistencyTimeout <= 0 {
		c.ConsistencyTimeout = 2 * time.Second
	}
	if c.BatchWait <= 0 {
		c.BatchWait = defaultBatchWait
	}
	if c.AnswerCache == 0 {
		c.AnswerCache = 512
	}
}

// maxFirst bounds `first` on every connection.
const maxFirst = 500

// Server is the GraphQL API: its HTTP handler and the background work its
// subscriptions need (Run).
type Server struct {
	cfg    Config
	deps   Deps
	log    zerolog.Logger
	reader *readmodel.Reader

	// events is fed by the one store subscription of the process; projected
	// follows it, each batch published once the read models applied it.
	events    *live.Hub
	projected *live.Hub

	gql     *handler.Server
	handler http.Handler
}

// New builds the API over its dependencies.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg.defaults()
	if err := deps.check(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, deps: deps, log: deps.Log, reader: deps.Reader}
	read := func(ctx context.Context, after eventstore.Cursor, limit int) ([]eventstore.RecordedEvent, error) {
		return deps.Store.ReadAll(ctx, after, limit, eventstore.Filter{})
	}
	s.events = live.New(read, cfg.Live)
	s.projected = live.New(read, cfg.Live)

	res := newResolver(s)
	es := generated.NewExecutableSchema(generated.Config{Resolvers: res})
	gql := handler.New(weighted{es})
	gql.AddTransport(transport.Websocket{
		Implementation:        websocketAccepter{inner: transport.CoderWebsocketImplementation{}},
		InitFunc:              s.websocketInit,
		InitTimeout:           10 * time.Second,
		KeepAlivePingInterval: cfg.KeepAlive,
		PingPongInterval:      cfg.KeepAlive,
		PayloadReadLimit:      &cfg.MaxBodyBytes,
		ErrorFunc: func(ctx context.Context, err error) {
			zerolog.Ctx(ctx).Debug().Err(err).Msg("websocket")
		},
	})
	gql.AddTransport(transport.SSE{KeepAlivePingInterval: cfg.KeepAlive})
	gql.AddTransport(transport.Options{})
	gql.AddTransport(transport.GET{})
	gql.AddTransport(transport.POST{})
	gql.SetQueryCache(newQueryCache(1000))
	if !cfg.DisableIntrospection {
		gql.Use(introspection{})
	}
	gql.Use(depthLimit{max: cfg.MaxDepth})
	gql.Use(&complexityLimit{max: cfg.MaxComplexity})
	gql.Use(terminalErrors{present: s.presentError, recover: s.recoverPanic})
	gql.Use(withLoaders{s: s})
	gql.Use(readModelsMark{hub: s.projected})
	if gen, ok := deps.Projections.(Generationer); ok {
		if ac := newAnswerCache(gen, cfg.AnswerCache); ac != nil {
			gql.Use(ac)
		}
	}
	gql.SetErrorPresenter(s.presentError)
	gql.SetRecoverFunc(s.recoverPanic)
	s.gql = gql
	s.handler = s.authenticate(s.limitBody(gql))
	return s, nil
}

// Handler serves /graphql: POST and GET, SSE (Accept: text/event-stream)
// and WebSocket upgrades.
func (s *Server) Handler() http.Handler { return s.handler }

// Run feeds the subscription hubs until ctx ends. Subscriptions deliver
// nothing before Run starts.
func (s *Server) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return live.Feed(ctx, s.deps.Store, s.events) })
	g.Go(func() error { return live.Follow(ctx, s.events, s.projected, s.deps.Projections.WaitFor) })
	err := g.Wait()
	s.events.Close()
	s.projected.Close()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// limitBody refuses request bodies over the limit before gqlgen reads them,
// and bounds a query or mutation over plain HTTP in time. Streams (SSE,
// WebSocket) are long-lived by design and bounded by their token instead.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.cfg.MaxBodyBytes {
			writeHTTPError(w, http.StatusRequestEntityTooLarge, CodeInvalidInput,
				fmt.Sprintf("the request body is %d bytes; at most %d are accepted: send a smaller query or fewer variables", r.ContentLength, s.cfg.MaxBodyBytes))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		}
		if r.Header.Get("Upgrade") == "" && !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// terminalErrors lets a subscription end with an error on every transport:
// the resolver records the error (endWith) and closes its channel, and the
// client receives one last result carrying the error, then completion.
type terminalErrors struct {
	present graphql.ErrorPresenterFunc
	recover graphql.RecoverFunc
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = terminalErrors{}

func (terminalErrors) ExtensionName() string                          { return "TerminalErrors" }
func (terminalErrors) Validate(schema graphql.ExecutableSchema) error { return nil }

type terminalKey struct{}

// terminal is written by the subscription's goroutine and read by the
// transport's, which may give up on its own when the client goes away.
type terminal struct {
	mu  sync.Mutex
	err error
}

func (t *terminal) get() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (te terminalErrors) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		return next(ctx)
	}
	t := &terminal{}
	responses := next(context.WithValue(ctx, terminalKey{}, t))
	done := false
	return func(ctx context.Context) *graphql.Response {
		if done {
			return nil
		}
		resp := responses(ctx)
		if resp != nil {
			return resp
		}
		err := t.get()
		if err == nil {
			return nil
		}
		done = true
		ctx = graphql.WithResponseContext(ctx, te.present, te.recover)
		graphql.AddError(ctx, err)
		return &graphql.Response{Errors: graphql.GetErrors(ctx)}
	}
}

// endWith records the error a subscription ends with; the caller then closes
// the subscription's channel.
func endWith(ctx context.Context, err error) {
	if t, ok := ctx.Value(terminalKey{}).(*terminal); ok {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.err == nil {
			t.err = err
		}
	}
}
