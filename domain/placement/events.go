package placement

import (
	"time"

	"cairn/domain"
)

// Allocated records that a resource's request was allocated on a node (on
// the node's stream; the resource's stream records resource.placed).
type Allocated struct {
	NodeID     string    `json:"nodeId"`
	ResourceID string    `json:"resourceId"`
	ServiceID  string    `json:"serviceId,omitempty"`
	Request    Resources `json:"request"`
	// Groups are the spread and distinct groups the resource counts in.
	Groups []string  `json:"groups,omitempty"`
	At     time.Time `json:"at"`
}

// Released records that an allocation ended (the resource was destroyed or
// moved), giving its request back.
type Released struct {
	NodeID     string    `json:"nodeId"`
	ResourceID string    `json:"resourceId"`
	Request    Resources `json:"request"`
	Groups     []string  `json:"groups,omitempty"`
	At         time.Time `json:"at"`
}

// ReserveSet records what of a node the scheduler must leave to the system;
// Inherit means the node's location's reserve applies instead.
type ReserveSet struct {
	NodeID  string    `json:"nodeId"`
	Reserve Resources `json:"reserve"`
	Inherit bool      `json:"inherit,omitempty"`
	At      time.Time `json:"at"`
}

// LocationReserveSet records the reserve of every node of a location that
// sets none itself.
type LocationReserveSet struct {
	LocationID string    `json:"locationId"`
	Reserve    Resources `json:"reserve"`
	At         time.Time `json:"at"`
}

// Placed records, on the resource's stream, the node its request was
// allocated on.
type Placed struct {
	ResourceID string    `json:"resourceId"`
	NodeID     string    `json:"nodeId"`
	Request    Resources `json:"request"`
	At         time.Time `json:"at"`
}

// Unplaced records, on the resource's stream, that its allocation ended.
type Unplaced struct {
	ResourceID string    `json:"resourceId"`
	NodeID     string    `json:"nodeId"`
	At         time.Time `json:"at"`
}

func (Placed) EventType() string             { return "resource.placed" }
func (Unplaced) EventType() string           { return "resource.unplaced" }
func (Allocated) EventType() string          { return "node.allocated" }
func (Released) EventType() string           { return "node.released" }
func (ReserveSet) EventType() string         { return "node.reserve_set" }
func (LocationReserveSet) EventType() string { return "location.reserve_set" }

// RegisterEvents registers the placement events.
func RegisterEvents(r *domain.Registry) {
	domain.Register[Placed](r, 1)
	domain.Register[Unplaced](r, 1)
	domain.Register[Allocated](r, 1)
	domain.Register[Released](r, 1)
	domain.Register[ReserveSet](r, 1)
	domain.Register[LocationReserveSet](r, 1)
}
