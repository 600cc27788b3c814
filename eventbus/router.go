package eventbus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/eventstore"
)

// PoisonTopic is where messages go after their handler exhausted its retries.
// Its table is created by migrations/00002_watermill.sql.
const PoisonTopic = "cairn_poison"

// RouterOptions configure a router.
type RouterOptions struct {
	MaxRetries      int
	InitialInterval time.Duration
	MaxInterval     time.Duration
}

// Router is a watermill router whose consumers handle events one at a time,
// in global order. One message carries the events one read of the log
// returned (see Subscriber); the consumer's handler runs for each of them,
// retries one that fails with exponential backoff, parks it in the poison
// queue when its retries are exhausted (one bad event never stops a
// consumer) and goes on with the next. A retry a shutdown cuts short parks
// nothing: the event is delivered again from the checkpoint.
//
// Retries and parking are per event, not watermill middleware over the
// message, because a message holds many events. One message per event cost
// a handoff to the router, a goroutine and an ack for each: 90 % of a
// delivery, and a consumer group was paced by it.
type Router struct {
	*message.Router
	opts   RouterOptions
	log    zerolog.Logger
	poison message.Publisher
}

// HandlerFunc handles one event. The event is shared with the batch it was
// read in: read it, do not change it or keep it.
type HandlerFunc func(ctx context.Context, ev *eventstore.RecordedEvent) error

// NewRouter returns a router that parks poisoned events through
// watermill-sql on pool.
func NewRouter(log zerolog.Logger, pool *pgxpool.Pool, opts RouterOptions) (*Router, error) {
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 5
	}
	if opts.InitialInterval == 0 {
		opts.InitialInterval = 50 * time.Millisecond
	}
	if opts.MaxInterval == 0 {
		opts.MaxInterval = 5 * time.Second
	}
	wlog := NewLogger(log)
	r, err := message.NewRouter(message.RouterConfig{CloseTimeout: 15 * time.Second}, wlog)
	if err != nil {
		return nil, fmt.Errorf("eventbus: router: %w", err)
	}
	pub, err := NewPoisonPublisher(pool, wlog)
	if err != nil {
		return nil, err
	}
	return &Router{Router: r, opts: opts, log: log, poison: pub}, nil
}

// AddConsumer has handler name receive every event of consumer group group
// that sub lets through, in global order.
func (r *Router) AddConsumer(name, group string, sub *Subscriber, fn HandlerFunc) {
	c := &consumer{name: name, group: group, fn: fn, opts: r.opts, poison: r.poison,
		log: r.log.With().Str("handler", name).Logger()}
	r.AddConsumerHandler(name, group, sub, c.handle)
}

// NewPoisonPublisher publishes to the poison table through watermill-sql.
func NewPoisonPublisher(pool *pgxpool.Pool, log watermill.LoggerAdapter) (message.Publisher, error) {
	pub, err := wsql.NewPublisher(wsql.BeginnerFromPgx(pool), wsql.PublisherConfig{
		SchemaAdapter: wsql.DefaultPostgreSQLSchema{},
	}, log)
	if err != nil {
		return nil, fmt.Errorf("eventbus: poison publisher: %w", err)
	}
	return pub, nil
}

// Parked is a message a handler could not process.
type Parked struct {
	UUID     string
	At       time.Time
	Handler  string
	Reason   string
	Metadata map[string]string
	Payload  json.RawMessage
}

// ListParked returns parked messages, newest first.
func ListParked(ctx context.Context, pool *pgxpool.Pool, limit int) ([]Parked, error) {
	rows, err := pool.Query(ctx, `SELECT uuid, created_at, coalesce(payload::text, 'null'), coalesce(metadata::text, '{}')
		FROM watermill_cairn_poison ORDER BY "offset" DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list parked messages: %w", err)
	}
	defer rows.Close()
	var out []Parked
	for rows.Next() {
		var p Parked
		var payload, meta string
		if err := rows.Scan(&p.UUID, &p.At, &payload, &meta); err != nil {
			return nil, fmt.Errorf("list parked messages: %w", err)
		}
		p.Payload = json.RawMessage(payload)
		if err := json.Unmarshal([]byte(meta), &p.Metadata); err != nil {
			return nil, fmt.Errorf("parked message %s: metadata: %w", p.UUID, err)
		}
		p.Handler = p.Metadata[middleware.PoisonedHandlerKey]
		p.Reason = p.Metadata[middleware.ReasonForPoisonedKey]
		out = append(out, p)
	}
	return out, rows.Err()
}
