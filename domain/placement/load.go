package placement

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"cairn/domain"
	"cairn/domain/node"
	"cairn/domain/tenant"
)

// Allocation is one resource's share of a node.
type Allocation struct {
	ServiceID string
	Request   Resources
	Groups    []string
}

// NodeLoad is a node as placement sees it, folded from the node's stream:
// the node itself, its reserve and what is allocated on it. It protects
// the rule that what is allocated fits what the node offers.
type NodeLoad struct {
	Node node.Node
	// Reserve is the node's own reserve; nil inherits its location's.
	Reserve     *Resources
	Allocations map[string]Allocation // by resource id
	Allocated   Resources
	Groups      map[string]int
}

// Apply folds one event of the node's stream.
func (l *NodeLoad) Apply(e domain.Event) {
	l.Node.Apply(e)
	switch e := e.(type) {
	case Allocated:
		if l.Allocations == nil {
			l.Allocations, l.Groups = map[string]Allocation{}, map[string]int{}
		}
		l.Allocations[e.ResourceID] = Allocation{ServiceID: e.ServiceID, Request: e.Request, Groups: slices.Clone(e.Groups)}
		l.Allocated = l.Allocated.Add(e.Request)
		for _, g := range e.Groups {
			l.Groups[g]++
		}
	case Released:
		delete(l.Allocations, e.ResourceID)
		l.Allocated = l.Allocated.Sub(e.Request)
		for _, g := range e.Groups {
			if l.Groups[g]--; l.Groups[g] <= 0 {
				delete(l.Groups, g)
			}
		}
	case ReserveSet:
		if e.Inherit {
			l.Reserve = nil
		} else {
			r := e.Reserve
			l.Reserve = &r
		}
	}
}

// Clone copies the load so that a tentative decision does not touch it.
func (l NodeLoad) Clone() NodeLoad {
	out := l
	out.Node.Labels = maps.Clone(l.Node.Labels)
	out.Allocations = maps.Clone(l.Allocations)
	out.Groups = maps.Clone(l.Groups)
	if l.Reserve != nil {
		r := *l.Reserve
		out.Reserve = &r
	}
	return out
}

// Allocatable is what the node offers, given its location's reserve (used
// when the node sets none of its own).
func (l NodeLoad) Allocatable(locationReserve Resources) Resources {
	reserve := locationReserve
	if l.Reserve != nil {
		reserve = *l.Reserve
	}
	return Allocatable(l.Node.Facts, reserve)
}

// NotReady says why the node takes no new work (see Candidate.NotReady).
func (l NodeLoad) NotReady() string {
	switch {
	case l.Node.Status == node.StatusOnline && !l.Node.Cordoned:
		return ""
	case l.Node.Cordoned || l.Node.Status == node.StatusDraining || l.Node.Status == node.StatusDrained:
		return "draining or drained"
	case l.Node.Status == node.StatusEnrolled:
		return "never connected"
	case l.Node.Status == node.StatusDecommissioned:
		return "decommissioned"
	case l.Node.FactsAt.IsZero():
		return ReasonNoFacts
	}
	return "offline"
}

// Allocate places a resource's request on the node.
type Allocate struct {
	NodeID     string
	ResourceID string
	ServiceID  string
	Request    Resources
	Groups     []string
	// LocationReserve is the reserve of the node's location.
	LocationReserve Resources
	At              time.Time
}

// CapacityError says that a request does not fit what is free on a node.
type CapacityError struct {
	NodeID  string
	Request Resources
	Free    Resources
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("node %q has %s free, less than the %s asked for", e.NodeID, e.Free, e.Request)
}

// Is makes errors.Is(err, ErrNoFit) true.
func (e *CapacityError) Is(target error) bool { return target == ErrNoFit }

// Allocate decides an allocation: refused on a node that takes no work or
// has not enough free; the same resource allocated again decides nothing.
func (l NodeLoad) Allocate(c Allocate) ([]domain.Event, error) {
	if !l.Node.Exists() {
		return nil, &domain.NotFoundError{Entity: "node", ID: c.NodeID}
	}
	if err := domain.FirstError(
		domain.ValidateID("resourceId", c.ResourceID),
		domain.ValidateOptionalID("serviceId", c.ServiceID),
		c.Request.Validate("request"),
		domain.ValidateAt(c.At),
	); err != nil {
		return nil, err
	}
	if _, ok := l.Allocations[c.ResourceID]; ok {
		return nil, nil
	}
	if why := l.NotReady(); why != "" {
		return nil, &domain.StateError{Entity: "node", ID: l.Node.ID, Command: "allocate", State: why}
	}
	free := l.Allocatable(c.LocationReserve).Sub(l.Allocated)
	if !c.Request.Fits(free) {
		return nil, &CapacityError{NodeID: l.Node.ID, Request: c.Request, Free: free}
	}
	return []domain.Event{Allocated{NodeID: l.Node.ID, ResourceID: c.ResourceID, ServiceID: c.ServiceID,
		Request: c.Request, Groups: slices.Clone(c.Groups), At: c.At.UTC()}}, nil
}

// Release gives a resource's allocation back; releasing what is not
// allocated decides nothing.
func (l NodeLoad) Release(resourceID string, at time.Time) ([]domain.Event, error) {
	a, ok := l.Allocations[resourceID]
	if !ok {
		return nil, nil
	}
	if err := domain.ValidateAt(at); err != nil {
		return nil, err
	}
	return []domain.Event{Released{NodeID: l.Node.ID, ResourceID: resourceID, Request: a.Request, Groups: slices.Clone(a.Groups), At: at.UTC()}}, nil
}

// SetReserve sets (or, with inherit, clears) the node's own reserve.
func (l NodeLoad) SetReserve(nodeID string, reserve Resources, inherit bool, at time.Time) ([]domain.Event, error) {
	if !l.Node.Exists() || l.Node.ID != nodeID {
		return nil, &domain.NotFoundError{Entity: "node", ID: nodeID}
	}
	if err := domain.FirstError(reserve.Validate("reserve"), domain.ValidateAt(at)); err != nil {
		return nil, err
	}
	if inherit && l.Reserve == nil || !inherit && l.Reserve != nil && *l.Reserve == reserve {
		return nil, nil
	}
	if inherit {
		reserve = Resources{}
	}
	return []domain.Event{ReserveSet{NodeID: nodeID, Reserve: reserve, Inherit: inherit, At: at.UTC()}}, nil
}

// LocationLoad is a location as placement sees it: its status and the
// reserve its nodes inherit.
type LocationLoad struct {
	Location tenant.Location
	Reserve  Resources
}

// Apply folds one event of the location's stream.
func (l *LocationLoad) Apply(e domain.Event) {
	l.Location.Apply(e)
	if e, ok := e.(LocationReserveSet); ok {
		l.Reserve = e.Reserve
	}
}

// SetReserve sets the reserve of the location's nodes.
func (l LocationLoad) SetReserve(locationID string, reserve Resources, at time.Time) ([]domain.Event, error) {
	if !l.Location.Exists() || l.Location.ID != locationID {
		return nil, &domain.NotFoundError{Entity: "location", ID: locationID}
	}
	if err := domain.FirstError(reserve.Validate("reserve"), domain.ValidateAt(at)); err != nil {
		return nil, err
	}
	if l.Reserve == reserve {
		return nil, nil
	}
	return []domain.Event{LocationReserveSet{LocationID: locationID, Reserve: reserve, At: at.UTC()}}, nil
}

// Placements decides the two halves of an allocation: the node's
// Allocated and the resource's Placed.
func Placements(allocated Allocated) (onNode, onResource domain.Event) {
	return allocated, Placed{ResourceID: allocated.ResourceID, NodeID: allocated.NodeID, Request: allocated.Request, At: allocated.At}
}
