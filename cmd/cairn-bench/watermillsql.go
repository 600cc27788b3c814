package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
)

// watermillSQLMessages is how many messages the peer's consumer group reads:
// enough for a steady rate, few enough for its pace.
const watermillSQLMessages = 20_000

// watermillSQLPeer is the peer of Cairn's consumer group delivery: the
// stock watermill-sql PostgreSQL publisher fills a topic (its default
// schema and offsets adapter, as its documentation sets them up), and its
// subscriber delivers the backlog to new consumer groups.
type watermillSQLPeer struct {
	db     wsql.Beginner
	schema wsql.DefaultPostgreSQLSchema
}

const watermillSQLTopic = "bench_peer_events"

// newWatermillSQLPeer publishes the backlog the peer's groups read.
func newWatermillSQLPeer(e *env) (*watermillSQLPeer, error) {
	p := &watermillSQLPeer{db: wsql.BeginnerFromPgx(e.admin)}
	pub, err := wsql.NewPublisher(p.db, wsql.PublisherConfig{SchemaAdapter: p.schema, AutoInitializeSchema: true}, watermill.NopLogger{})
	if err != nil {
		return nil, fmt.Errorf("watermill-sql publisher: %w", err)
	}
	defer pub.Close()
	batch := make([]*message.Message, 0, 500)
	for i := range watermillSQLMessages {
		batch = append(batch, message.NewMessage(watermill.NewUUID(),
			message.Payload(`{"seq":`+strconv.Itoa(i)+`,"node":"node-1","status":"online"}`)))
		if len(batch) == cap(batch) {
			if err := pub.Publish(watermillSQLTopic, batch...); err != nil {
				return nil, fmt.Errorf("watermill-sql publish: %w", err)
			}
			batch = batch[:0]
		}
	}
	return p, nil
}

// rate has a new consumer group, group, read the whole backlog, each
// message acked at once, and returns messages delivered per second.
func (p *watermillSQLPeer) rate(ctx context.Context, group string) (float64, error) {
	sub, err := wsql.NewSubscriber(p.db, wsql.SubscriberConfig{
		ConsumerGroup: group, SchemaAdapter: p.schema, OffsetsAdapter: wsql.DefaultPostgreSQLOffsetsAdapter{},
		InitializeSchema: true, PollInterval: 10 * time.Millisecond,
	}, watermill.NopLogger{})
	if err != nil {
		return 0, fmt.Errorf("watermill-sql subscriber: %w", err)
	}
	defer sub.Close()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	msgs, err := sub.Subscribe(sctx, watermillSQLTopic)
	if err != nil {
		return 0, fmt.Errorf("watermill-sql subscribe: %w", err)
	}
	for n := 0; n < watermillSQLMessages; n++ {
		select {
		case m, ok := <-msgs:
			if !ok {
				return 0, fmt.Errorf("watermill-sql subscription ended after %d of %d messages", n, watermillSQLMessages)
			}
			m.Ack()
		case <-sctx.Done():
			return 0, fmt.Errorf("watermill-sql delivered %d of %d messages in 5 minutes", n, watermillSQLMessages)
		}
	}
	return float64(watermillSQLMessages) / time.Since(start).Seconds(), nil
}
