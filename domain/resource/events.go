package resource

import (
	"encoding/json"
	"time"

	"cairn/domain"
)

// Planned records a resource of a service's execution graph before any plugin
// call. Its id is deterministic, so plugin calls repeated after a crash are
// idempotent.
type Planned struct {
	ResourceID string `json:"resourceId"`
	ServiceID  string `json:"serviceId"`
	// Name is the instance's name in the descriptor ("web", "web[2]");
	// absent in events recorded before resources had names.
	Name       string          `json:"name,omitempty"`
	Plugin     string          `json:"plugin"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties,omitempty"` // references resolved
	DependsOn  []string        `json:"dependsOn"`
	// Revision is the service revision the resource is planned for; absent
	// (0) in events recorded before services had revisions, meaning 1.
	Revision int `json:"revision,omitempty"`
	// Checks are the health checks the descriptor declares for it.
	Checks []HealthCheck `json:"checks,omitempty"`
	At     time.Time     `json:"at"`
}

// CreateBegun records that the plugin was asked to create the resource.
type CreateBegun struct {
	ResourceID string    `json:"resourceId"`
	At         time.Time `json:"at"`
}

// Created records the plugin's outputs for a created resource.
type Created struct {
	ResourceID string          `json:"resourceId"`
	Outputs    json.RawMessage `json:"outputs,omitempty"`
	At         time.Time       `json:"at"`
}

// StartBegun records that the plugin was asked to start the resource.
type StartBegun struct {
	ResourceID string    `json:"resourceId"`
	At         time.Time `json:"at"`
}

// Started records that the resource runs, with the plugin's outputs if any.
type Started struct {
	ResourceID string          `json:"resourceId"`
	Outputs    json.RawMessage `json:"outputs,omitempty"`
	At         time.Time       `json:"at"`
}

// StopBegun records that the plugin was asked to stop the resource.
type StopBegun struct {
	ResourceID string    `json:"resourceId"`
	At         time.Time `json:"at"`
}

// Stopped records that the resource is stopped, with the plugin's outputs if any.
type Stopped struct {
	ResourceID string          `json:"resourceId"`
	Outputs    json.RawMessage `json:"outputs,omitempty"`
	At         time.Time       `json:"at"`
}

// DestroyBegun records that the plugin was asked to destroy the resource.
type DestroyBegun struct {
	ResourceID string    `json:"resourceId"`
	At         time.Time `json:"at"`
}

// Destroyed records that nothing of the resource is left.
type Destroyed struct {
	ResourceID string          `json:"resourceId"`
	Output     json.RawMessage `json:"output,omitempty"` // the plugin's report, if any
	At         time.Time       `json:"at"`
}

// Failed records a plugin call that failed, with the plugin's output.
type Failed struct {
	ResourceID string          `json:"resourceId"`
	Phase      Phase           `json:"phase"`
	Error      string          `json:"error"`
	Output     json.RawMessage `json:"output,omitempty"`
	At         time.Time       `json:"at"`
}

// DriftFound records that what was observed of the resource differs from
// what its service wants: it is missing, its node is down, or it could not
// be observed. Recorded once per change of Kind, not per observation.
type DriftFound struct {
	ResourceID string    `json:"resourceId"`
	Kind       DriftKind `json:"kind"`
	Detail     string    `json:"detail"`
	At         time.Time `json:"at"`
}

// DriftCleared records that the resource is observed as wanted again.
type DriftCleared struct {
	ResourceID string    `json:"resourceId"`
	At         time.Time `json:"at"`
}

// RepairBegun records that the resource is made again (created, and
// started if its service runs): it is pending until its create.
type RepairBegun struct {
	ResourceID string    `json:"resourceId"`
	Reason     string    `json:"reason"`
	At         time.Time `json:"at"`
}

func (Planned) EventType() string      { return "resource.planned" }
func (DriftFound) EventType() string   { return "resource.drift_found" }
func (DriftCleared) EventType() string { return "resource.drift_cleared" }
func (RepairBegun) EventType() string  { return "resource.repair_begun" }
func (CreateBegun) EventType() string  { return "resource.create_begun" }
func (Created) EventType() string      { return "resource.created" }
func (StartBegun) EventType() string   { return "resource.start_begun" }
func (Started) EventType() string      { return "resource.started" }
func (StopBegun) EventType() string    { return "resource.stop_begun" }
func (Stopped) EventType() string      { return "resource.stopped" }
func (DestroyBegun) EventType() string { return "resource.destroy_begun" }
func (Destroyed) EventType() string    { return "resource.destroyed" }
func (Failed) EventType() string       { return "resource.failed" }

// RegisterEvents registers every resource event at its current schema version.
func RegisterEvents(r *domain.Registry) {
	domain.Register[Planned](r, 1)
	domain.Register[DriftFound](r, 1)
	domain.Register[DriftCleared](r, 1)
	domain.Register[RepairBegun](r, 1)
	domain.Register[CreateBegun](r, 1)
	domain.Register[Created](r, 1)
	domain.Register[StartBegun](r, 1)
	domain.Register[Started](r, 1)
	domain.Register[StopBegun](r, 1)
	domain.Register[Stopped](r, 1)
	domain.Register[DestroyBegun](r, 1)
	domain.Register[Destroyed](r, 1)
	domain.Register[Failed](r, 1)
	registerUpdateEvents(r)
	domain.Register[HealthChanged](r, 1)
}
