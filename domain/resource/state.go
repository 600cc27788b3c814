// Package resource holds the resource aggregate: one node of a service's
// execution graph, created, started, stopped and destroyed by a plugin.
package resource

import (
	"slices"
	"time"

	"cairn/domain"
	"cairn/domain/placement"
)

// Status is where a resource is in its life.
type Status string

const (
	StatusPending    Status = "pending" // planned, no plugin call yet
	StatusCreating   Status = "creating"
	StatusCreated    Status = "created"
	StatusStarting   Status = "starting"
	StatusRunning    Status = "running"
	StatusStopping   Status = "stopping"
	StatusStopped    Status = "stopped"
	StatusUpdating   Status = "updating" // changed in place to a new revision
	StatusDestroying Status = "destroying"
	StatusDestroyed  Status = "destroyed" // final: nothing left
	StatusFailed     Status = "failed"    // see FailedIn
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{
	StatusPending, StatusCreating, StatusCreated, StatusStarting, StatusRunning,
	StatusStopping, StatusStopped, StatusUpdating, StatusDestroying, StatusDestroyed, StatusFailed,
}

// Phase names the plugin call a failed resource failed in.
type Phase string

const (
	PhaseCreate  Phase = "create"
	PhaseStart   Phase = "start"
	PhaseStop    Phase = "stop"
	PhaseUpdate  Phase = "update"
	PhaseDestroy Phase = "destroy"
)

// Phases lists every phase a resource can fail in.
var Phases = []Phase{PhaseCreate, PhaseStart, PhaseStop, PhaseUpdate, PhaseDestroy}

// phaseOf maps each in-flight status to the plugin call under way.
var phaseOf = map[Status]Phase{
	StatusCreating:   PhaseCreate,
	StatusStarting:   PhaseStart,
	StatusStopping:   PhaseStop,
	StatusUpdating:   PhaseUpdate,
	StatusDestroying: PhaseDestroy,
}

// DriftKind is how what is observed of a resource differs from what its
// service wants.
type DriftKind string

const (
	DriftMissing    DriftKind = "missing"    // the plugin says it does not exist
	DriftNodeDown   DriftKind = "node_down"  // the node it is on is down or decommissioned
	DriftUnobserved DriftKind = "unobserved" // the plugin could not be asked
)

// DriftKinds lists every kind of drift.
var DriftKinds = []DriftKind{DriftMissing, DriftNodeDown, DriftUnobserved}

// Repairable reports whether the drift is repaired by making the resource
// again (an unobserved resource may well be fine).
func (k DriftKind) Repairable() bool { return k == DriftMissing || k == DriftNodeDown }

// Resource is the state of one resource, folded from its events.
type Resource struct {
	ID         string
	ServiceID  string
	Name       string // the instance's name in the descriptor; "" for old ones
	Plugin     string
	Type       string
	Properties []byte // JSON
	DependsOn  []string
	// Revision is the service revision whose properties the resource has.
	Revision int
	// Checks are its health checks; Health the last result of each.
	Checks []HealthCheck
	Health map[string]CheckResult
	// UpdateFrom is the status an update returns the resource to.
	UpdateFrom Status
	Outputs    []byte // JSON, the plugin's latest outputs
	Status     Status
	FailedIn   Phase  // set while failed
	Error      string // the last failure
	// NodeID is the node the scheduler allocated the resource's request
	// on, until the allocation ends; empty for resources not placed.
	NodeID  string
	Request placement.Resources
	// Drift is what was last observed to differ, empty when nothing does.
	Drift       DriftKind
	DriftDetail string
	DriftSince  time.Time
	PlannedAt   time.Time
	UpdatedAt   time.Time
}

// Exists reports whether the resource has been planned.
func (r Resource) Exists() bool { return r.Status != "" }

// Apply folds one event into the state. Unknown events are ignored.
func (r *Resource) Apply(e domain.Event) {
	if r.applyUpdate(e) || r.applyHealth(e) {
		return
	}
	switch e := e.(type) {
	case Planned:
		*r = Resource{
			ID: e.ResourceID, ServiceID: e.ServiceID, Name: e.Name, Plugin: e.Plugin, Type: e.Type,
			Properties: slices.Clone([]byte(e.Properties)), DependsOn: slices.Clone(e.DependsOn),
			Revision: max(e.Revision, 1), Checks: slices.Clone(e.Checks), Status: StatusPending, PlannedAt: e.At, UpdatedAt: e.At,
		}
	case CreateBegun:
		r.enter(StatusCreating, e.At)
	case Created:
		r.enter(StatusCreated, e.At)
		r.setOutputs(e.Outputs)
	case StartBegun:
		r.enter(StatusStarting, e.At)
	case Started:
		r.enter(StatusRunning, e.At)
		r.setOutputs(e.Outputs)
	case StopBegun:
		r.enter(StatusStopping, e.At)
	case Stopped:
		r.enter(StatusStopped, e.At)
		r.setOutputs(e.Outputs)
	case DestroyBegun:
		r.enter(StatusDestroying, e.At)
	case Destroyed:
		r.enter(StatusDestroyed, e.At)
		r.Outputs = nil
	case DriftFound:
		r.Drift, r.DriftDetail, r.DriftSince = e.Kind, e.Detail, e.At
		r.UpdatedAt = e.At
	case DriftCleared:
		r.Drift, r.DriftDetail, r.DriftSince = "", "", time.Time{}
		r.UpdatedAt = e.At
	case RepairBegun:
		r.enter(StatusPending, e.At)
	case placement.Placed:
		r.NodeID, r.Request = e.NodeID, e.Request
		r.UpdatedAt = e.At
	case placement.Unplaced:
		r.NodeID, r.Request = "", placement.Resources{}
		r.UpdatedAt = e.At
	case Failed:
		r.enter(StatusFailed, e.At)
		r.FailedIn = e.Phase
		r.Error = e.Error
	}
}

// enter moves to a status; leaving failed forgets the failure.
func (r *Resource) enter(status Status, at time.Time) {
	r.Status = status
	r.FailedIn = ""
	r.Error = ""
	r.UpdatedAt = at
}

// setOutputs keeps the last outputs when a step reports none.
func (r *Resource) setOutputs(outputs []byte) {
	if len(outputs) > 0 {
		r.Outputs = slices.Clone(outputs)
	}
}
