package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/rs/zerolog"

	"cairn/domain"
	"cairn/eventbus"
	"cairn/eventstore"
)

func startRouter(ctx context.Context, e *env, group string, h func(context.Context, *eventstore.RecordedEvent) error) (func(), error) {
	router, err := eventbus.NewRouter(zerolog.Nop(), e.app, eventbus.RouterOptions{})
	if err != nil {
		return nil, err
	}
	sub := eventbus.NewSubscriber(e.store, eventbus.SubscriberOptions{})
	router.AddConsumer(group, group, sub, h)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = router.Run(rctx) }()
	<-router.Running()
	return func() { cancel(); <-done; _ = sub.Close() }, nil
}

var _ message.Subscriber = (*eventbus.Subscriber)(nil)

// benchConsumerGroup delivers the whole backlog to a new consumer group
// through the watermill router, and the stock watermill-sql subscriber
// delivers its backlog to one of its own (watermillSQLPeer): three passes
// each, alternating, with new groups each time, and the medians compared.
// A pass takes about a second, where a pause of the machine's would move
// one figure by half: each side gets the same number of chances.
func benchConsumerGroup(ctx context.Context, e *env) (result, error) {
	head, err := e.store.Head(ctx)
	if err != nil {
		return nil, err
	}
	if head == eventstore.Start {
		return nil, fmt.Errorf("the log is empty: run the append benchmark before this one")
	}
	peer, err := newWatermillSQLPeer(e)
	if err != nil {
		return nil, err
	}
	var rates, peerRates []float64
	var events int64
	for pass := range 3 {
		rate, n, err := deliverBacklog(ctx, e, "bench-backlog-"+strconv.Itoa(pass), head)
		if err != nil {
			return nil, err
		}
		rates, events = append(rates, rate), n
		peerRate, err := peer.rate(ctx, "bench-"+strconv.Itoa(pass))
		if err != nil {
			return nil, err
		}
		peerRates = append(peerRates, peerRate)
	}
	e.log.Info().Floats64("consumer_group_per_s", rates).Floats64("watermill_sql_per_s", peerRates).Msg("consumer group passes")
	rate, peerRate := median(rates), median(peerRates)
	return result{
		"consumer_group_events_per_s":           round(rate, 0),
		"consumer_group_events":                 events,
		"watermill_sql_consumer_group_per_s":    round(peerRate, 0),
		"consumer_group_vs_watermill_sql_ratio": round(rate/peerRate, 1),
	}, nil
}

// deliverBacklog has a new consumer group read the log up to head and
// returns its rate and how many events it handled.
func deliverBacklog(ctx context.Context, e *env, group string, head eventstore.Cursor) (float64, int64, error) {
	var n atomic.Int64
	reached := make(chan struct{})
	var once sync.Once
	start := time.Now()
	stop, err := startRouter(ctx, e, group, func(_ context.Context, ev *eventstore.RecordedEvent) error {
		n.Add(1)
		if !ev.Cursor().Less(head) {
			once.Do(func() { close(reached) })
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	select {
	case <-reached:
	case <-time.After(5 * time.Minute):
		return 0, 0, fmt.Errorf("consumer group did not reach the head in 5 minutes (%d events)", n.Load())
	}
	return float64(n.Load()) / time.Since(start).Seconds(), n.Load(), nil
}

// benchCommitToHandler appends 2,000 events/s and measures, per event, the
// time from its append returning (committed) to its handler running.
func benchCommitToHandler(ctx context.Context, e *env) (result, error) {
	const rate = 2000
	duration := 2 * e.cfg.duration
	if head, err := e.store.Head(ctx); err != nil {
		return nil, err
	} else if err := e.store.SaveCheckpoint(ctx, eventbus.CheckpointName("bench-live"), head); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	committed := map[int64]time.Time{}
	received := map[int64]time.Time{}
	stop, err := startRouter(ctx, e, "bench-live", func(_ context.Context, ev *eventstore.RecordedEvent) error {
		now := time.Now()
		mu.Lock()
		received[ev.Position] = now
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	defer stop()

	var sent atomic.Int64
	errs := make(chan error, 1)
	elapsed := openLoop(ctx, rate, duration, func(n int64) bool {
		res, err := e.store.Append(ctx, eventstore.AppendRequest{Streams: []eventstore.StreamAppend{{
			StreamID: "live-" + strconv.FormatInt(n%500, 10), StreamType: benchStreamType, Expected: eventstore.AnyVersion,
			Events: []domain.Event{benchEvent{Seq: n, Node: "n", Status: "online"}},
		}}})
		if err != nil {
			select {
			case errs <- err:
			default:
			}
			return false
		}
		at := time.Now()
		mu.Lock()
		committed[res.Cursor.Position] = at
		mu.Unlock()
		sent.Add(1)
		return true
	})
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		done := len(received) >= len(committed)
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var lat []float64
	missing := 0
	for pos, c := range committed {
		r, ok := received[pos]
		if !ok {
			missing++
			continue
		}
		// The handler may run before Append's caller is scheduled again.
		lat = append(lat, max(0, r.Sub(c).Seconds()*1000))
	}
	if missing > 0 {
		return nil, fmt.Errorf("%d committed events never reached the handler", missing)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return round(lat[int(p*float64(len(lat)-1))], 2) }
	return result{
		"commit_to_handler_p50_ms":     pct(0.50),
		"commit_to_handler_p99_ms":     pct(0.99),
		"commit_to_handler_rate_per_s": round(float64(sent.Load())/elapsed.Seconds(), 0),
	}, nil
}
