package node

import (
	"maps"
	"time"

	"cairn/domain"
)

// Status is where a node is in its life.
type Status string

const (
	StatusEnrolled       Status = "enrolled"       // enrolled, agent not connected yet
	StatusOnline         Status = "online"         // connected and schedulable
	StatusDraining       Status = "draining"       // connected, takes no new work, jobs still running
	StatusDrained        Status = "drained"        // connected, takes no new work, no jobs running
	StatusDisconnected   Status = "disconnected"   // silent past the grace period
	StatusDown           Status = "down"           // silent past the down window
	StatusDecommissioned Status = "decommissioned" // retired for good
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{
	StatusEnrolled, StatusOnline, StatusDraining, StatusDrained,
	StatusDisconnected, StatusDown, StatusDecommissioned,
}

// Node is the state of one node, folded from its events.
type Node struct {
	ID         string
	Hostname   string
	LocationID string
	Labels     map[string]string
	Facts      Facts
	FactsAt    time.Time
	Status     Status
	// Cordoned is the operator's drain intent. It outlives a disconnect so that
	// a node drained for maintenance is not handed work when it comes back.
	Cordoned       bool
	DrainReason    string
	EnrolledAt     time.Time
	ConnectedAt    time.Time // last (re)connection
	DisconnectedAt time.Time // last disconnection
	UpdatedAt      time.Time
}

// Exists reports whether the node has been enrolled.
func (n Node) Exists() bool { return n.Status != "" }

// Schedulable reports whether new jobs may be placed on the node.
func (n Node) Schedulable() bool { return n.Status == StatusOnline && !n.Cordoned }

// Matches reports whether the node carries every label of the selector.
func (n Node) Matches(selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Apply folds one event into the state. Unknown events are ignored so that
// an older build can still fold a stream.
func (n *Node) Apply(e domain.Event) {
	switch e := e.(type) {
	case Enrolled:
		n.UpdatedAt = e.At
		n.ID = e.NodeID
		n.Hostname = e.Hostname
		n.LocationID = e.LocationID
		n.Labels = maps.Clone(e.Labels)
		n.Status = StatusEnrolled
		n.EnrolledAt = e.At
	case Connected:
		n.UpdatedAt = e.At
		n.Status = StatusOnline
		if n.Cordoned {
			// Jobs may have survived the disconnect on the agent; the caller
			// marks the node drained once none is running.
			n.Status = StatusDraining
		}
		n.ConnectedAt = e.At
	case Disconnected:
		n.UpdatedAt = e.At
		n.Status = StatusDisconnected
		n.DisconnectedAt = e.At
	case WentDown:
		n.UpdatedAt = e.At
		n.Status = StatusDown
	case LabelsSet:
		n.UpdatedAt = e.At
		n.Labels = maps.Clone(e.Labels)
	case LocationSet:
		n.UpdatedAt = e.At
		n.LocationID = e.LocationID
	case FactsReported:
		n.UpdatedAt = e.At
		n.Facts = e.Facts.clone()
		n.FactsAt = e.At
	case DrainRequested:
		n.UpdatedAt = e.At
		n.Cordoned = true
		n.DrainReason = e.Reason
		if n.Status == StatusOnline {
			n.Status = StatusDraining
		}
	case Drained:
		n.UpdatedAt = e.At
		n.Status = StatusDrained
	case Undrained:
		n.UpdatedAt = e.At
		n.Cordoned = false
		n.DrainReason = ""
		if n.Status == StatusDraining || n.Status == StatusDrained {
			n.Status = StatusOnline
		}
	case Decommissioned:
		n.UpdatedAt = e.At
		n.Status = StatusDecommissioned
	}
}
