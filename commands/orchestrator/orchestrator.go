// Package orchestrator drives services through their lifecycle: it reacts to
// the requests recorded on a service's stream (register, start, stop,
// remove), walks the service's execution graph through the plugins, and
// records every step as events on the service's and its resources' streams.
//
// It is a process manager in the sense of ARCHITECTURE.md: it keeps nothing
// that matters in memory. Every pass over a service loads the service and its
// resources from the log and derives the next step from their states, so
// after a crash (or a restart of cairnd) it carries on from the last step
// that committed; plugin calls are idempotent by the resource's
// deterministic id, so a call repeated because its outcome was not yet
// recorded does no harm.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/service"
	"cairn/eventbus"
	"cairn/eventstore"
	"cairn/plugins"
	"cairn/scheduler"
)

// Actor is the actor recorded on the orchestrator's events.
const Actor = "system:orchestrator"

// DefaultGroup is the consumer group the orchestrator subscribes as.
const DefaultGroup = "orchestrator"

// triggers are the service events that leave a service in a state where the
// orchestrator has work to do.
var triggers = []string{
	service.RegistrationRequested{}.EventType(),
	service.RegistrationRetried{}.EventType(),
	service.RepairRequested{}.EventType(),
	service.RegistrationFailed{}.EventType(),
	service.StartRequested{}.EventType(),
	service.StopRequested{}.EventType(),
	service.RemovalRequested{}.EventType(),
	service.UpdateRequested{}.EventType(),
	service.UpdateFailed{}.EventType(),
}

// Step describes one committed step: the events one append recorded.
type Step struct {
	ServiceID string
	Streams   []string // stream ids written
	Events    []string // event types, in order
	Cursor    eventstore.Cursor
}

// Store is the event log as the orchestrator uses it: the services' and
// resources' streams, appends of each step, and the bus it follows.
// *eventstore.Store implements it.
type Store interface {
	eventbus.Log
	ReadStream(ctx context.Context, streamID string, o eventstore.ReadStreamOptions) ([]eventstore.RecordedEvent, error)
	Decode(e eventstore.RecordedEvent) (domain.Event, error)
	Append(ctx context.Context, req eventstore.AppendRequest) (eventstore.AppendResult, error)
	StreamsEndingWith(ctx context.Context, streamType string, eventTypes []string) ([]string, error)
}

// Scheduler decides allocations; the orchestrator appends them with the
// resource's events.
type Scheduler interface {
	Reserve(ctx context.Context, r scheduler.Request) (*scheduler.Decision, error)
	Release(ctx context.Context, nodeID, resourceID string) (*scheduler.Decision, error)
}

// Config holds the orchestrator's dependencies and limits.
type Config struct {
	Store Store
	// Pool is the database of the bus's poison queue, where an event the
	// orchestrator keeps failing on is parked.
	Pool    *pgxpool.Pool
	Plugins *plugins.Registry
	// Variables recovers the values a service was registered with (sensitive
	// ones are recorded encrypted). Nil reads them as plain JSON.
	Variables VariableDecoder
	// Clock stamps the orchestrator's events; nil means time.Now.
	Clock commands.Clock
	Log   zerolog.Logger
	// Parallelism bounds the plugin calls in flight for one service (the
	// instances of one level run in parallel up to this); default 8.
	Parallelism int
	// MaxServices bounds the services driven at once; default 64.
	MaxServices int
	// CallTimeout bounds one plugin call; default 10 minutes.
	CallTimeout time.Duration
	// Group is the consumer group's name; default DefaultGroup.
	Group string
	// Router tunes the retry of the event handler.
	Router eventbus.RouterOptions
	// RepairFailures failed repairs within RepairWindow degrade a service;
	// defaults 3 and 10 minutes.
	RepairFailures int
	RepairWindow   time.Duration
	// Scheduler chooses the node of every resource whose type is placed
	// (see plugins.ResourceType.Placed) and records the allocation; nil
	// leaves the choice to the plugin.
	Scheduler Scheduler
	// OnStep, when set, runs after each step commits, on the goroutine that
	// made it. Metrics and tests (which stop the orchestrator at a chosen
	// step) use it; it must not block for long.
	OnStep func(Step)
}

// Orchestrator is the process manager. Build it with New and run it with Run.
type Orchestrator struct {
	cfg   Config
	store Store
	reg   *plugins.Registry
	log   zerolog.Logger
	slots chan struct{} // MaxServices

	mu     sync.Mutex
	active map[string]bool // a worker is driving the service
	again  map[string]bool // the service was kicked while its worker ran
	wg     sync.WaitGroup
}

// New checks the configuration and returns an orchestrator.
func New(cfg Config) (*Orchestrator, error) {
	if cfg.Store == nil || cfg.Pool == nil {
		return nil, errors.New("orchestrator: no event store or database pool")
	}
	if cfg.Plugins == nil {
		return nil, errors.New("orchestrator: no plugin registry")
	}
	if cfg.Variables == nil {
		cfg.Variables = PlainVariables
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 8
	}
	if cfg.MaxServices <= 0 {
		cfg.MaxServices = 64
	}
	if cfg.RepairFailures <= 0 {
		cfg.RepairFailures = 3
	}
	if cfg.RepairWindow <= 0 {
		cfg.RepairWindow = 10 * time.Minute
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 10 * time.Minute
	}
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	return &Orchestrator{
		cfg:    cfg,
		store:  cfg.Store,
		reg:    cfg.Plugins,
		log:    cfg.Log.With().Str("component", "orchestrator").Logger(),
		slots:  make(chan struct{}, cfg.MaxServices),
		active: map[string]bool{},
		again:  map[string]bool{},
	}, nil
}

// Run resumes every service left in the middle of a step, then follows the
// log until ctx ends, driving each service whose request it sees. It returns
// once every worker has stopped; work cut short resumes at the next Run.
func (o *Orchestrator) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer o.wg.Wait()

	router, err := eventbus.NewRouter(o.log, o.cfg.Pool, o.cfg.Router)
	if err != nil {
		return err
	}
	sub := eventbus.NewSubscriber(o.store, eventbus.SubscriberOptions{
		Filter: eventstore.Filter{StreamTypes: []string{domain.ServiceStream}, EventTypes: triggers},
		Log:    o.log,
	})
	defer sub.Close()
	// The handler only hands the service to its worker and acks: a
	// deployment can take minutes and must not hold up the others, and the
	// start-up scan below (not the checkpoint) is what guarantees that work
	// interrupted by a crash is picked up again.
	router.AddConsumer("orchestrator", o.cfg.Group, sub,
		func(_ context.Context, ev *eventstore.RecordedEvent) error {
			id, ok := domain.EntityID(domain.ServiceStream, ev.StreamID)
			if !ok {
				return fmt.Errorf("orchestrator: event %d is on stream %q, not a service stream", ev.Position, ev.StreamID)
			}
			o.kick(ctx, id)
			return nil
		})

	pending, err := o.inFlight(ctx)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		o.log.Info().Int("services", len(pending)).Msg("resuming services left in the middle of a step")
	}
	for _, id := range pending {
		o.kick(ctx, id)
	}
	err = router.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		// The router closes once its handler stopped: returning an error
		// has whoever runs the orchestrator start it again.
		err = errors.New("orchestrator: its event subscription ended")
	}
	return err
}

// inFlight lists the services whose last event left them with work to do.
// The event that put a service in such a state is its last one until the
// orchestrator records the outcome, so the last event type is enough.
func (o *Orchestrator) inFlight(ctx context.Context) ([]string, error) {
	streams, err := o.store.StreamsEndingWith(ctx, domain.ServiceStream, triggers)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: find services in the middle of a step: %w", err)
	}
	ids := make([]string, len(streams))
	for i, stream := range streams {
		ids[i] = domain.EntityIDOf(domain.ServiceStream, stream)
	}
	return ids, nil
}

// kick makes sure a worker drives the service: it starts one, or, when one
// is running, asks it for another pass so that a request recorded during its
// pass is not missed.
func (o *Orchestrator) kick(ctx context.Context, id string) {
	o.mu.Lock()
	if o.active[id] {
		o.again[id] = true
		o.mu.Unlock()
		return
	}
	o.active[id] = true
	o.mu.Unlock()
	o.wg.Go(func() { o.work(ctx, id) })
}

func (o *Orchestrator) work(ctx context.Context, id string) {
	backoff := 100 * time.Millisecond
	for {
		select {
		case o.slots <- struct{}{}:
		case <-ctx.Done():
			o.finish(id)
			return
		}
		err := o.drive(ctx, id)
		<-o.slots
		if ctx.Err() != nil {
			o.finish(id)
			return
		}
		if err != nil {
			// The log or the database failed us, not the deployment: try the
			// same pass again, derived afresh from the log.
			o.log.Warn().Err(err).Str("service", id).Dur("retry_in", backoff).Msg("service pass failed; retrying")
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				o.finish(id)
				return
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		o.mu.Lock()
		if o.again[id] {
			delete(o.again, id)
			o.mu.Unlock()
			continue
		}
		delete(o.active, id)
		o.mu.Unlock()
		return
	}
}

func (o *Orchestrator) finish(id string) {
	o.mu.Lock()
	delete(o.active, id)
	delete(o.again, id)
	o.mu.Unlock()
}

// Drive runs passes over one service until it has nothing left to do, in the
// caller's goroutine. Run does this for every service it sees; Drive is for
// callers that want one service settled now (tools, tests).
func (o *Orchestrator) Drive(ctx context.Context, serviceID string) error {
	return o.drive(ctx, serviceID)
}
