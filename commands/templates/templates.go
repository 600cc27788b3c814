// Package templates handles the commands of the service catalog: a vendor
// registers a version of a service descriptor, publishes it, deprecates it.
package templates

import (
	"context"
	"encoding/json"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/template"
)

// Handlers runs catalog commands against the event store.
type Handlers struct {
	store   commands.Store
	now     commands.Clock
	plugins ocl.PluginCatalog
}

// NewHandlers returns catalog handlers. plugins, when not nil, lets Register
// check each resource's plugin, type and literal properties.
func NewHandlers(store commands.Store, clock commands.Clock, plugins ocl.PluginCatalog) *Handlers {
	return &Handlers{store: store, now: clock, plugins: plugins}
}

// Register registers a descriptor, JSON or YAML, under the name and version
// its metadata gives; the acting vendor owns it.
type Register struct {
	Descriptor string `json:"descriptor"`
}

// Publish makes a registered version deployable and freezes it.
type Publish struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Deprecate steers new deployments away from a published version.
type Deprecate struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Reason  string `json:"reason,omitempty"`
}

// Register parses and validates the descriptor, reporting every problem with
// its path, and records it in canonical JSON with its digest. The vendor is
// meta.Actor: a vendor can only register, and re-register before
// publishing, its own templates. Outcome.ID is "name@version".
func (h *Handlers) Register(ctx context.Context, meta commands.Meta, in Register) (commands.Outcome, error) {
	if meta.Actor == "" {
		return commands.Outcome{}, &domain.ValidationError{Field: "vendor", Reason: "is the actor registering the template, and none was given"}
	}
	d, err := ocl.Parse([]byte(in.Descriptor))
	if err != nil {
		return commands.Outcome{}, err
	}
	if err := d.Validate(h.plugins); err != nil {
		return commands.Outcome{}, err
	}
	canonical, err := d.CanonicalJSON()
	if err != nil {
		return commands.Outcome{}, err
	}
	digest, err := d.Digest()
	if err != nil {
		return commands.Outcome{}, err
	}
	name, version := d.Metadata.Name, d.Metadata.Version
	fingerprint := struct {
		Register
		Vendor string
	}{in, meta.Actor}
	return h.run(ctx, meta, name, version, fingerprint, func(t template.TemplateVersion, at time.Time) ([]domain.Event, error) {
		return t.Register(template.Register{Name: name, Version: version, Vendor: meta.Actor,
			Descriptor: json.RawMessage(canonical), Digest: "sha256:" + digest, At: at})
	})
}

// Publish publishes a registered version.
func (h *Handlers) Publish(ctx context.Context, meta commands.Meta, in Publish) (commands.Outcome, error) {
	return h.run(ctx, meta, in.Name, in.Version, in, func(t template.TemplateVersion, at time.Time) ([]domain.Event, error) {
		return t.Publish(template.Publish{Name: in.Name, Version: in.Version, At: at})
	})
}

// Deprecate deprecates a published version; services deployed from it keep
// running.
func (h *Handlers) Deprecate(ctx context.Context, meta commands.Meta, in Deprecate) (commands.Outcome, error) {
	return h.run(ctx, meta, in.Name, in.Version, in, func(t template.TemplateVersion, at time.Time) ([]domain.Event, error) {
		return t.Deprecate(template.Deprecate{Name: in.Name, Version: in.Version, Reason: in.Reason, At: at})
	})
}

// Vendor returns the vendor that registered a template version, for the
// policy check that a vendor acts only on its own templates.
func (h *Handlers) Vendor(ctx context.Context, name, version string) (string, error) {
	t, _, err := commands.Load[template.TemplateVersion](ctx, h.store, domain.TemplateStream, template.ID(name, version))
	if err == nil && !t.Exists() {
		err = &domain.NotFoundError{Entity: "template", ID: template.ID(name, version)}
	}
	return t.Vendor, err
}

func (h *Handlers) run(ctx context.Context, meta commands.Meta, name, version string, input any,
	decide func(template.TemplateVersion, time.Time) ([]domain.Event, error)) (commands.Outcome, error) {
	if err := firstError(commands.RequireID("name", name), commands.RequireID("version", version)); err != nil {
		return commands.Outcome{}, err
	}
	id := template.ID(name, version)
	at := h.now()
	res, err := commands.Execute[template.TemplateVersion](ctx, h.store, domain.TemplateStream, id, meta, input,
		func(t template.TemplateVersion) ([]domain.Event, error) { return decide(t, at) })
	if err != nil {
		return commands.Outcome{}, err
	}
	return commands.Outcome{Result: res, ID: id}, nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
