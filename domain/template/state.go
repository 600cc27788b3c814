// Package template holds the service catalog: one aggregate per version of a
// vendor's service descriptor.
package template

import (
	"slices"
	"time"

	"cairn/domain"
)

// Status is where a template version is in its life.
type Status string

const (
	// StatusValidated: registered with a descriptor the caller parsed and
	// validated against the descriptor schema; the vendor may still replace it.
	StatusValidated  Status = "validated"
	StatusPublished  Status = "published"  // deployable; the descriptor is frozen
	StatusDeprecated Status = "deprecated" // frozen; not offered for new deployments
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusValidated, StatusPublished, StatusDeprecated}

// ID names the stream of one template version: "name@version".
func ID(name, version string) string { return name + "@" + version }

// TemplateVersion is the state of one version of a template.
type TemplateVersion struct {
	Name              string
	Version           string
	Vendor            string
	Descriptor        []byte // JSON
	Digest            string
	Status            Status
	RegisteredAt      time.Time
	PublishedAt       time.Time
	DeprecatedAt      time.Time
	DeprecationReason string
}

// Exists reports whether the version has been registered.
func (t TemplateVersion) Exists() bool { return t.Status != "" }

// ID returns "name@version".
func (t TemplateVersion) ID() string { return ID(t.Name, t.Version) }

// Deployable reports whether new services may be deployed from this version.
func (t TemplateVersion) Deployable() bool { return t.Status == StatusPublished }

// Apply folds one event into the state. Unknown events are ignored.
func (t *TemplateVersion) Apply(e domain.Event) {
	switch e := e.(type) {
	case Registered:
		t.Name = e.Name
		t.Version = e.Version
		t.Vendor = e.Vendor
		t.Descriptor = slices.Clone([]byte(e.Descriptor))
		t.Digest = e.Digest
		t.Status = StatusValidated
		t.RegisteredAt = e.At
	case Published:
		t.Status = StatusPublished
		t.PublishedAt = e.At
	case Deprecated:
		t.Status = StatusDeprecated
		t.DeprecatedAt = e.At
		t.DeprecationReason = e.Reason
	}
}
