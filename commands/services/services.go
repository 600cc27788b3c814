// Package services handles the commands of a tenant's services: register
// (deploy) one from a published template, start, stop, remove, and the
// operator's word that leftovers were cleaned up. The orchestrator reacts to
// the recorded requests; this package only decides and records them.
package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/domain/tenant"
	"cairn/internal/seal"
)

// Handlers runs service commands against the event store.
type Handlers struct {
	store    commands.Store
	now      commands.Clock
	newID    commands.IDGenerator
	secrets  *Secrets
	capacity CapacityCheck
	types    PluginTypes
}

// CapacityCheck refuses a plan with a resource no node could ever take,
// before the service is registered (see scheduler.PlanCheck).
type CapacityCheck interface {
	CheckPlan(ctx context.Context, plan *ocl.Graph, serviceID, templateName string) error
}

// CheckCapacity has Register refuse plans that check refuses; without it
// such a deployment fails when it reaches the resource.
func (h *Handlers) CheckCapacity(check CapacityCheck) { h.capacity = check }

// NewHandlers returns service handlers; clock stamps commands, ids names
// services registered without a caller-chosen id, and sealer seals the
// values of sensitive variables before they reach the log.
func NewHandlers(store commands.Store, clock commands.Clock, ids commands.IDGenerator, sealer *seal.Sealer) (*Handlers, error) {
	if sealer == nil {
		return nil, errors.New("service handlers need a sealer for sensitive variables")
	}
	return &Handlers{store: store, now: clock, newID: ids, secrets: NewSecrets(sealer)}, nil
}

// Register deploys a published template version for a tenant.
type Register struct {
	// ServiceID is optional.
	ServiceID       string `json:"serviceId,omitempty"`
	TenantID        string `json:"tenantId"`
	Name            string `json:"name"`
	TemplateName    string `json:"templateName"`
	TemplateVersion string `json:"templateVersion"`
	// Flavor names one of the descriptor's flavors; optional.
	Flavor string `json:"flavor,omitempty"`
	// Variables are the tenant's values; the flavor's and the defaults fill
	// the rest.
	Variables map[string]json.RawMessage `json:"variables,omitempty"`
	// Blueprint names the blueprint declaring the service; optional.
	Blueprint string `json:"blueprint,omitempty"`
	// Start has the service started once registered.
	Start bool `json:"start,omitempty"`
}

// Start asks to start a service's resources.
type Start struct {
	ServiceID string `json:"serviceId"`
}

// Retry asks to deploy again a service whose registration failed and was
// rolled back (when a node has room again, say).
type Retry struct {
	ServiceID string `json:"serviceId"`
}

// Stop asks to stop a service's resources.
type Stop struct {
	ServiceID string `json:"serviceId"`
}

// Remove asks to destroy every resource of a service; Force removes a
// running one too, stopping it first.
type Remove struct {
	ServiceID string `json:"serviceId"`
	Force     bool   `json:"force,omitempty"`
}

// MarkCleanedUp is an operator's word that a failed removal's or rollback's
// leftovers were removed by hand.
type MarkCleanedUp struct {
	ServiceID string `json:"serviceId"`
	Note      string `json:"note,omitempty"`
}

// Register checks that the tenant is active and the template version
// published, resolves and validates the variables against the descriptor,
// plans the resources (their ids derive from the service id), seals the
// sensitive values, and records the request.
func (h *Handlers) Register(ctx context.Context, meta commands.Meta, in Register) (commands.Outcome, error) {
	id, err := commands.EntityID(ctx, h.store, &meta, domain.ServiceStream, in.ServiceID, h.newID)
	if err != nil {
		return commands.Outcome{}, err
	}
	reg, err := h.prepare(ctx, id, in)
	if err != nil {
		return commands.Outcome{}, err
	}
	given, err := json.Marshal(in.Variables)
	if err != nil {
		return commands.Outcome{}, fmt.Errorf("encode variables: %w", err)
	}
	// The fingerprint is kept in the log: it covers the variables through a
	// keyed hash, never their clear values.
	fingerprint := in
	fingerprint.Variables = map[string]json.RawMessage{"(keyed hash)": mustJSON(h.secrets.MAC(given))}
	// The service's first event and its name's claim are one append, each at
	// the version read: two registrations of one name cannot both win.
	claimID := service.NameClaimID(in.TenantID, in.Name)
	res, err := commands.ExecuteMany(ctx, h.store, inTenant(meta, in.TenantID), "service.register", fingerprint,
		func(ctx context.Context) ([]commands.StreamChange, error) {
			at := h.now()
			s, sv, err := commands.Load[service.Service](ctx, h.store, domain.ServiceStream, id)
			if err != nil {
				return nil, err
			}
			reg.At = at
			evs, err := s.Register(reg)
			if err != nil {
				return nil, err
			}
			claim, cv, err := commands.Load[service.NameClaim](ctx, h.store, domain.ServiceNameStream, claimID)
			if err != nil {
				return nil, err
			}
			var holder service.Service
			if claim.ServiceID != "" && claim.ServiceID != id {
				if holder, _, err = commands.Load[service.Service](ctx, h.store, domain.ServiceStream, claim.ServiceID); err != nil {
					return nil, err
				}
			}
			claimed, err := claim.Claim(in.TenantID, in.Name, id, holder, at)
			if err != nil {
				return nil, err
			}
			// The claim first: the outcome's cursor is the service's event.
			return []commands.StreamChange{
				{StreamType: domain.ServiceNameStream, ID: claimID, Version: cv, Events: claimed},
				{StreamType: domain.ServiceStream, ID: id, Version: sv, Events: evs},
			}, nil
		})
	if err != nil {
		return commands.Outcome{}, err
	}
	return commands.Outcome{Result: commands.ResultFor(res, domain.ServiceStream, id), ID: id}, nil
}

// CheckRegister checks a registration as Register does (tenant, template,
// variables, plan, capacity) and records nothing: a blueprint checks every
// service it declares before changing any.
func (h *Handlers) CheckRegister(ctx context.Context, id string, in Register) error {
	_, err := h.prepare(ctx, id, in)
	return err
}

// prepare checks a registration and returns the command that records it.
func (h *Handlers) prepare(ctx context.Context, id string, in Register) (service.Register, error) {
	if err := firstError(
		commands.RequireID("tenantId", in.TenantID),
		commands.RequireID("templateName", in.TemplateName),
		commands.RequireID("templateVersion", in.TemplateVersion),
	); err != nil {
		return service.Register{}, err
	}
	t, err := commands.RequireTenant(ctx, h.store, in.TenantID)
	if err != nil {
		return service.Register{}, err
	}
	if t.Status != tenant.TenantStatusActive {
		return service.Register{}, &domain.StateError{Entity: "tenant", ID: t.ID, Command: "deploy a service for", State: string(t.Status)}
	}
	d, err := h.deployable(ctx, in.TemplateName, in.TemplateVersion)
	if err != nil {
		return service.Register{}, err
	}
	vars, err := d.ResolveVariables(in.Flavor, in.Variables)
	if err != nil {
		return service.Register{}, err
	}
	plan, err := d.Plan(vars, ocl.ServiceContext{ID: id, Tenant: in.TenantID})
	if err != nil {
		return service.Register{}, err
	}
	if h.capacity != nil {
		if err := h.capacity.CheckPlan(ctx, plan, id, in.TemplateName); err != nil {
			return service.Register{}, err
		}
	}
	var resources []string
	for _, n := range plan.Nodes() {
		resources = append(resources, n.ResourceID)
	}
	sealedVars, err := h.secrets.SealSensitive(id, vars, d.SensitiveVariables())
	if err != nil {
		return service.Register{}, err
	}
	recorded, err := json.Marshal(sealedVars)
	if err != nil {
		return service.Register{}, fmt.Errorf("encode variables: %w", err)
	}
	return service.Register{
		ServiceID: id, TenantID: in.TenantID, Name: in.Name,
		TemplateName: in.TemplateName, TemplateVersion: in.TemplateVersion,
		Variables: recorded, ResourceIDs: resources, Blueprint: in.Blueprint, Start: in.Start,
	}, nil
}

// deployable loads a template version that must exist and be published, and
// parses its descriptor.
func (h *Handlers) deployable(ctx context.Context, name, version string) (*ocl.Descriptor, error) {
	tv, err := h.template(ctx, name, version)
	if err != nil {
		return nil, err
	}
	if !tv.Deployable() {
		return nil, &domain.StateError{Entity: "template", ID: tv.ID(), Command: "deploy", State: string(tv.Status)}
	}
	return parseRecorded(tv)
}

func (h *Handlers) template(ctx context.Context, name, version string) (template.TemplateVersion, error) {
	tv, _, err := commands.Load[template.TemplateVersion](ctx, h.store, domain.TemplateStream, template.ID(name, version))
	if err == nil && !tv.Exists() {
		err = &domain.NotFoundError{Entity: "template", ID: template.ID(name, version)}
	}
	return tv, err
}

func parseRecorded(tv template.TemplateVersion) (*ocl.Descriptor, error) {
	d, err := ocl.Parse(tv.Descriptor)
	if err != nil {
		return nil, fmt.Errorf("recorded descriptor of template %q does not parse: %w", tv.ID(), err)
	}
	return d, nil
}

// DecodeVariables returns the variables a service was registered with, the
// sensitive ones opened, for the orchestrator to hand to plugins. It has the
// signature of the orchestrator's variable decoder.
func (h *Handlers) DecodeVariables(ctx context.Context, s service.Service) (map[string]json.RawMessage, error) {
	tv, err := h.template(ctx, s.TemplateName, s.TemplateVersion)
	if err != nil {
		return nil, err
	}
	d, err := parseRecorded(tv)
	if err != nil {
		return nil, err
	}
	return h.secrets.Decrypt(s.ID, s.Variables, d.SensitiveVariables())
}

// Start starts a registered, stopped, or (after a failed start or stop)
// failed service.
func (h *Handlers) Start(ctx context.Context, meta commands.Meta, in Start) (commands.Outcome, error) {
	return h.existing(ctx, meta, in.ServiceID, in, func(s service.Service, at time.Time) ([]domain.Event, error) {
		return s.Start(service.Start{ServiceID: in.ServiceID, At: at})
	})
}

// Retry registers again a service whose registration was rolled back.
func (h *Handlers) Retry(ctx context.Context, meta commands.Meta, in Retry) (commands.Outcome, error) {
	return h.existing(ctx, meta, in.ServiceID, in, func(s service.Service, at time.Time) ([]domain.Event, error) {
		return s.Retry(service.Retry{ServiceID: in.ServiceID, At: at})
	})
}

// Stop stops a running (or, after a failed start or stop, failed) service.
func (h *Handlers) Stop(ctx context.Context, meta commands.Meta, in Stop) (commands.Outcome, error) {
	return h.existing(ctx, meta, in.ServiceID, in, func(s service.Service, at time.Time) ([]domain.Event, error) {
		return s.Stop(service.Stop{ServiceID: in.ServiceID, At: at})
	})
}

// Remove removes a service that runs nothing.
func (h *Handlers) Remove(ctx context.Context, meta commands.Meta, in Remove) (commands.Outcome, error) {
	return h.existing(ctx, meta, in.ServiceID, in, func(s service.Service, at time.Time) ([]domain.Event, error) {
		return s.Remove(service.Remove{ServiceID: in.ServiceID, Force: in.Force, At: at})
	})
}

// MarkCleanedUp records that a service's leftovers were removed by hand.
func (h *Handlers) MarkCleanedUp(ctx context.Context, meta commands.Meta, in MarkCleanedUp) (commands.Outcome, error) {
	return h.existing(ctx, meta, in.ServiceID, in, func(s service.Service, at time.Time) ([]domain.Event, error) {
		return s.MarkCleanedUp(service.MarkCleanedUp{ServiceID: in.ServiceID, Note: in.Note, At: at})
	})
}

// existing runs a command on an existing service, its events tagged with the
// service's tenant.
func (h *Handlers) existing(ctx context.Context, meta commands.Meta, id string, input any,
	decide func(service.Service, time.Time) ([]domain.Event, error)) (commands.Outcome, error) {
	if err := commands.RequireID("serviceId", id); err != nil {
		return commands.Outcome{}, err
	}
	s, _, err := commands.Load[service.Service](ctx, h.store, domain.ServiceStream, id)
	if err != nil {
		return commands.Outcome{}, err
	}
	return h.run(ctx, inTenant(meta, s.TenantID), id, input, decide)
}

func (h *Handlers) run(ctx context.Context, meta commands.Meta, id string, input any,
	decide func(service.Service, time.Time) ([]domain.Event, error)) (commands.Outcome, error) {
	at := h.now()
	res, err := commands.Execute[service.Service](ctx, h.store, domain.ServiceStream, id, meta, input,
		func(s service.Service) ([]domain.Event, error) { return decide(s, at) })
	if err != nil {
		return commands.Outcome{}, err
	}
	return commands.Outcome{Result: res, ID: id}, nil
}

// inTenant tags a command's events with the tenant the service belongs to.
func inTenant(meta commands.Meta, tenantID string) commands.Meta {
	if tenantID != "" {
		meta.Tenant = tenantID
	}
	return meta
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("services: encode: " + err.Error())
	}
	return b
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
