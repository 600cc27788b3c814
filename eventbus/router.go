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

// NewRouter returns a watermill router with Cairn's middleware, outermost
// first: the poison queue (parks a message whose retries are exhausted, so
// one bad event never stops a handler; one whose retries a shutdown cut
// short is delivered again instead), retry with exponential backoff, and
// panic recovery (a panic becomes an error the retry sees). Handlers read
// an event's correlation id from the event; they publish no messages, so
// watermill's middleware that copies it onto published ones is not used.
func NewRouter(log zerolog.Logger, pool *pgxpool.Pool, opts RouterOptions) (*message.Router, error) {
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
	poison, err := middleware.PoisonQueueWithFilter(pub, PoisonTopic, poisonous)
	if err != nil {
		return nil, fmt.Errorf("eventbus: poison queue: %w", err)
	}
	r.AddMiddleware(
		poison,
		retry(opts, wlog),
		middleware.Recoverer,
	)
	return r, nil
}

// NewPoisonPublisher publishes to the poison table through watermill-sql.
// A parked event's message is described first (see Describe): delivery
// leaves that to the few messages that need it.
func NewPoisonPublisher(pool *pgxpool.Pool, log watermill.LoggerAdapter) (message.Publisher, error) {
	pub, err := wsql.NewPublisher(wsql.BeginnerFromPgx(pool), wsql.PublisherConfig{
		SchemaAdapter: wsql.DefaultPostgreSQLSchema{},
	}, log)
	if err != nil {
		return nil, fmt.Errorf("eventbus: poison publisher: %w", err)
	}
	return describingPublisher{pub}, nil
}

// describingPublisher describes the event messages it publishes.
type describingPublisher struct{ message.Publisher }

func (p describingPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		Describe(m)
	}
	return p.Publisher.Publish(topic, msgs...)
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
