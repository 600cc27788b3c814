// Package transport carries the GraphQL API over HTTP (POST and GET),
// server-sent events and WebSocket (graphql-transport-ws and graphql-ws):
// it authenticates each request into a session, bounds what a request may
// cost (body size, depth, complexity, time) before anything runs, keeps the
// answer cache, and presents every error with a code. The resolvers (graph)
// read the request's caller and session from the context it sets.
package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	gqltransport "github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/rs/zerolog"

	"cairn/auth"
	"cairn/eventstore"
	"cairn/graph/apierr"
	"cairn/internal/workpool"
)

// Authenticator turns a bearer token into a principal (auth.Authenticator).
// A token that does not authenticate is an error that Is
// auth.ErrUnauthenticated; any other error means the check itself failed.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (auth.Principal, error)
}

// Generationer is what the projection runner offers for the answer cache.
type Generationer interface {
	// Generation changes whenever a read model has changed; zero while it
	// is not known.
	Generation() uint64
}

// Revoker tells of tokens that stopped authenticating (auth.Authenticator
// with Follow running), so that their open connections end at once.
type Revoker interface {
	OnRevoke(func(auth.Revocation))
}

// Deps are the transport's collaborators.
type Deps struct {
	Log  zerolog.Logger
	Auth Authenticator
	// ReadModelsPosition is how far every read model has applied the log:
	// the readModelsCursor of a query.
	ReadModelsPosition func(context.Context) (eventstore.Cursor, error)
	// Generation enables the answer cache; nil: no cache.
	Generation Generationer
	// RequestID returns the id the HTTP middleware gave a request, for
	// logs and INTERNAL errors; nil: no ids.
	RequestID func(context.Context) string
	// Extensions are the resolvers' own (per-response loaders, say), run
	// after the transport's.
	Extensions []Extension
	// Workers start WebSocket operations and run the deliveries of
	// subscriptions whose resolver says when a value is ready (Pushed);
	// nil: a goroutine each.
	Workers *workpool.Pool
}

// Extension is a gqlgen handler extension (an interceptor of operations,
// responses or fields).
type Extension = graphql.HandlerExtension

// Handler serves the API: every transport over one executable schema.
type Handler struct {
	opts     Options
	deps     Deps
	log      zerolog.Logger
	quotas   *quotas
	sessions watched
	http     http.Handler
	// wsOpen counts the WebSocket connections served now.
	wsOpen atomic.Int64
	// shared keeps subscriptions' results for the same operation elsewhere,
	// and keptRuns runs of them as the transports framed them.
	shared   *sharedResults
	keptRuns *keptRuns
	// heldBuffers hold what corked WebSocket connections and event streams
	// hold back, and each WebSocket result while it is put together.
	heldBuffers *heldBuffers
}

// New serves schema with the options and collaborators.
func New(schema graphql.ExecutableSchema, opts Options, deps Deps) (*Handler, error) {
	if deps.Auth == nil || deps.ReadModelsPosition == nil {
		return nil, errors.New("graph transport: Auth and ReadModelsPosition are required")
	}
	opts.defaults()
	h := &Handler{opts: opts, deps: deps, log: deps.Log, quotas: newQuotas(opts.Quota, opts.AnonymousQuota),
		shared: newSharedResults(sharedResultsKept), keptRuns: newKeptRuns(keptRunsKept), heldBuffers: newHeldBuffers()}
	if r, ok := deps.Auth.(Revoker); ok {
		r.OnRevoke(h.sessions.revoked)
	}
	gql := handler.New(weighted{schema})
	gql.AddTransport(wsServer{h: h, legacy: gqltransport.Websocket{
		Implementation:        websocketAccepter{inner: gqltransport.CoderWebsocketImplementation{}},
		InitFunc:              h.websocketInit,
		InitTimeout:           initTimeout,
		KeepAlivePingInterval: opts.KeepAlive,
		PingPongInterval:      opts.KeepAlive,
		PayloadReadLimit:      &opts.MaxBodyBytes,
		ErrorFunc: func(ctx context.Context, err error) {
			// gqlgen ends a connection whose message does not decode
			// without saying why; graphql-transport-ws says 4400. Its
			// decode errors are not exported: they read "invalid ...".
			var we gqltransport.WebsocketError
			if errors.As(err, &we) && we.IsReadError && strings.HasPrefix(we.Err.Error(), "invalid ") {
				if c, ok := ctx.Value(connKey{}).(*wsConn); ok {
					c.close(closeBadRequest, "invalid message: send graphql-transport-ws messages as JSON objects")
				}
			}
			zerolog.Ctx(ctx).Debug().Err(err).Msg("websocket")
		},
	}})
	gql.AddTransport(sseTransport{h: h})
	gql.AddTransport(gqltransport.Options{})
	gql.AddTransport(httpTransport{})
	gql.SetQueryCache(newQueryCache(1000))
	if !opts.DisableIntrospection {
		gql.Use(introspection{})
	}
	pf := newPreflight(opts.Limits, opts.AnonymousLimits)
	gql.Use(pf)
	gql.Use(&complexityLimit{preflight: pf})
	gql.SetParserTokenLimit(max(opts.Limits.Tokens, opts.AnonymousLimits.Tokens))
	gql.Use(terminalErrors{present: h.presentError, recover: h.recoverPanic})
	gql.Use(quotaGuard{q: h.quotas})
	gql.Use(correlation{})
	gql.Use(readModelsMark{position: deps.ReadModelsPosition})
	for _, ext := range deps.Extensions {
		gql.Use(ext)
	}
	if ac := newAnswerCache(deps.Generation, opts.AnswerCache); ac != nil {
		gql.Use(ac)
	}
	gql.SetErrorPresenter(h.presentError)
	gql.SetRecoverFunc(h.recoverPanic)
	h.http = h.authenticate(h.limitBody(gql))
	return h, nil
}

// ServeHTTP serves /graphql.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.http.ServeHTTP(w, r) }

// limitBody refuses request bodies over the limit and requests that are not
// GraphQL requests before gqlgen reads them, and bounds a query or mutation
// over plain HTTP in time. Streams (SSE, WebSocket) are long-lived by design
// and bounded by their token instead.
func (h *Handler) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > h.opts.MaxBodyBytes {
			writeHTTPError(w, http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge,
				fmt.Sprintf("the request body is %d bytes; at most %d are accepted: send a smaller query or fewer variables", r.ContentLength, h.opts.MaxBodyBytes))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
		}
		if r.Header.Get("Upgrade") != "" {
			next.ServeHTTP(w, r)
			return
		}
		sess := sessionFrom(r.Context())
		if ok, wait := h.quotas.allow(sess); !ok {
			rateLimited(w, wait, "too many requests from this caller: retry after the time Retry-After says")
			return
		}
		stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
		if stream && h.quotas.atSubscriptionLimit(sess) {
			rateLimited(w, time.Second, "this caller holds its quota of subscriptions already: end some first")
			return
		}
		r, ok := h.readRequest(w, r)
		if !ok {
			return
		}
		if !stream {
			ctx, cancel := context.WithTimeout(r.Context(), h.opts.RequestTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) requestID(ctx context.Context) string {
	if h.deps.RequestID == nil {
		return ""
	}
	return h.deps.RequestID(ctx)
}
