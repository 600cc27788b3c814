package resource

import (
	"encoding/json"
	"slices"
	"time"

	"cairn/domain"
)

// Updates: when its service moves to a new revision, a resource whose
// plugin changes it in place is updated (updating → back where it was);
// one that cannot is destroyed and planned again at the new revision.

// UpdateBegun records that the plugin is asked to bring the resource to
// the properties of a service revision.
type UpdateBegun struct {
	ResourceID string          `json:"resourceId"`
	Revision   int             `json:"revision"`
	Properties json.RawMessage `json:"properties,omitempty"` // left out when they hold a secret
	DependsOn  []string        `json:"dependsOn"`
	Checks     []HealthCheck   `json:"checks,omitempty"`
	At         time.Time       `json:"at"`
}

// Updated records the plugin's outputs for an updated resource, which is
// back in the status it had before.
type Updated struct {
	ResourceID string          `json:"resourceId"`
	Outputs    json.RawMessage `json:"outputs,omitempty"`
	At         time.Time       `json:"at"`
}

func (UpdateBegun) EventType() string { return "resource.update_begun" }
func (Updated) EventType() string     { return "resource.updated" }

func registerUpdateEvents(r *domain.Registry) {
	domain.Register[UpdateBegun](r, 1)
	domain.Register[Updated](r, 1)
}

// applyUpdate folds the update events; false for any other.
func (r *Resource) applyUpdate(e domain.Event) bool {
	switch e := e.(type) {
	case UpdateBegun:
		if r.Status != StatusFailed {
			r.UpdateFrom = r.Status
		}
		r.enter(StatusUpdating, e.At)
		r.Revision = e.Revision
		r.Properties, r.DependsOn = slices.Clone([]byte(e.Properties)), slices.Clone(e.DependsOn)
		r.Checks = slices.Clone(e.Checks)
	case Updated:
		r.enter(r.UpdateFrom, e.At)
		r.setOutputs(e.Outputs)
	default:
		return false
	}
	return true
}

// BeginUpdate asks the plugin to bring a created, running or stopped
// resource (or one whose update failed) to a revision's properties.
type BeginUpdate struct {
	ResourceID string
	Revision   int
	Properties json.RawMessage // a JSON object, or nil when it holds a secret
	DependsOn  []string
	Checks     []HealthCheck
	At         time.Time
}

// BeginUpdate decides the start of an update.
func (r Resource) BeginUpdate(c BeginUpdate) ([]domain.Event, error) {
	if err := r.admit(c.ResourceID, CmdBeginUpdate, c.At); err != nil {
		return nil, err
	}
	if err := domain.FirstError(
		validateRevision(c.Revision),
		domain.ValidateJSON("properties", c.Properties, MaxJSONBytes, true),
		validateDependsOn(r.ID, c.DependsOn),
		validateChecks(c.Checks),
	); err != nil {
		return nil, err
	}
	return []domain.Event{UpdateBegun{ResourceID: r.ID, Revision: c.Revision, Properties: domain.CanonicalJSON(c.Properties),
		DependsOn: slices.Clone(c.DependsOn), Checks: slices.Clone(c.Checks), At: c.At.UTC()}}, nil
}

// CompleteUpdate moves an updating resource back to where it was.
func (r Resource) CompleteUpdate(resourceID string, outputs json.RawMessage, at time.Time) ([]domain.Event, error) {
	if err := r.admit(resourceID, CmdCompleteUpdate, at); err != nil {
		return nil, err
	}
	if err := domain.ValidateJSON("outputs", outputs, MaxJSONBytes, true); err != nil {
		return nil, err
	}
	return []domain.Event{Updated{ResourceID: r.ID, Outputs: domain.CanonicalJSON(outputs), At: at.UTC()}}, nil
}

func validateRevision(n int) error {
	if n < 1 {
		return domain.Invalid("revision", "must be 1 or more")
	}
	return nil
}
