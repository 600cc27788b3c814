package access

import (
	"context"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/placement"
	"cairn/domain/tenant"
)

// CreateLocation creates a location (a site or datacenter grouping nodes);
// LocationID is optional.
type CreateLocation struct {
	LocationID  string `json:"locationId,omitempty"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// UpdateLocation replaces a location's name and description.
type UpdateLocation struct {
	LocationID  string `json:"locationId"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// RetireLocation stops a location from taking new nodes and services.
type RetireLocation struct {
	LocationID string `json:"locationId"`
}

// CreateLocation creates a location.
func (h *Handlers) CreateLocation(ctx context.Context, meta commands.Meta, in CreateLocation) (commands.Outcome, error) {
	id, err := commands.EntityID(ctx, h.store, &meta, domain.LocationStream, in.LocationID, h.newID)
	if err != nil {
		return commands.Outcome{}, err
	}
	return execute(ctx, h, domain.LocationStream, "locationId", id, meta, in, func(l tenant.Location, at time.Time) ([]domain.Event, error) {
		return l.Create(tenant.CreateLocation{LocationID: id, Name: in.Name, Description: in.Description, At: at})
	})
}

// UpdateLocation updates an active location; no change records nothing.
func (h *Handlers) UpdateLocation(ctx context.Context, meta commands.Meta, in UpdateLocation) (commands.Outcome, error) {
	return execute(ctx, h, domain.LocationStream, "locationId", in.LocationID, meta, in, func(l tenant.Location, at time.Time) ([]domain.Event, error) {
		return l.Update(tenant.UpdateLocation{LocationID: in.LocationID, Name: in.Name, Description: in.Description, At: at})
	})
}

// RetireLocation retires an active location. Nodes already there stay; new
// ones are refused.
func (h *Handlers) RetireLocation(ctx context.Context, meta commands.Meta, in RetireLocation) (commands.Outcome, error) {
	return execute(ctx, h, domain.LocationStream, "locationId", in.LocationID, meta, in, func(l tenant.Location, at time.Time) ([]domain.Event, error) {
		return l.Retire(tenant.RetireLocation{LocationID: in.LocationID, At: at})
	})
}

// SetLocationReserve sets what of each node of a location the scheduler
// leaves to the system, for the nodes that set no reserve of their own.
type SetLocationReserve struct {
	LocationID string              `json:"locationId"`
	Reserve    placement.Resources `json:"reserve"`
}

// SetLocationReserve sets a location's reserve; the same reserve changes
// nothing.
func (h *Handlers) SetLocationReserve(ctx context.Context, meta commands.Meta, in SetLocationReserve) (commands.Outcome, error) {
	return execute(ctx, h, domain.LocationStream, "locationId", in.LocationID, meta, in, func(l placement.LocationLoad, at time.Time) ([]domain.Event, error) {
		return l.SetReserve(in.LocationID, in.Reserve, at)
	})
}
