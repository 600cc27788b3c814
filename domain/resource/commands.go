package resource

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"cairn/domain"
)

const entity = "resource"

// Plan records a resource of a service's execution graph.
type Plan struct {
	ResourceID string
	ServiceID  string
	Name       string          // the instance's name in the descriptor
	Plugin     string          // e.g. "agent", "http", "terraform"
	Type       string          // a type the plugin serves, e.g. "agent.process"
	Properties json.RawMessage // a JSON object with references resolved, or nil
	DependsOn  []string        // resource ids of the same service
	Revision   int             // the service revision; 0 means 1
	Checks     []HealthCheck   // its health checks, if the descriptor declares any
	At         time.Time
}

// BeginCreate records that the plugin is asked to create the resource.
type BeginCreate struct {
	ResourceID string
	At         time.Time
}

// CompleteCreate reports the plugin's outputs for the created resource.
type CompleteCreate struct {
	ResourceID string
	Outputs    json.RawMessage // a JSON object, or nil
	At         time.Time
}

// BeginStart records that the plugin is asked to start the resource.
type BeginStart struct {
	ResourceID string
	At         time.Time
}

// CompleteStart reports that the resource runs.
type CompleteStart struct {
	ResourceID string
	Outputs    json.RawMessage // a JSON object, or nil to keep the last outputs
	At         time.Time
}

// BeginStop records that the plugin is asked to stop the resource.
type BeginStop struct {
	ResourceID string
	At         time.Time
}

// CompleteStop reports that the resource is stopped.
type CompleteStop struct {
	ResourceID string
	Outputs    json.RawMessage // a JSON object, or nil to keep the last outputs
	At         time.Time
}

// BeginDestroy records that the plugin is asked to destroy the resource.
type BeginDestroy struct {
	ResourceID string
	At         time.Time
}

// CompleteDestroy reports that nothing of the resource is left.
type CompleteDestroy struct {
	ResourceID string
	Output     json.RawMessage // the plugin's report, any JSON, or nil
	At         time.Time
}

// Fail reports that the plugin call under way failed. The phase is the call
// the resource's status says is under way (creating → create, …), so it
// cannot disagree with the state.
type Fail struct {
	ResourceID string
	Error      string
	Output     json.RawMessage // the plugin's report, any JSON, or nil
	At         time.Time
}

// Plan decides the planning of a resource that does not exist yet.
func (r Resource) Plan(c Plan) ([]domain.Event, error) {
	// A destroyed resource is planned again when its service's registration
	// is retried: its stream goes on from where it ended.
	if r.Exists() && !slices.Contains(AllowedCommands(r.Status, r.FailedIn), CmdPlan) {
		return nil, r.refuse(CmdPlan)
	}
	if err := domain.FirstError(
		domain.ValidateID("resourceId", c.ResourceID),
		domain.ValidateID("serviceId", c.ServiceID),
		domain.ValidateText("name", c.Name, 256),
		validatePlugin(c.Plugin),
		validateType(c.Type),
		domain.ValidateJSON("properties", c.Properties, MaxJSONBytes, true),
		validateDependsOn(c.ResourceID, c.DependsOn),
		validateChecks(c.Checks),
		domain.ValidateAt(c.At),
	); err != nil {
		return nil, err
	}
	return []domain.Event{Planned{
		ResourceID: c.ResourceID, ServiceID: c.ServiceID, Name: c.Name, Plugin: c.Plugin, Type: c.Type,
		Properties: domain.CanonicalJSON(c.Properties), DependsOn: slices.Clone(c.DependsOn), Revision: c.Revision, Checks: slices.Clone(c.Checks), At: c.At.UTC(),
	}}, nil
}

// BeginCreate moves a pending (or failed-to-create) resource to creating.
func (r Resource) BeginCreate(c BeginCreate) ([]domain.Event, error) {
	if err := r.admit(c.ResourceID, CmdBeginCreate, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{CreateBegun{ResourceID: r.ID, At: c.At.UTC()}}, nil
}

// CompleteCreate moves a creating resource to created.
func (r Resource) CompleteCreate(c CompleteCreate) ([]domain.Event, error) {
	if err := r.admit(c.ResourceID, CmdCompleteCreate, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateJSON("outputs", c.Outputs, MaxJSONBytes, true); err != nil {
		return nil, err
	}
	return []domain.Event{Created{ResourceID: r.ID, Outputs: domain.CanonicalJSON(c.Outputs), At: c.At.UTC()}}, nil
}

// BeginStart moves a created or stopped (or failed-to-start/stop) resource to starting.
func (r Resource) BeginStart(c BeginStart) ([]domain.Event, error) {
	if err := r.admit(c.ResourceID, CmdBeginStart, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{StartBegun{ResourceID: r.ID, At: c.At.UTC()}}, nil
}

// CompleteStart moves a starting resource to running.
func (r Resource) CompleteStart(c CompleteStart) ([]domain.Event, error) {
	if err := r.admit(c.ResourceID, CmdCompleteStart, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateJSON("outputs", c.Outputs, MaxJSONBytes, true); err != nil {
		return nil, err
	}
	return []domain.Event{Started{ResourceID: r.ID, Outputs: domain.CanonicalJSON(c.Outputs), At: c.At.UTC()}}, nil
}

// BeginStop moves a running (or failed-to-start/stop) resource to stopping.
func (r Resource) BeginStop(c BeginStop) ([]domain.Event, error) {
	if err := r.admit(c.ResourceID, CmdBeginStop, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{StopBegun{ResourceID: r.ID, At: c.At.UTC()}}, nil
}

// CompleteStop moves a stopping resource to stopped.
func (r Resource) CompleteStop(c CompleteStop) ([]domain.Event, error) {
	if err := r.admit(c.ResourceID, CmdCompleteStop, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateJSON("outputs", c.Outputs, MaxJSONBytes, true); err != nil {
		return nil, err
	}
	return []domain.Event{Stopped{ResourceID: r.ID, Outputs: domain.CanonicalJSON(c.Outputs), At: c.At.UTC()}}, nil
}

// BeginDestroy moves a resource that does not run to destroying.
func (r Resource) BeginDestroy(c BeginDestroy) ([]domain.Event, error) {
	if err := r.admit(c.ResourceID, CmdBeginDestroy, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{DestroyBegun{ResourceID: r.ID, At: c.At.UTC()}}, nil
}

// CompleteDestroy moves a destroying resource to destroyed, its final status.
func (r Resource) CompleteDestroy(c CompleteDestroy) ([]domain.Event, error) {
	if err := r.admit(c.ResourceID, CmdCompleteDestroy, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateJSON("output", c.Output, MaxJSONBytes, false); err != nil {
		return nil, err
	}
	return []domain.Event{Destroyed{ResourceID: r.ID, Output: domain.CanonicalJSON(c.Output), At: c.At.UTC()}}, nil
}

// Fail moves a resource whose plugin call failed to failed.
func (r Resource) Fail(c Fail) ([]domain.Event, error) {
	if err := r.admit(c.ResourceID, CmdFail, c.At); err != nil {
		return nil, err
	}
	if err := domain.FirstError(
		domain.ValidateRequiredText("error", c.Error, MaxErrorLength),
		domain.ValidateJSON("output", c.Output, MaxJSONBytes, false),
	); err != nil {
		return nil, err
	}
	return []domain.Event{Failed{
		ResourceID: r.ID, Phase: phaseOf[r.Status], Error: c.Error, Output: domain.CanonicalJSON(c.Output), At: c.At.UTC(),
	}}, nil
}

// admit checks that the command addresses this existing resource, is allowed
// in its status (and, when failed, the phase it failed in), and has a time.
func (r Resource) admit(id, command string, at time.Time) error {
	if !r.Exists() {
		return &domain.NotFoundError{Entity: entity, ID: id}
	}
	if id != r.ID {
		return domain.Invalid("resourceId", fmt.Sprintf("is %q but the loaded resource is %q", id, r.ID))
	}
	if !slices.Contains(r.AllowedCommands(), command) {
		return r.refuse(command)
	}
	return domain.ValidateAt(at)
}

// refuse names the state; a failed resource names the phase too, since that
// decides what it accepts.
func (r Resource) refuse(command string) error {
	state := string(r.Status)
	if r.Status == StatusFailed && r.FailedIn != "" {
		state = fmt.Sprintf("%s (in %s)", r.Status, r.FailedIn)
	}
	return &domain.StateError{Entity: entity, ID: r.ID, Command: command, State: state}
}

// MaxDriftDetailLength bounds a drift's detail.
const MaxDriftDetailLength = 1024

// FindDrift records what was observed to differ; the same kind again
// decides nothing, so a pass over a drifted resource appends nothing.
func (r Resource) FindDrift(kind DriftKind, detail string, at time.Time) ([]domain.Event, error) {
	if !r.Exists() {
		return nil, &domain.NotFoundError{Entity: entity, ID: r.ID}
	}
	if !slices.Contains(DriftKinds, kind) {
		return nil, domain.Invalid("kind", fmt.Sprintf("unknown drift %q", kind))
	}
	if err := domain.FirstError(domain.ValidateText("detail", detail, MaxDriftDetailLength), domain.ValidateAt(at)); err != nil {
		return nil, err
	}
	if r.Drift == kind {
		return nil, nil
	}
	return []domain.Event{DriftFound{ResourceID: r.ID, Kind: kind, Detail: detail, At: at.UTC()}}, nil
}

// ClearDrift records that the resource is as wanted again; nothing when no
// drift was recorded.
func (r Resource) ClearDrift(at time.Time) ([]domain.Event, error) {
	if r.Drift == "" {
		return nil, nil
	}
	if err := domain.ValidateAt(at); err != nil {
		return nil, err
	}
	return []domain.Event{DriftCleared{ResourceID: r.ID, At: at.UTC()}}, nil
}

// BeginRepair makes a created, running, stopped or failed resource pending
// again, to be created anew.
func (r Resource) BeginRepair(resourceID, reason string, at time.Time) ([]domain.Event, error) {
	if err := r.admit(resourceID, CmdBeginRepair, at); err != nil {
		return nil, err
	}
	if err := domain.ValidateText("reason", reason, MaxDriftDetailLength); err != nil {
		return nil, err
	}
	return []domain.Event{RepairBegun{ResourceID: r.ID, Reason: reason, At: at.UTC()}}, nil
}
