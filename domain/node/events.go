package node

import (
	"time"

	"cairn/domain"
)

// Enrolled records a node's first appearance: its agent traded a join token
// for a node credential.
type Enrolled struct {
	NodeID     string            `json:"nodeId"`
	Hostname   string            `json:"hostname"`
	LocationID string            `json:"locationId,omitempty"`
	Labels     map[string]string `json:"labels"`
	At         time.Time         `json:"at"`
}

// Connected records that the node's agent is connected: for the first time, or
// again after a disconnect. A node that comes back is the same node.
type Connected struct {
	NodeID string    `json:"nodeId"`
	At     time.Time `json:"at"`
}

// Disconnected records that the agent was silent for longer than the grace period.
type Disconnected struct {
	NodeID string    `json:"nodeId"`
	At     time.Time `json:"at"`
}

// WentDown records that a disconnected node stayed away past the down window.
type WentDown struct {
	NodeID string    `json:"nodeId"`
	At     time.Time `json:"at"`
}

// LabelsSet replaces the node's labels.
type LabelsSet struct {
	NodeID string            `json:"nodeId"`
	Labels map[string]string `json:"labels"`
	At     time.Time         `json:"at"`
}

// LocationSet moves the node to a location ("" leaves it unassigned).
type LocationSet struct {
	NodeID     string    `json:"nodeId"`
	LocationID string    `json:"locationId,omitempty"`
	At         time.Time `json:"at"`
}

// FactsReported records what the agent found about its hardware and OS.
type FactsReported struct {
	NodeID string    `json:"nodeId"`
	Facts  Facts     `json:"facts"`
	At     time.Time `json:"at"`
}

// DrainRequested records the operator's wish that the node take no new work.
type DrainRequested struct {
	NodeID string    `json:"nodeId"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// Drained records that a draining node has no running jobs left.
type Drained struct {
	NodeID string    `json:"nodeId"`
	At     time.Time `json:"at"`
}

// Undrained lifts a drain: the node may take work again.
type Undrained struct {
	NodeID string    `json:"nodeId"`
	At     time.Time `json:"at"`
}

// Decommissioned retires the node for good; its id is never reused.
type Decommissioned struct {
	NodeID string    `json:"nodeId"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

func (Enrolled) EventType() string       { return "node.enrolled" }
func (Connected) EventType() string      { return "node.connected" }
func (Disconnected) EventType() string   { return "node.disconnected" }
func (WentDown) EventType() string       { return "node.went_down" }
func (LabelsSet) EventType() string      { return "node.labels_set" }
func (LocationSet) EventType() string    { return "node.location_set" }
func (FactsReported) EventType() string  { return "node.facts_reported" }
func (DrainRequested) EventType() string { return "node.drain_requested" }
func (Drained) EventType() string        { return "node.drained" }
func (Undrained) EventType() string      { return "node.undrained" }
func (Decommissioned) EventType() string { return "node.decommissioned" }

// RegisterEvents registers every node event at its current schema version.
func RegisterEvents(r *domain.Registry) {
	domain.Register[Enrolled](r, 1)
	domain.Register[Connected](r, 1)
	domain.Register[Disconnected](r, 1)
	domain.Register[WentDown](r, 1)
	domain.Register[LabelsSet](r, 1)
	domain.Register[LocationSet](r, 1)
	domain.Register[FactsReported](r, 1)
	domain.Register[DrainRequested](r, 1)
	domain.Register[Drained](r, 1)
	domain.Register[Undrained](r, 1)
	domain.Register[Decommissioned](r, 1)
}
