// Package service holds the service aggregate: one deployment of a catalog
// template for a tenant, driven through its lifecycle by the orchestrator.
package service

import (
	"slices"
	"time"

	"cairn/domain"
)

// Status is where a service is in its life.
type Status string

const (
	StatusRegistering           Status = "registering" // resources being created
	StatusRegistered            Status = "registered"  // resources created, not started
	StatusStarting              Status = "starting"
	StatusRunning               Status = "running"
	StatusStopping              Status = "stopping"
	StatusStopped               Status = "stopped"
	StatusRemoving              Status = "removing"
	StatusRemoved               Status = "removed" // final: nothing left
	StatusFailed                Status = "failed"  // see FailedIn
	StatusRollingBack           Status = "rolling_back"
	StatusRollbackFailed        Status = "rollback_failed"         // a failed registration left resources behind
	StatusManualCleanupRequired Status = "manual_cleanup_required" // a removal left resources behind
	StatusRepairing             Status = "repairing"               // drifted resources being made again
	StatusDegraded              Status = "degraded"                // repairs kept failing; see Cause
	StatusUpdating              Status = "updating"                // resources moving to a new revision
	StatusReverting             Status = "reverting"               // a failed update going back; see Cause
)

// Statuses lists every status.
var Statuses = []Status{
	StatusRegistering, StatusRegistered, StatusStarting, StatusRunning, StatusStopping,
	StatusStopped, StatusRemoving, StatusRemoved, StatusFailed, StatusRollingBack,
	StatusRollbackFailed, StatusManualCleanupRequired, StatusRepairing, StatusDegraded,
	StatusUpdating, StatusReverting,
}

// Phase names the lifecycle step a failed service failed in.
type Phase string

const (
	PhaseRegister Phase = "register" // registration failed and was rolled back: no resources exist
	PhaseStart    Phase = "start"
	PhaseStop     Phase = "stop"
	PhaseUpdate   Phase = "update" // an update failed and so did going back
)

// Phases lists every phase a service can fail in.
var Phases = []Phase{PhaseRegister, PhaseStart, PhaseStop, PhaseUpdate}

// Service is the state of one service, folded from its events.
type Service struct {
	ID              string
	TenantID        string
	Name            string
	TemplateName    string
	TemplateVersion string
	// Blueprint names the blueprint that declared the service ("" when
	// none did); StartWhenRegistered has its registration end started.
	Blueprint           string
	StartWhenRegistered bool
	Variables           []byte // JSON, sensitive values encrypted
	ResourceIDs         []string
	Outputs             []byte // JSON, as of the last registration or start
	Status              Status
	FailedIn            Phase    // set while failed
	Cause               string   // why the last step failed
	Remaining           []string // resources a failed rollback or removal left behind
	// RepairFrom is the settled status a repair returns to; Repairing the
	// resources it makes again; RepairFailures when repairs failed since
	// the last success.
	RepairFrom     Status
	Repairing      []string
	RepairFailures []time.Time
	// Revision numbers the declared template version and variables (1 at
	// registration); LastRevision is the highest number given, failed
	// updates included; Leaving is the revision an update or its revert
	// moves away from; UpdateFrom the settled status it returns to.
	Revision     int
	LastRevision int
	Leaving      *Revision
	UpdateFrom   Status
	RequestedAt  time.Time
	UpdatedAt    time.Time
}

// Exists reports whether the service has been registered.
func (s Service) Exists() bool { return s.Status != "" }

// Apply folds one event into the state. Unknown events are ignored.
func (s *Service) Apply(e domain.Event) {
	if s.applyRepair(e) || s.applyUpdate(e) {
		return
	}
	switch e := e.(type) {
	case RegistrationRequested:
		*s = Service{
			ID: e.ServiceID, TenantID: e.TenantID, Name: e.Name,
			TemplateName: e.TemplateName, TemplateVersion: e.TemplateVersion,
			Variables: slices.Clone([]byte(e.Variables)), ResourceIDs: slices.Clone(e.ResourceIDs),
			Blueprint: e.Blueprint, StartWhenRegistered: e.Start,
			Revision: 1, LastRevision: 1, Status: StatusRegistering, RequestedAt: e.At, UpdatedAt: e.At,
		}
	case Registered:
		s.enter(StatusRegistered, e.At)
		s.setOutputs(e.Outputs)
	case RegistrationFailed:
		s.enter(StatusRollingBack, e.At)
		s.Cause = e.Cause
	case RolledBack:
		s.enter(StatusFailed, e.At)
		s.FailedIn = PhaseRegister
	case RegistrationRetried:
		s.enter(StatusRegistering, e.At)
		s.Cause = ""
	case RollbackFailed:
		s.enter(StatusRollbackFailed, e.At)
		s.Remaining = slices.Clone(e.Remaining)
		s.Cause = e.Cause
	case StartRequested:
		s.enter(StatusStarting, e.At)
		s.Cause = ""
	case Started:
		s.enter(StatusRunning, e.At)
		s.setOutputs(e.Outputs)
	case StartFailed:
		s.enter(StatusFailed, e.At)
		s.FailedIn = PhaseStart
		s.Cause = e.Cause
	case StopRequested:
		s.enter(StatusStopping, e.At)
		s.Cause = ""
	case Stopped:
		s.enter(StatusStopped, e.At)
	case StopFailed:
		s.enter(StatusFailed, e.At)
		s.FailedIn = PhaseStop
		s.Cause = e.Cause
	case RemovalRequested:
		s.enter(StatusRemoving, e.At)
		s.Cause = ""
	case Removed:
		s.enter(StatusRemoved, e.At)
		s.Remaining = nil
		s.Outputs = nil
	case RemovalFailed:
		s.enter(StatusManualCleanupRequired, e.At)
		s.Remaining = slices.Clone(e.Remaining)
		s.Cause = e.Cause
	case CleanedUp:
		s.enter(StatusRemoved, e.At)
		s.Remaining = nil
		s.Outputs = nil
	}
}

// enter moves to a status; leaving failed forgets the phase it failed in.
func (s *Service) enter(status Status, at time.Time) {
	s.Status = status
	s.FailedIn = ""
	s.UpdatedAt = at
}

// setOutputs keeps the last outputs when a step reports none.
func (s *Service) setOutputs(outputs []byte) {
	if len(outputs) > 0 {
		s.Outputs = slices.Clone(outputs)
	}
}
