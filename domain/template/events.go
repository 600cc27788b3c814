package template

import (
	"encoding/json"
	"time"

	"cairn/domain"
)

// Registered records a vendor's descriptor for one template version. A
// version registered again before it is published replaces the descriptor.
type Registered struct {
	Name       string          `json:"name"`
	Version    string          `json:"version"`
	Vendor     string          `json:"vendor"`
	Descriptor json.RawMessage `json:"descriptor"`
	Digest     string          `json:"digest"`
	At         time.Time       `json:"at"`
}

// Published makes the version deployable and freezes its descriptor.
type Published struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	At      time.Time `json:"at"`
}

// Deprecated keeps the version running where deployed but steers new
// deployments away from it.
type Deprecated struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}

func (Registered) EventType() string { return "template.registered" }
func (Published) EventType() string  { return "template.published" }
func (Deprecated) EventType() string { return "template.deprecated" }

// RegisterEvents registers every template event at its current schema version.
func RegisterEvents(r *domain.Registry) {
	domain.Register[Registered](r, 1)
	domain.Register[Published](r, 1)
	domain.Register[Deprecated](r, 1)
}
