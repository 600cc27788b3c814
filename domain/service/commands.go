package service

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"cairn/domain"
	"cairn/domain/template"
)

const entity = "service"

// Register asks to deploy a template version for a tenant. The caller resolved
// the template, checked the variables against it (encrypting sensitive ones)
// and planned the resources, whose ids are deterministic.
type Register struct {
	ServiceID       string
	TenantID        string
	Name            string
	TemplateName    string
	TemplateVersion string
	Variables       json.RawMessage // a JSON object, or nil
	ResourceIDs     []string
	// Blueprint names the blueprint that declares the service; optional.
	Blueprint string
	// Start has the service started once its resources are made.
	Start bool
	At    time.Time
}

// CompleteRegistration reports that every resource was created.
type CompleteRegistration struct {
	ServiceID string
	Outputs   json.RawMessage // a JSON object, or nil
	At        time.Time
}

// FailRegistration reports that creating the resources failed; the
// orchestrator rolls back next.
type FailRegistration struct {
	ServiceID string
	Cause     string
	At        time.Time
}

// CompleteRollback reports that a rollback destroyed everything it created.
type CompleteRollback struct {
	ServiceID string
	At        time.Time
}

// FailRollback reports the resources a rollback could not destroy.
type FailRollback struct {
	ServiceID string
	Remaining []string
	Cause     string
	At        time.Time
}

// Retry asks to deploy again a service whose registration was rolled back.
type Retry struct {
	ServiceID string
	At        time.Time
}

// Start asks to start the service's resources.
type Start struct {
	ServiceID string
	At        time.Time
}

// CompleteStart reports that every resource runs.
type CompleteStart struct {
	ServiceID string
	Outputs   json.RawMessage // a JSON object, or nil to keep the last outputs
	At        time.Time
}

// FailStart reports that starting failed.
type FailStart struct {
	ServiceID string
	Cause     string
	At        time.Time
}

// Stop asks to stop the service's resources.
type Stop struct {
	ServiceID string
	At        time.Time
}

// CompleteStop reports that every resource is stopped.
type CompleteStop struct {
	ServiceID string
	At        time.Time
}

// FailStop reports that stopping failed.
type FailStop struct {
	ServiceID string
	Cause     string
	At        time.Time
}

// Remove asks to destroy every resource of the service. Force also
// removes a running service (stopping it first): a blueprint applied with
// prune asks for that explicitly; people stop a service before removing it.
type Remove struct {
	ServiceID string
	Force     bool
	At        time.Time
}

// CompleteRemoval reports that nothing of the service is left.
type CompleteRemoval struct {
	ServiceID string
	At        time.Time
}

// FailRemoval reports the resources a removal could not destroy.
type FailRemoval struct {
	ServiceID string
	Remaining []string
	Cause     string
	At        time.Time
}

// MarkCleanedUp is an operator's word that the leftovers were removed by hand.
type MarkCleanedUp struct {
	ServiceID string
	Note      string
	At        time.Time
}

// Register decides the registration of a service that does not exist yet.
func (s Service) Register(c Register) ([]domain.Event, error) {
	if s.Exists() {
		return nil, s.refuse(CmdRegister)
	}
	if err := domain.FirstError(
		domain.ValidateID("serviceId", c.ServiceID),
		domain.ValidateID("tenantId", c.TenantID),
		domain.ValidateName("name", c.Name, MaxNameLength),
		template.ValidateName("templateName", c.TemplateName),
		template.ValidateVersion("templateVersion", c.TemplateVersion),
		domain.ValidateJSON("variables", c.Variables, MaxJSONBytes, true),
		domain.ValidateIDs("resourceIds", c.ResourceIDs),
		domain.ValidateText("blueprint", c.Blueprint, MaxNameLength),
		domain.ValidateAt(c.At),
	); err != nil {
		return nil, err
	}
	return []domain.Event{RegistrationRequested{
		ServiceID: c.ServiceID, TenantID: c.TenantID, Name: c.Name,
		TemplateName: c.TemplateName, TemplateVersion: c.TemplateVersion,
		Variables: domain.CanonicalJSON(c.Variables), ResourceIDs: slices.Clone(c.ResourceIDs),
		Blueprint: c.Blueprint, Start: c.Start, At: c.At.UTC(),
	}}, nil
}

// admit checks that the command addresses this existing service, is allowed
// in its status (and, when failed, the phase it failed in), and has a time.
func (s Service) admit(id, command string, at time.Time) error {
	if !s.Exists() {
		return &domain.NotFoundError{Entity: entity, ID: id}
	}
	if id != s.ID {
		return domain.Invalid("serviceId", fmt.Sprintf("is %q but the loaded service is %q", id, s.ID))
	}
	if !slices.Contains(s.AllowedCommands(), command) {
		return s.refuse(command)
	}
	return domain.ValidateAt(at)
}

// refuse names the state; a failed service names the phase too, since that
// decides what it accepts.
func (s Service) refuse(command string) error {
	state := string(s.Status)
	if s.Status == StatusFailed && s.FailedIn != "" {
		state = fmt.Sprintf("%s (in %s)", s.Status, s.FailedIn)
	}
	return &domain.StateError{Entity: entity, ID: s.ID, Command: command, State: state}
}
