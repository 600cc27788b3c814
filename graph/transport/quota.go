package transport

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"golang.org/x/time/rate"

	"cairn/graph/apierr"
)

// Quota bounds what one caller may ask of a server: requests (queries,
// mutations and subscription starts, over any transport) per second, and
// subscriptions open at once. A caller is a token, or an address for
// requests without one. Each replica counts its own callers: a client
// spread over three replicas may ask three times as much.
type Quota struct {
	// Rate is the sustained number of requests per second; Burst how many
	// may come at once after a quiet spell.
	Rate  float64
	Burst int
	// Subscriptions bounds the subscriptions a caller holds open.
	Subscriptions int
}

func (q *Quota) defaults(d Quota) {
	if q.Rate <= 0 {
		q.Rate = d.Rate
	}
	if q.Burst <= 0 {
		q.Burst = d.Burst
	}
	if q.Subscriptions <= 0 {
		q.Subscriptions = d.Subscriptions
	}
}

// quotas counts each caller's requests and subscriptions.
type quotas struct {
	signedIn, anonymous Quota

	mu      sync.Mutex
	callers map[string]*caller
	pruned  time.Time
}

type caller struct {
	bucket *rate.Limiter
	subs   int
	seen   time.Time
}

func newQuotas(signedIn, anonymous Quota) *quotas {
	return &quotas{signedIn: signedIn, anonymous: anonymous, callers: map[string]*caller{}}
}

// callerKey names the caller of a session: its token, else its address.
func callerKey(s *Session) (string, bool) {
	if s == nil {
		return "", false
	}
	if s.principal.TokenID != "" {
		return "token:" + s.principal.TokenID, true
	}
	return "address:" + s.address, false
}

func (q *quotas) quota(signedIn bool) Quota {
	if signedIn {
		return q.signedIn
	}
	return q.anonymous
}

// get returns the caller's counters, making them on first use; it drops
// callers quiet for ten minutes once a minute, so the map stays as small
// as the set of active callers.
func (q *quotas) get(key string, quota Quota, now time.Time) *caller {
	if now.Sub(q.pruned) > time.Minute {
		for k, c := range q.callers {
			if c.subs == 0 && now.Sub(c.seen) > 10*time.Minute {
				delete(q.callers, k)
			}
		}
		q.pruned = now
	}
	c := q.callers[key]
	if c == nil {
		c = &caller{bucket: rate.NewLimiter(rate.Limit(quota.Rate), quota.Burst)}
		q.callers[key] = c
	}
	c.seen = now
	return c
}

// allow takes one request from the session's caller and says how long to
// wait when there is none left.
func (q *quotas) allow(s *Session) (bool, time.Duration) {
	key, signedIn := callerKey(s)
	if key == "" {
		return true, 0
	}
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.get(key, q.quota(signedIn), now)
	r := c.bucket.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// subscribe counts one more subscription of the caller, or says it holds
// its quota already; release counts it off.
func (q *quotas) subscribe(s *Session) (release func(), ok bool) {
	key, signedIn := callerKey(s)
	if key == "" {
		return func() {}, true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.get(key, q.quota(signedIn), time.Now())
	if c.subs >= q.quota(signedIn).Subscriptions {
		return nil, false
	}
	c.subs++
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			c.subs--
		})
	}, true
}

func (q *quotas) atSubscriptionLimit(s *Session) bool {
	key, signedIn := callerKey(s)
	if key == "" {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.callers[key]
	return c != nil && c.subs >= q.quota(signedIn).Subscriptions
}

// rateLimited answers an HTTP request over its caller's quota: 429 with the
// seconds to wait.
func rateLimited(w http.ResponseWriter, wait time.Duration, what string) {
	secs := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	writeHTTPError(w, http.StatusTooManyRequests, apierr.CodeRateLimited, what)
}

// remoteAddress is the address a request came from, without its port.
func remoteAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// quotaGuard applies the quotas to operations that arrive over a WebSocket
// (HTTP requests are counted before gqlgen), and to every subscription: a
// caller over its rate has the connection closed with 4429; one that holds
// its quota of subscriptions has the new one refused with RATE_LIMITED.
type quotaGuard struct{ q *quotas }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = quotaGuard{}

func (quotaGuard) ExtensionName() string                          { return "Quotas" }
func (quotaGuard) Validate(schema graphql.ExecutableSchema) error { return nil }

func (g quotaGuard) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	sess := sessionFrom(ctx)
	if conn, ok := ctx.Value(connKey{}).(*wsConn); ok {
		if allowed, wait := g.q.allow(sess); !allowed {
			conn.close(closeTooManyRequests, fmt.Sprintf("too many requests: wait %s", wait.Round(time.Second)))
			return graphql.OneShot(refusedResponse(ctx, "too many requests on this connection"))
		}
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		return next(ctx)
	}
	release, ok := g.q.subscribe(sess)
	if !ok {
		return graphql.OneShot(refusedResponse(ctx, fmt.Sprintf("this token holds %d subscriptions already, its quota: end some first", g.q.quota(true).Subscriptions)))
	}
	context.AfterFunc(ctx, release)
	responses := next(ctx)
	return func(ctx context.Context) *graphql.Response {
		resp := responses(ctx)
		if resp == nil {
			release()
		}
		return resp
	}
}

func refusedResponse(ctx context.Context, msg string) *graphql.Response {
	return &graphql.Response{Errors: gqlerror.List{{Message: msg, Extensions: map[string]any{"code": apierr.CodeRateLimited}}}}
}

// closeTooManyRequests is the WebSocket close code of a connection over
// its caller's rate.
const closeTooManyRequests = 4429
