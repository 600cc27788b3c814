package transport

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	gqltransport "github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/rs/zerolog"

	"cairn/auth"
	"cairn/graph/apierr"
	"cairn/internal/wsframe"
)

// A Session is one authenticated caller for the life of a request: a single
// query, an SSE stream, or a WebSocket connection with all its operations.
// Long-lived sessions check their token again every RecheckInterval; when it
// no longer authenticates (revoked, expired, its user disabled) the session
// ends, each running subscription ends with UNAUTHENTICATED, and a WebSocket
// connection is closed with code 4401 and the reason.
type Session struct {
	principal auth.Principal
	token     string
	address   string // where the caller connected from

	once   sync.Once
	ended  context.Context // done when the session ends
	stop   context.CancelFunc
	reason error
}

func newSession(p auth.Principal, token, address string) *Session {
	ended, stop := context.WithCancel(context.Background())
	return &Session{principal: p, token: token, address: address, ended: ended, stop: stop}
}

// end stops the session with a reason the client is told.
func (s *Session) end(reason error) {
	s.once.Do(func() {
		s.reason = reason
		s.stop()
	})
}

// Ended is closed when the session's token stopped authenticating.
func (s *Session) Ended() <-chan struct{} { return s.ended.Done() }

// AfterEnd calls f on a goroutine of its own once the session ends, unless
// stop was called first: what ends with the session needs no goroutine
// that waits for it.
func (s *Session) AfterEnd(f func()) (stop func() bool) { return context.AfterFunc(s.ended, f) }

// Err is why the session ended (nil while it lasts).
func (s *Session) Err() error {
	if s.ended.Err() == nil {
		return nil
	}
	return s.reason
}

type sessionKey struct{}

func withSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

func sessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

// Principal is the caller of the request (anonymous when none).
func Principal(ctx context.Context) auth.Principal {
	if s := sessionFrom(ctx); s != nil {
		return s.principal
	}
	return auth.Principal{}
}

// SessionOf is the request's session (nil outside one).
func SessionOf(ctx context.Context) *Session { return sessionFrom(ctx) }

// watch checks the session's token every interval until ctx ends, and ends
// the session once the token fails. closeConn, when set, closes the
// connection carrying the session after its subscriptions had a moment to
// report the reason. It returns at once: the checks run from timers, so a
// connection that waits costs no goroutine (agents keep thousands open).
func (h *Handler) watch(ctx context.Context, sess *Session, closeConn func(code int, reason string)) {
	if sess.token == "" {
		return
	}
	var mu sync.Mutex
	var timer *time.Timer
	var check func()
	stop := context.AfterFunc(ctx, func() {
		h.sessions.remove(sess)
		mu.Lock()
		defer mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
	})
	check = func() {
		_, err := h.deps.Auth.Authenticate(ctx, sess.token)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
		case !errors.Is(err, auth.ErrUnauthenticated):
			// The check itself failed (the database restarting, say): keep
			// the session and try again at the next tick.
			h.log.Warn().Err(err).Msg("re-checking a connection's token failed; trying again later")
		default:
			stop()
			sess.end(err)
			if closeConn != nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
				if errors.Is(err, auth.ErrForbidden) {
					closeConn(closeForbidden, "no longer allowed: "+err.Error())
				} else {
					closeConn(closeUnauthorized, "token expired or revoked: sign in again")
				}
			}
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() == nil {
			timer = time.AfterFunc(h.opts.RecheckInterval, check)
		}
	}
	// A revocation that matches the caller checks again at once, rather
	// than at the next interval.
	h.sessions.add(sess, func() {
		mu.Lock()
		defer mu.Unlock()
		if timer != nil && timer.Stop() {
			timer = time.AfterFunc(0, check)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	timer = time.AfterFunc(h.opts.RecheckInterval, check)
}

// watched are the long-lived sessions, each with the function that checks
// its token again at once.
type watched struct {
	mu sync.Mutex
	m  map[*Session]func()
}

func (w *watched) add(s *Session, recheck func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[*Session]func(){}
	}
	w.m[s] = recheck
}

func (w *watched) remove(s *Session) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, s)
}

// revoked checks again, at once, every session the revocation matches.
func (w *watched) revoked(rev auth.Revocation) {
	w.mu.Lock()
	var due []func()
	for s, recheck := range w.m {
		if rev.Matches(s.principal) {
			due = append(due, recheck)
		}
	}
	w.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// closeUnauthorized is the WebSocket close code of graphql-transport-ws for
// a connection whose credentials are refused.
const closeUnauthorized = 4401

// closeTryAgainLater ends a connection whose token could not be checked
// because the database is away: reconnect later.
const closeTryAgainLater = wsframe.StatusTryAgainLater

// bearerToken reads "Bearer <token>" (the scheme is case-insensitive).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// authenticate runs before gqlgen on every HTTP request. A request with a
// token that does not authenticate is refused with 401 at once, so clients
// go back to sign-in. A request without a token goes on as anonymous: only
// enrollAgent accepts it, every other field answers UNAUTHENTICATED. A
// WebSocket upgrade authenticates later, on connection_init.
func (h *Handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if r.Header.Get("Upgrade") != "" {
			next.ServeHTTP(w, r.WithContext(withConn(ctx, &wsConn{address: remoteAddress(r)})))
			return
		}
		header := r.Header.Get("Authorization")
		if header == "" {
			next.ServeHTTP(w, r.WithContext(withSession(ctx, newSession(auth.Principal{}, "", remoteAddress(r)))))
			return
		}
		token, ok := bearerToken(header)
		if !ok {
			writeHTTPError(w, http.StatusUnauthorized, apierr.CodeUnauthenticated,
				`the Authorization header must be "Bearer <token>"`)
			return
		}
		p, err := h.deps.Auth.Authenticate(ctx, token)
		if err != nil {
			h.refuse(w, r, err)
			return
		}
		sess := newSession(p, token, remoteAddress(r))
		ctx, cancel := context.WithCancel(withSession(ctx, sess))
		defer cancel()
		if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			h.watch(ctx, sess, nil)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// refuse answers a request whose token failed: 401 when the token is the
// problem, 500 (logged, with the request id) when checking it failed.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, auth.ErrUnauthenticated) {
		zerolog.Ctx(r.Context()).Debug().Err(err).Msg("refused a token")
		writeHTTPError(w, http.StatusUnauthorized, apierr.CodeUnauthenticated, auth.ErrUnauthenticated.Error())
		return
	}
	if code, msg, _ := apierr.Classify(err); code == apierr.CodeUnavailable {
		// The database is away: the token could not be checked, nor
		// anything else done. The client retries.
		zerolog.Ctx(r.Context()).Warn().Err(err).Msg("could not check a token: the database is away")
		w.Header().Set("Retry-After", "1")
		writeHTTPError(w, http.StatusServiceUnavailable, apierr.CodeUnavailable, msg)
		return
	}
	gerr := h.internal(r.Context(), err, nil)
	writeHTTPError(w, http.StatusInternalServerError, apierr.CodeInternal, gerr.Message)
}

// writeHTTPError answers with a GraphQL-shaped error body, so clients parse
// every refusal the same way.
func writeHTTPError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]any{{"message": msg, "extensions": map[string]any{"code": code}}},
	})
}

// wsConn lets the session watcher close the WebSocket connection it belongs
// to with a code and reason of its own.
type wsConn struct {
	address string
	mu      sync.Mutex
	conn    interface {
		WriteClose(code int, reason string) error
	}
}

type connKey struct{}

func withConn(ctx context.Context, c *wsConn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

func (c *wsConn) close(code int, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		if len(reason) > 120 { // a close frame's reason is at most 123 bytes
			reason = reason[:120]
		}
		_ = c.conn.WriteClose(code, reason)
	}
}

// websocketAccepter remembers each accepted connection in the request's
// wsConn, so the session watcher can close it.
type websocketAccepter struct {
	inner gqltransport.WebsocketImplementation
}

func (a websocketAccepter) Accept(w http.ResponseWriter, r *http.Request, o gqltransport.WebsocketAcceptOptions) (gqltransport.WebsocketConn, error) {
	inner, err := a.inner.Accept(w, r, o)
	if err != nil {
		return nil, err
	}
	conn := closeCodes{inner}
	if c, ok := r.Context().Value(connKey{}).(*wsConn); ok {
		c.mu.Lock()
		c.conn = conn
		c.mu.Unlock()
	}
	return conn, nil
}

// closeCodes closes a connection with the codes of graphql-transport-ws
// that say why: 4400 for a message that breaks the protocol (gqlgen closes
// with the generic 1002), 4408 when connection_init never came.
type closeCodes struct{ gqltransport.WebsocketConn }

func (c closeCodes) WriteClose(code int, reason string) error {
	if code == gqltransport.WebsocketCloseProtocolError {
		code = closeBadRequest
		if strings.Contains(reason, "initialisation timeout") {
			code = closeInitTimeout
		}
	}
	return c.WebsocketConn.WriteClose(code, reason)
}

// Close codes of graphql-transport-ws.
const (
	closeBadRequest  = 4400
	closeForbidden   = 4403
	closeInitTimeout = 4408
)

// websocketInit is initSession for gqlgen's WebSocket transport (the
// graphql-ws protocol).
func (h *Handler) websocketInit(ctx context.Context, p gqltransport.InitPayload) (context.Context, *gqltransport.InitPayload, error) {
	sctx, code, err := h.initSession(ctx, p)
	if err != nil {
		return gqltransport.WithWebsocketCloseCode(ctx, code), nil, err
	}
	return sctx, nil, nil
}

// initSession authenticates a WebSocket connection from its
// connection_init payload: {"authorization": "Bearer <token>"} or
// {"token": "<token>"}. On failure it returns the close code that says why.
func (h *Handler) initSession(ctx context.Context, p gqltransport.InitPayload) (context.Context, int, error) {
	token, ok := bearerToken(p.Authorization())
	if !ok {
		token = p.GetString("token")
	}
	if token == "" {
		return ctx, closeUnauthorized, errors.New(`connection_init carries no token: send {"authorization": "Bearer <token>"} or {"token": "<token>"}`)
	}
	principal, err := h.deps.Auth.Authenticate(ctx, token)
	if err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			return ctx, closeUnauthorized, auth.ErrUnauthenticated
		}
		if code, msg, _ := apierr.Classify(err); code == apierr.CodeUnavailable {
			h.log.Warn().Err(err).Msg("could not check a WebSocket connection's token: the database is away")
			return ctx, closeTryAgainLater, errors.New(msg)
		}
		h.log.Error().Err(err).Msg("authenticating a WebSocket connection failed")
		return ctx, 1011, errors.New("internal error while checking the token; try again")
	}
	c, _ := ctx.Value(connKey{}).(*wsConn)
	address := ""
	if c != nil {
		address = c.address
	}
	sess := newSession(principal, token, address)
	ctx = withSession(ctx, sess)
	closeConn := func(code int, reason string) {}
	if c != nil {
		closeConn = c.close
	}
	h.watch(ctx, sess, closeConn)
	return ctx, 0, nil
}

// correlation gives each operation one correlation id, made on first use,
// so that every command one mutation sends is tied together in the log.
type correlation struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = correlation{}

func (correlation) ExtensionName() string                          { return "Correlation" }
func (correlation) Validate(schema graphql.ExecutableSchema) error { return nil }

func (correlation) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return next(context.WithValue(ctx, correlationKey{}, &correlationID{}))
}

type correlationKey struct{}

type correlationID struct {
	once sync.Once
	id   string
}

// CorrelationID is the operation's correlation id (a fresh one outside an
// operation).
func CorrelationID(ctx context.Context) string {
	c, ok := ctx.Value(correlationKey{}).(*correlationID)
	if !ok {
		return rand.Text()
	}
	c.once.Do(func() { c.id = rand.Text() })
	return c.id
}
