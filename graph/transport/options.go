package transport

import "time"

// Options tune the transport. The zero value of each field takes the
// default docs/api.md documents.
type Options struct {
	// Limits bound one operation of a signed-in caller; AnonymousLimits
	// one of a caller without a token (who may only enroll an agent or
	// read the schema). A zero field takes its default.
	Limits          Budget
	AnonymousLimits Budget
	// Quota bounds a token's requests and subscriptions on this server;
	// AnonymousQuota those of an address without a token.
	Quota          Quota
	AnonymousQuota Quota
	// MaxBodyBytes bounds a request body (and a WebSocket message).
	MaxBodyBytes int64
	// RequestTimeout bounds a query or mutation over HTTP.
	RequestTimeout time.Duration
	// DisableIntrospection turns off __schema and __type.
	DisableIntrospection bool
	// RecheckInterval is how often a long-lived connection's token is
	// checked again, so that a revoked or expired token stops working.
	RecheckInterval time.Duration
	// KeepAlive is the interval of keep-alive messages on WebSocket and SSE
	// (on WebSocket up to twice it when very many connections are open).
	KeepAlive time.Duration
	// AnswerCache is how many query answers are kept to serve again while
	// the read models have not changed (see answers.go); default 512,
	// negative: none. Only with a Generation.
	AnswerCache int
}

// WithDefaults returns the options with every unset field at its default.
func (o Options) WithDefaults() Options {
	o.defaults()
	return o
}

func (o *Options) defaults() {
	o.Limits.defaults(Budget{Bytes: 100_000, Tokens: 20_000, Depth: 12, Fields: 5_000, Complexity: 10_000})
	o.Quota.defaults(Quota{Rate: 200, Burst: 1000, Subscriptions: 500})
	o.AnonymousQuota.defaults(Quota{Rate: 50, Burst: 500, Subscriptions: 20})
	o.AnonymousLimits.defaults(Budget{Bytes: 16_000, Tokens: 4_000, Depth: 12, Fields: 1_000, Complexity: 10_000})
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.RecheckInterval <= 0 {
		o.RecheckInterval = 30 * time.Second
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.AnswerCache == 0 {
		o.AnswerCache = 512
	}
}

func (b *Budget) defaults(d Budget) {
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&b.Bytes, d.Bytes)
	set(&b.Tokens, d.Tokens)
	set(&b.Depth, d.Depth)
	set(&b.Fields, d.Fields)
	set(&b.Complexity, d.Complexity)
}
