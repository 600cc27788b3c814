package graph

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"cairn/auth"
	"cairn/cluster"
	"cairn/commands/access"
	"cairn/commands/blueprints"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/commands/schedules"
	"cairn/commands/services"
	"cairn/commands/templates"
	"cairn/dispatch"
	"cairn/domain"
	"cairn/eventstore"
	"cairn/graph/live"
	"cairn/joblogs"
	"cairn/nodestats"
	"cairn/projections"
	"cairn/projections/readmodel"
)

// Principal is who a request acts as.
type Principal = auth.Principal

// Authenticator turns a bearer token into a principal (auth.Authenticator).
// A token that does not authenticate is an error that Is
// auth.ErrUnauthenticated; any other error means the check itself failed.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Principal, error)
}

// Projections is the part of the projection runner the API needs.
type Projections interface {
	// WaitFor returns once every read model has applied the event at c.
	WaitFor(ctx context.Context, c eventstore.Cursor) error
}

// ProjectionAdmin is the part of the projection runner administrators
// reach: every projection's lag, and rebuilds.
type ProjectionAdmin interface {
	Status(ctx context.Context) ([]projections.Status, error)
	Rebuild(ctx context.Context, name string) error
}

// EventLog is the event log as the API reads it: the history in global
// order, streams for entities kept only in the log (jobs) and as-of views,
// chain verification, and the subscription that feeds live updates.
// *eventstore.Store implements it.
type EventLog interface {
	live.Log
	ReadAll(ctx context.Context, after eventstore.Cursor, limit int, f eventstore.Filter) ([]eventstore.RecordedEvent, error)
	ReadBefore(ctx context.Context, before eventstore.Cursor, limit int, f eventstore.Filter) ([]eventstore.RecordedEvent, error)
	ExistingStreams(ctx context.Context, streamIDs []string) ([]string, error)
	Event(ctx context.Context, c eventstore.Cursor) (*eventstore.RecordedEvent, error)
	ReadStream(ctx context.Context, streamID string, o eventstore.ReadStreamOptions) ([]eventstore.RecordedEvent, error)
	ReadStreams(ctx context.Context, streamIDs []string) (map[string][]eventstore.RecordedEvent, error)
	Decode(e eventstore.RecordedEvent) (domain.Event, error)
	Registry() *domain.Registry
	Verify(ctx context.Context, streamID string) (eventstore.VerifyReport, error)
	Contains(ctx context.Context, c eventstore.Cursor) (bool, error)
}

var _ EventLog = (*eventstore.Store)(nil)

// Cluster is the replicas' registry (cluster.Registry).
type Cluster interface {
	Self() cluster.Replica
	Replicas(ctx context.Context) ([]cluster.Replica, time.Time, error)
}

// Deps are the API's collaborators.
type Deps struct {
	Log         zerolog.Logger
	Store       EventLog
	Auth        Authenticator
	Projections Projections
	Access      *access.Handlers
	Nodes       *nodes.Handlers
	// Reader queries the read models.
	Reader *readmodel.Reader
	// Templates and Services run catalog and service commands; without
	// them those mutations answer that this server does not run them.
	Templates *templates.Handlers
	Services  *services.Handlers
	// Blueprints applies blueprints through Services.
	Blueprints *blueprints.Handlers
	// ProjectionAdmin serves projection status and rebuilds; nil: those
	// fields answer that this server runs no projections.
	ProjectionAdmin ProjectionAdmin
	// Jobs, Dispatch, Logs and Stats serve jobs, agents, job output and
	// node statistics; without them those fields answer that this server
	// runs no jobs.
	Jobs     *jobs.Handlers
	Dispatch *dispatch.Dispatcher
	Logs     *joblogs.Store
	Stats    *nodestats.Store
	// Schedules serves recurring schedules; without it they answer that
	// this server runs no jobs.
	Schedules *schedules.Handlers
	// Standby, when set, reads the read models on a streaming standby for
	// queries that do not wait for a write; StandbyCheck tells whether it
	// answers (checked every second; the primary serves while it does not).
	Standby      *readmodel.Reader
	StandbyCheck func(context.Context) error
	// Cluster lists the replicas sharing the database; without it the
	// cluster query shows this server alone is unknown.
	Cluster Cluster
	// RequestID returns the id the HTTP middleware gave a request, for
	// logs and INTERNAL errors; nil: no ids.
	RequestID func(context.Context) string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

func (d *Deps) check() error {
	if d.Store == nil || d.Reader == nil || d.Auth == nil || d.Projections == nil || d.Access == nil || d.Nodes == nil {
		return errors.New("graph: Store, Reader, Auth, Projections, Access and Nodes are required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return nil
}
