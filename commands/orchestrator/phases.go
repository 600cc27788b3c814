package orchestrator

import (
	"cairn/domain"
	"cairn/domain/service"
	"context"
	"encoding/json"
	"time"
)

// phase is one step of a service's lifecycle: the way it walks the
// execution graph, what it does to each resource, and how the service
// records the outcome.
type phase struct {
	// reverse walks dependents before what they depend on (stop, destroy).
	reverse bool
	// plan makes sure every resource is planned before the walk (register).
	plan bool
	// destroys goes on through every level past failures, so that as much
	// as possible is destroyed, and the failure lists what remains.
	destroys bool
	// step brings one resource to where the phase wants it.
	step func(o *Orchestrator, ctx context.Context, d *deployment, t *tracked) (*failure, error)
	// complete records the phase's success; outputs are the service's
	// outputs for the phases that produce them (nil otherwise).
	complete func(s service.Service, outputs json.RawMessage, at time.Time) ([]domain.Event, error)
	// fail records the phase's failure: the cause, and for destroying
	// phases the resources that remain.
	fail func(o *Orchestrator, s service.Service, remaining []string, cause string, at time.Time) ([]domain.Event, error)
	// outputs says complete gets the service's outputs.
	outputs bool
	// converge moves the resources from the revision the service leaves to
	// the one it declares (update, revert).
	converge bool
}

// phases are the busy statuses of a service and the phase each drives.
var phases = map[service.Status]phase{
	service.StatusRegistering: {
		plan: true, outputs: true, step: (*Orchestrator).create,
		complete: func(s service.Service, out json.RawMessage, at time.Time) ([]domain.Event, error) {
			return s.CompleteRegistration(service.CompleteRegistration{ServiceID: s.ID, Outputs: out, At: at})
		},
		fail: func(_ *Orchestrator, s service.Service, _ []string, why string, at time.Time) ([]domain.Event, error) {
			return s.FailRegistration(service.FailRegistration{ServiceID: s.ID, Cause: why, At: at})
		},
	},
	service.StatusStarting: {
		outputs: true, step: (*Orchestrator).startOne,
		complete: func(s service.Service, out json.RawMessage, at time.Time) ([]domain.Event, error) {
			return s.CompleteStart(service.CompleteStart{ServiceID: s.ID, Outputs: out, At: at})
		},
		fail: func(_ *Orchestrator, s service.Service, _ []string, why string, at time.Time) ([]domain.Event, error) {
			return s.FailStart(service.FailStart{ServiceID: s.ID, Cause: why, At: at})
		},
	},
	service.StatusStopping: {
		reverse: true, step: (*Orchestrator).stopOne,
		complete: func(s service.Service, _ json.RawMessage, at time.Time) ([]domain.Event, error) {
			return s.CompleteStop(service.CompleteStop{ServiceID: s.ID, At: at})
		},
		fail: func(_ *Orchestrator, s service.Service, _ []string, why string, at time.Time) ([]domain.Event, error) {
			return s.FailStop(service.FailStop{ServiceID: s.ID, Cause: why, At: at})
		},
	},
	service.StatusRollingBack: {
		reverse: true, destroys: true, step: (*Orchestrator).destroy,
		complete: func(s service.Service, _ json.RawMessage, at time.Time) ([]domain.Event, error) {
			return s.CompleteRollback(service.CompleteRollback{ServiceID: s.ID, At: at})
		},
		fail: func(_ *Orchestrator, s service.Service, remaining []string, why string, at time.Time) ([]domain.Event, error) {
			return s.FailRollback(service.FailRollback{ServiceID: s.ID, Remaining: remaining, Cause: why, At: at})
		},
	},
	service.StatusRemoving: {
		reverse: true, destroys: true, step: (*Orchestrator).destroy,
		complete: func(s service.Service, _ json.RawMessage, at time.Time) ([]domain.Event, error) {
			return s.CompleteRemoval(service.CompleteRemoval{ServiceID: s.ID, At: at})
		},
		fail: func(_ *Orchestrator, s service.Service, remaining []string, why string, at time.Time) ([]domain.Event, error) {
			return s.FailRemoval(service.FailRemoval{ServiceID: s.ID, Remaining: remaining, Cause: why, At: at})
		},
	},
	service.StatusUpdating: {
		converge: true, outputs: true,
		complete: func(s service.Service, out json.RawMessage, at time.Time) ([]domain.Event, error) {
			return s.CompleteUpdate(s.ID, out, at)
		},
		fail: func(_ *Orchestrator, s service.Service, _ []string, why string, at time.Time) ([]domain.Event, error) {
			return s.FailUpdate(s.ID, why, at)
		},
	},
	service.StatusReverting: {
		converge: true, outputs: true,
		complete: func(s service.Service, out json.RawMessage, at time.Time) ([]domain.Event, error) {
			return s.CompleteRevert(s.ID, out, at)
		},
		fail: func(_ *Orchestrator, s service.Service, _ []string, why string, at time.Time) ([]domain.Event, error) {
			return s.FailRevert(s.ID, why, at)
		},
	},
	service.StatusRepairing: {
		step: (*Orchestrator).repairOne, outputs: true,
		complete: func(s service.Service, out json.RawMessage, at time.Time) ([]domain.Event, error) {
			return s.CompleteRepair(s.ID, out, at)
		},
		fail: func(o *Orchestrator, s service.Service, _ []string, why string, at time.Time) ([]domain.Event, error) {
			return s.FailRepair(service.FailRepair{ServiceID: s.ID, Cause: why, MaxFailures: o.cfg.RepairFailures,
				Window: o.cfg.RepairWindow, At: at})
		},
	},
}
