package graph

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"cairn/auth"
	"cairn/commands/access"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/commands/services"
	"cairn/commands/templates"
	"cairn/dispatch"
	"cairn/eventstore"
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

// Deps are the API's collaborators.
type Deps struct {
	Log         zerolog.Logger
	Store       *eventstore.Store
	Auth        Authenticator
	Projections Projections
	Access      *access.Handlers
	Nodes       *nodes.Handlers
	// Reader queries the read models; nil: the live read models of Store's
	// database.
	Reader *readmodel.Reader
	// Templates and Services run catalog and service commands; without
	// them those mutations answer that this server does not run them.
	Templates *templates.Handlers
	Services  *services.Handlers
	// ProjectionAdmin serves projection status and rebuilds; nil: those
	// fields answer that this server runs no projections.
	ProjectionAdmin ProjectionAdmin
	// Jobs, Dispatch, Logs and Stats serve jobs, agents, job output and
	// node statistics; without them those fields answer that this server
	// runs no jobs.
	Jobs     *jobs.Handlers
	Dispatch *dispatch.Dispatcher
	Logs     *dispatch.Logs
	Stats    *dispatch.Stats
	// Schedules serves recurring schedules; without it they answer that
	// this server runs no jobs.
	Schedules *dispatch.Schedules
	// RequestID returns the id the HTTP middleware gave a request, for
	// logs and INTERNAL errors; nil: no ids.
	RequestID func(context.Context) string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

func (d *Deps) check() error {
	if d.Store == nil || d.Auth == nil || d.Projections == nil || d.Access == nil || d.Nodes == nil {
		return errors.New("graph: Store, Auth, Projections, Access and Nodes are required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Reader == nil {
		d.Reader = readmodel.New(d.Store.Pool())
	}
	return nil
}

func (s *Server) requestID(ctx context.Context) string {
	if s.deps.RequestID == nil {
		return ""
	}
	return s.deps.RequestID(ctx)
}
