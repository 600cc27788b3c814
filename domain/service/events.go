package service

import (
	"encoding/json"
	"time"

	"cairn/domain"
)

// RegistrationRequested records a tenant's request to deploy a template
// version; the orchestrator now creates the planned resources.
type RegistrationRequested struct {
	ServiceID       string          `json:"serviceId"`
	TenantID        string          `json:"tenantId"`
	Name            string          `json:"name"`
	TemplateName    string          `json:"templateName"`
	TemplateVersion string          `json:"templateVersion"`
	Variables       json.RawMessage `json:"variables,omitempty"` // sensitive values arrive encrypted
	ResourceIDs     []string        `json:"resourceIds"`
	// Blueprint names the blueprint that declared the service, if one did.
	Blueprint string `json:"blueprint,omitempty"`
	// Start asks for the service to be started once registered.
	Start bool      `json:"start,omitempty"`
	At    time.Time `json:"at"`
}

// Registered records that every resource was created.
type Registered struct {
	ServiceID string          `json:"serviceId"`
	Outputs   json.RawMessage `json:"outputs,omitempty"`
	At        time.Time       `json:"at"`
}

// RegistrationFailed records that creating the resources failed; the
// orchestrator now rolls back what it created.
type RegistrationFailed struct {
	ServiceID string    `json:"serviceId"`
	Cause     string    `json:"cause"`
	At        time.Time `json:"at"`
}

// RolledBack records that a failed registration left nothing behind.
type RolledBack struct {
	ServiceID string    `json:"serviceId"`
	At        time.Time `json:"at"`
}

// RollbackFailed records that a rollback could not destroy some resources.
type RollbackFailed struct {
	ServiceID string    `json:"serviceId"`
	Remaining []string  `json:"remaining"`
	Cause     string    `json:"cause"`
	At        time.Time `json:"at"`
}

// StartRequested records a request to start the service's resources.
type StartRequested struct {
	ServiceID string    `json:"serviceId"`
	At        time.Time `json:"at"`
}

// Started records that every resource runs.
type Started struct {
	ServiceID string          `json:"serviceId"`
	Outputs   json.RawMessage `json:"outputs,omitempty"`
	At        time.Time       `json:"at"`
}

// StartFailed records that starting the resources failed.
type StartFailed struct {
	ServiceID string    `json:"serviceId"`
	Cause     string    `json:"cause"`
	At        time.Time `json:"at"`
}

// StopRequested records a request to stop the service's resources.
type StopRequested struct {
	ServiceID string    `json:"serviceId"`
	At        time.Time `json:"at"`
}

// Stopped records that every resource is stopped.
type Stopped struct {
	ServiceID string    `json:"serviceId"`
	At        time.Time `json:"at"`
}

// StopFailed records that stopping the resources failed.
type StopFailed struct {
	ServiceID string    `json:"serviceId"`
	Cause     string    `json:"cause"`
	At        time.Time `json:"at"`
}

// RemovalRequested records a request to destroy every resource; Stopping
// says the service ran and is stopped first (a blueprint's prune).
type RemovalRequested struct {
	ServiceID string    `json:"serviceId"`
	Stopping  bool      `json:"stopping,omitempty"`
	At        time.Time `json:"at"`
}

// Removed records that nothing of the service is left.
type Removed struct {
	ServiceID string    `json:"serviceId"`
	At        time.Time `json:"at"`
}

// RemovalFailed records that some resources could not be destroyed.
type RemovalFailed struct {
	ServiceID string    `json:"serviceId"`
	Remaining []string  `json:"remaining"`
	Cause     string    `json:"cause"`
	At        time.Time `json:"at"`
}

// RegistrationRetried records a request to deploy again a service whose
// registration failed and was rolled back.
type RegistrationRetried struct {
	ServiceID string    `json:"serviceId"`
	At        time.Time `json:"at"`
}

// CleanedUp records an operator's word that the leftovers are gone.
type CleanedUp struct {
	ServiceID string    `json:"serviceId"`
	Note      string    `json:"note,omitempty"`
	At        time.Time `json:"at"`
}

func (RegistrationRequested) EventType() string { return "service.registration_requested" }
func (Registered) EventType() string            { return "service.registered" }
func (RegistrationFailed) EventType() string    { return "service.registration_failed" }
func (RolledBack) EventType() string            { return "service.rolled_back" }
func (RollbackFailed) EventType() string        { return "service.rollback_failed" }
func (StartRequested) EventType() string        { return "service.start_requested" }
func (Started) EventType() string               { return "service.started" }
func (StartFailed) EventType() string           { return "service.start_failed" }
func (StopRequested) EventType() string         { return "service.stop_requested" }
func (Stopped) EventType() string               { return "service.stopped" }
func (StopFailed) EventType() string            { return "service.stop_failed" }
func (RemovalRequested) EventType() string      { return "service.removal_requested" }
func (Removed) EventType() string               { return "service.removed" }
func (RemovalFailed) EventType() string         { return "service.removal_failed" }
func (CleanedUp) EventType() string             { return "service.cleaned_up" }
func (RegistrationRetried) EventType() string   { return "service.registration_retried" }

// RegisterEvents registers every service event at its current schema version.
func RegisterEvents(r *domain.Registry) {
	domain.Register[RegistrationRequested](r, 1)
	domain.Register[Registered](r, 1)
	domain.Register[RegistrationFailed](r, 1)
	domain.Register[RolledBack](r, 1)
	domain.Register[RollbackFailed](r, 1)
	domain.Register[StartRequested](r, 1)
	domain.Register[Started](r, 1)
	domain.Register[StartFailed](r, 1)
	domain.Register[StopRequested](r, 1)
	domain.Register[Stopped](r, 1)
	domain.Register[StopFailed](r, 1)
	domain.Register[RemovalRequested](r, 1)
	domain.Register[Removed](r, 1)
	domain.Register[RemovalFailed](r, 1)
	domain.Register[CleanedUp](r, 1)
	domain.Register[RegistrationRetried](r, 1)
	registerRepairEvents(r)
	registerUpdateEvents(r)
}
