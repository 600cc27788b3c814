// Package dispatchtest wires the server side of agents and jobs — event
// store, command handlers, authenticator and a running dispatcher — on a
// database pool, for tests and benchmarks.
package dispatchtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/auth"
	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/commandstest"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/commands/schedules"
	"cairn/dispatch"
	"cairn/domain/events"
	"cairn/eventstore"
	"cairn/joblogs"
	"cairn/nodestats"
	"cairn/sal/catalog"
)

// Env is a running dispatcher and everything it was built from.
type Env struct {
	Store      *eventstore.Store
	Pool       *pgxpool.Pool // the pool Store appends through
	Jobs       *jobs.Handlers
	Nodes      *nodes.Handlers
	Access     *access.Handlers
	Schedules  *schedules.Handlers
	Logs       *joblogs.Store
	Stats      *nodestats.Store
	Auth       *auth.Authenticator
	Dispatcher *dispatch.Dispatcher
	// JobStreamReads counts the job streams the job handlers read from the
	// log rather than recalled.
	JobStreamReads *atomic.Int64

	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Start builds the server side on pool and runs the dispatcher until Stop.
func Start(pool *pgxpool.Pool, opts dispatch.Options, log zerolog.Logger) (*Env, error) {
	return StartReplica(pool, opts, nil, nil, log)
}

// StartReplica is Start for one replica of several on the database: its
// dispatcher decides only while owner owns the decisions, and shares its
// agents' connections through presence.
func StartReplica(pool *pgxpool.Pool, opts dispatch.Options, owner dispatch.Owner, presence dispatch.Presence, log zerolog.Logger) (*Env, error) {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	ids := func() string { return uuid.NewString() }
	validator, err := catalog.NewValidator()
	if err != nil {
		return nil, err
	}
	store := eventstore.New(pool, events.Registry(), eventstore.Options{Log: log})
	// Job streams are remembered between commands, as cairnd does.
	reads := &atomic.Int64{}
	jobStreams := commands.NewStreamCache(countingStore{store, reads}, 256)
	e := &Env{
		JobStreamReads: reads,
		Store:          store,
		Pool:           pool,
		Jobs:           jobs.NewHandlers(jobStreams, commands.Clock(clock), ids, validator, commandstest.Sealer()),
		Nodes:          nodes.NewHandlers(store, commands.Clock(clock), ids),
		Access:         access.NewHandlers(store, commands.Clock(clock), ids, access.Options{}),
		Schedules:      schedules.NewHandlers(store, commands.Clock(clock), validator),
		Stats:          nodestats.New(pool, clock),
		Auth:           auth.NewAuthenticator(store, auth.AuthenticatorOptions{CacheTTL: time.Second}),
		done:           make(chan error, 1),
	}
	var d *dispatch.Dispatcher
	e.Logs = joblogs.New(pool, endsFunc(func(ctx context.Context, id string) (bool, error) { return d.JobEnded(ctx, id) }))
	d, err = dispatch.New(dispatch.Deps{
		Store: store, Jobs: e.Jobs, Nodes: e.Nodes, Access: e.Access, Logs: e.Logs, Stats: e.Stats, Log: log,
		Owner: owner, Presence: presence, JobStreams: jobStreams,
	}, opts)
	if err != nil {
		store.Close()
		return nil, err
	}
	e.Dispatcher = d
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { e.done <- d.Run(ctx) }()
	return e, nil
}

// countingStore counts the streams read through it.
type countingStore struct {
	*eventstore.Store
	reads *atomic.Int64
}

func (c countingStore) ReadStream(ctx context.Context, id string, o eventstore.ReadStreamOptions) ([]eventstore.RecordedEvent, error) {
	c.reads.Add(1)
	return c.Store.ReadStream(ctx, id, o)
}

type endsFunc func(context.Context, string) (bool, error)

func (f endsFunc) JobEnded(ctx context.Context, id string) (bool, error) { return f(ctx, id) }

// Stop stops the dispatcher and closes the store; it returns the error that
// stopped the dispatcher early, if any.
func (e *Env) Stop() error {
	e.once.Do(func() {
		e.cancel()
		err := <-e.done
		e.Store.Close()
		if err != nil && err != context.Canceled {
			e.err = fmt.Errorf("dispatcher: %w", err)
		}
	})
	return e.err
}

// WaitReady waits until the dispatcher has caught up with the log.
func (e *Env) WaitReady(ctx context.Context) error {
	for !e.Dispatcher.Ready() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-e.done:
			e.done <- err
			return fmt.Errorf("dispatcher stopped: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// Operator is the metadata of commands a test sends as an operator.
var Operator = commands.Meta{Actor: "operator"}
