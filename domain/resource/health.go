package resource

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"cairn/domain"
)

// Health: a resource's descriptor may declare health checks; the
// reconciler has the plugin that owns the resource evaluate them while its
// service runs, and records a check's result only when it changes.

// HealthCheck is one check of the resource as planned: its properties have
// variables substituted; references to outputs resolve when it is run.
type HealthCheck struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties,omitempty"`
	Interval   time.Duration   `json:"interval"`
	Timeout    time.Duration   `json:"timeout"`
}

// CheckResult is the last recorded result of one check.
type CheckResult struct {
	Healthy bool
	Detail  string
	Since   time.Time
}

// HealthChanged records that a check's result changed.
type HealthChanged struct {
	ResourceID string    `json:"resourceId"`
	Check      string    `json:"check"`
	Healthy    bool      `json:"healthy"`
	Detail     string    `json:"detail,omitempty"`
	At         time.Time `json:"at"`
}

func (HealthChanged) EventType() string { return "resource.health_changed" }

// MaxHealthChecks bounds the checks of one resource.
const MaxHealthChecks = 64

func (r *Resource) applyHealth(e domain.Event) bool {
	h, ok := e.(HealthChanged)
	if !ok {
		return false
	}
	if r.Health == nil {
		r.Health = map[string]CheckResult{}
	}
	r.Health[h.Check] = CheckResult{Healthy: h.Healthy, Detail: h.Detail, Since: h.At}
	r.UpdatedAt = h.At
	return true
}

// Healthy reports whether every recorded check passed (true with none).
func (r Resource) Healthy() bool {
	for _, c := range r.Health {
		if !c.Healthy {
			return false
		}
	}
	return true
}

// RecordHealth decides a check's result: an event when it differs from the
// one recorded, nothing otherwise. A check with no result recorded counts
// as passing, so healthy services record nothing at all.
func (r Resource) RecordHealth(check string, healthy bool, detail string, at time.Time) ([]domain.Event, error) {
	if !r.Exists() {
		return nil, &domain.NotFoundError{Entity: entity, ID: r.ID}
	}
	if !slices.ContainsFunc(r.Checks, func(c HealthCheck) bool { return c.Name == check }) {
		return nil, domain.Invalid("check", fmt.Sprintf("resource %s has no health check %q", r.ID, check))
	}
	if err := domain.FirstError(domain.ValidateText("detail", detail, MaxDriftDetailLength), domain.ValidateAt(at)); err != nil {
		return nil, err
	}
	prev, ok := r.Health[check]
	if ok && prev.Healthy == healthy || !ok && healthy {
		return nil, nil
	}
	if healthy {
		detail = ""
	}
	return []domain.Event{HealthChanged{ResourceID: r.ID, Check: check, Healthy: healthy, Detail: detail, At: at.UTC()}}, nil
}

func validateChecks(cs []HealthCheck) error {
	if len(cs) > MaxHealthChecks {
		return domain.Invalid("checks", fmt.Sprintf("%d health checks; a resource has at most %d", len(cs), MaxHealthChecks))
	}
	for i, c := range cs {
		if c.Name == "" || c.Type == "" {
			return domain.Invalid(fmt.Sprintf("checks[%d]", i), "a health check has a name and a type")
		}
	}
	return nil
}
