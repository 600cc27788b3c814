package service

import (
	"encoding/json"
	"slices"
	"time"

	"cairn/domain"
	"cairn/domain/template"
)

// Updates: a settled service moves to a new revision (another version of
// its template, other variables). The orchestrator converges its resources
// (updating); when that fails it converges them back to the revision it
// left (reverting), and the service is where it was, with the cause. Every
// revision is numbered, once: a failed revision's number is not given again.

// Revision is one declared state of a service: what its resources are
// planned from.
type Revision struct {
	Number          int             `json:"number"`
	TemplateVersion string          `json:"templateVersion"`
	Variables       json.RawMessage `json:"variables,omitempty"` // sensitive values encrypted
	ResourceIDs     []string        `json:"resourceIds"`
}

func (r Revision) clone() Revision {
	r.Variables = slices.Clone(r.Variables)
	r.ResourceIDs = slices.Clone(r.ResourceIDs)
	return r
}

// UpdateRequested records a request to move the service to a new revision;
// From is the revision it leaves and Status the settled status it returns
// to.
type UpdateRequested struct {
	ServiceID string    `json:"serviceId"`
	Revision  Revision  `json:"revision"`
	From      Revision  `json:"from"`
	Status    Status    `json:"status"`
	At        time.Time `json:"at"`
}

// Updated records that every resource is as the new revision wants.
type Updated struct {
	ServiceID string          `json:"serviceId"`
	Revision  int             `json:"revision"`
	Outputs   json.RawMessage `json:"outputs,omitempty"`
	To        Status          `json:"to"`
	At        time.Time       `json:"at"`
}

// UpdateFailed records that the update failed; the orchestrator now brings
// the resources back to the revision the service left.
type UpdateFailed struct {
	ServiceID string    `json:"serviceId"`
	Cause     string    `json:"cause"`
	At        time.Time `json:"at"`
}

// UpdateReverted records that the resources are back as the earlier
// revision wants; the failed update's cause is kept.
type UpdateReverted struct {
	ServiceID string          `json:"serviceId"`
	Revision  int             `json:"revision"`
	Outputs   json.RawMessage `json:"outputs,omitempty"`
	To        Status          `json:"to"`
	At        time.Time       `json:"at"`
}

// UpdateRevertFailed records that going back failed too: the service is
// failed (in update) until another update or its removal.
type UpdateRevertFailed struct {
	ServiceID string    `json:"serviceId"`
	Cause     string    `json:"cause"`
	At        time.Time `json:"at"`
}

func (UpdateRequested) EventType() string    { return "service.update_requested" }
func (Updated) EventType() string            { return "service.updated" }
func (UpdateFailed) EventType() string       { return "service.update_failed" }
func (UpdateReverted) EventType() string     { return "service.update_reverted" }
func (UpdateRevertFailed) EventType() string { return "service.update_revert_failed" }

func registerUpdateEvents(r *domain.Registry) {
	domain.Register[UpdateRequested](r, 1)
	domain.Register[Updated](r, 1)
	domain.Register[UpdateFailed](r, 1)
	domain.Register[UpdateReverted](r, 1)
	domain.Register[UpdateRevertFailed](r, 1)
}

// Current is the revision the service declares now (while updating, the
// one it moves to; while reverting, the one it goes back to).
func (s Service) Current() Revision {
	return Revision{Number: s.Revision, TemplateVersion: s.TemplateVersion, Variables: s.Variables, ResourceIDs: s.ResourceIDs}.clone()
}

func (s *Service) declare(r Revision) {
	s.Revision, s.TemplateVersion = r.Number, r.TemplateVersion
	s.Variables, s.ResourceIDs = slices.Clone([]byte(r.Variables)), slices.Clone(r.ResourceIDs)
}

// applyUpdate folds the update events; false for any other.
func (s *Service) applyUpdate(e domain.Event) bool {
	switch e := e.(type) {
	case UpdateRequested:
		from := e.From.clone()
		s.Leaving, s.UpdateFrom = &from, e.Status
		s.declare(e.Revision)
		s.LastRevision = max(s.LastRevision, e.Revision.Number)
		s.enter(StatusUpdating, e.At)
		s.Cause = ""
	case Updated:
		s.Leaving = nil
		s.enter(e.To, e.At)
		s.setOutputs(e.Outputs)
	case UpdateFailed:
		// Go back: the revision left is declared again, and the failed one
		// is what the resources now leave.
		if s.Leaving != nil {
			failed := s.Current()
			s.declare(*s.Leaving)
			s.Leaving = &failed
		}
		s.enter(StatusReverting, e.At)
		s.Cause = e.Cause
	case UpdateReverted:
		s.Leaving = nil
		s.enter(e.To, e.At)
		s.setOutputs(e.Outputs)
	case UpdateRevertFailed:
		s.Leaving = nil
		s.enter(StatusFailed, e.At)
		s.FailedIn = PhaseUpdate
		s.Cause = e.Cause
	default:
		return false
	}
	return true
}

// Update asks to move a settled service to another version of its
// template, or other variables. The caller resolved and checked them
// against the template (encrypting sensitive values) and planned the
// resources.
type Update struct {
	ServiceID       string
	TemplateVersion string
	Variables       json.RawMessage
	ResourceIDs     []string
	At              time.Time
}

// Update decides an update. The new revision's number follows the last one
// given, failed or not.
func (s Service) Update(c Update) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdUpdate, c.At); err != nil {
		return nil, err
	}
	if err := domain.FirstError(
		template.ValidateVersion("templateVersion", c.TemplateVersion),
		domain.ValidateJSON("variables", c.Variables, MaxJSONBytes, true),
		domain.ValidateIDs("resourceIds", c.ResourceIDs),
	); err != nil {
		return nil, err
	}
	back := s.Status
	if s.Status == StatusFailed {
		back = s.UpdateFrom
	}
	next := Revision{Number: max(s.LastRevision, s.Revision) + 1, TemplateVersion: c.TemplateVersion,
		Variables: domain.CanonicalJSON(c.Variables), ResourceIDs: slices.Clone(c.ResourceIDs)}
	return []domain.Event{UpdateRequested{ServiceID: s.ID, Revision: next, From: s.Current(), Status: back, At: c.At.UTC()}}, nil
}

// Unchanged reports whether an update to this version and these (recorded)
// variables would declare what the service declares already.
func (s Service) Unchanged(templateVersion string, variables json.RawMessage) bool {
	return s.TemplateVersion == templateVersion && string(domain.CanonicalJSON(variables)) == string(domain.CanonicalJSON(s.Variables))
}

// CompleteUpdate reports that the resources are as the new revision wants.
func (s Service) CompleteUpdate(serviceID string, outputs json.RawMessage, at time.Time) ([]domain.Event, error) {
	if err := s.admit(serviceID, CmdCompleteUpdate, at); err != nil {
		return nil, err
	}
	if err := domain.ValidateJSON("outputs", outputs, MaxJSONBytes, true); err != nil {
		return nil, err
	}
	return []domain.Event{Updated{ServiceID: s.ID, Revision: s.Revision, Outputs: domain.CanonicalJSON(outputs), To: s.UpdateFrom, At: at.UTC()}}, nil
}

// FailUpdate reports a failed update; the service is reverted next.
func (s Service) FailUpdate(serviceID, cause string, at time.Time) ([]domain.Event, error) {
	if err := s.admit(serviceID, CmdFailUpdate, at); err != nil {
		return nil, err
	}
	if err := domain.ValidateRequiredText("cause", cause, MaxCauseLength); err != nil {
		return nil, err
	}
	return []domain.Event{UpdateFailed{ServiceID: s.ID, Cause: cause, At: at.UTC()}}, nil
}

// CompleteRevert reports that the resources are back as the earlier
// revision wants.
func (s Service) CompleteRevert(serviceID string, outputs json.RawMessage, at time.Time) ([]domain.Event, error) {
	if err := s.admit(serviceID, CmdCompleteRevert, at); err != nil {
		return nil, err
	}
	if err := domain.ValidateJSON("outputs", outputs, MaxJSONBytes, true); err != nil {
		return nil, err
	}
	return []domain.Event{UpdateReverted{ServiceID: s.ID, Revision: s.Revision, Outputs: domain.CanonicalJSON(outputs), To: s.UpdateFrom, At: at.UTC()}}, nil
}

// FailRevert reports that going back failed.
func (s Service) FailRevert(serviceID, cause string, at time.Time) ([]domain.Event, error) {
	if err := s.admit(serviceID, CmdFailRevert, at); err != nil {
		return nil, err
	}
	if err := domain.ValidateRequiredText("cause", cause, MaxCauseLength); err != nil {
		return nil, err
	}
	return []domain.Event{UpdateRevertFailed{ServiceID: s.ID, Cause: s.Cause + "; then going back failed: " + cause, At: at.UTC()}}, nil
}
