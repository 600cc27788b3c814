package transport

import "time"

// Options tune the transport. The zero value of each field takes the
// default docs/api.md documents.
type Options struct {
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
	if o.MaxDepth <= 0 {
		o.MaxDepth = 12
	}
	if o.MaxComplexity <= 0 {
		o.MaxComplexity = 10_000
	}
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
