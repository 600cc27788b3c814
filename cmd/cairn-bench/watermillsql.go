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

// watermillSQLRate is the peer of Cairn's consumer group delivery: the stock
// watermill-sql PostgreSQL publisher fills a topic (its default schema and
// offsets adapter, as its documentation sets them up), then its subscriber
// delivers the backlog to one new consumer group, each message acked at
// once. It returns messages delivered per second.
func watermillSQLRate(ctx context.Context, e *env) (float64, error) {
	db := wsql.BeginnerFromPgx(e.admin)
	log := watermill.NopLogger{}
	schema := wsql.DefaultPostgreSQLSchema{}
	pub, err := wsql.NewPublisher(db, wsql.PublisherConfig{SchemaAdapter: schema, AutoInitializeSchema: true}, log)
	if err != nil {
		return 0, fmt.Errorf("watermill-sql publisher: %w", err)
	}
	defer pub.Close()
	const topic = "bench_peer_events"
	batch := make([]*message.Message, 0, 500)
	for i := range watermillSQLMessages {
		batch = append(batch, message.NewMessage(watermill.NewUUID(),
			message.Payload(`{"seq":`+strconv.Itoa(i)+`,"node":"node-1","status":"online"}`)))
		if len(batch) == cap(batch) {
			if err := pub.Publish(topic, batch...); err != nil {
				return 0, fmt.Errorf("watermill-sql publish: %w", err)
			}
			batch = batch[:0]
		}
	}
	sub, err := wsql.NewSubscriber(db, wsql.SubscriberConfig{
		ConsumerGroup: "bench", SchemaAdapter: schema, OffsetsAdapter: wsql.DefaultPostgreSQLOffsetsAdapter{},
		InitializeSchema: true, PollInterval: 10 * time.Millisecond,
	}, log)
	if err != nil {
		return 0, fmt.Errorf("watermill-sql subscriber: %w", err)
	}
	defer sub.Close()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	msgs, err := sub.Subscribe(sctx, topic)
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
