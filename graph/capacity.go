package graph

import (
	"math"

	"cairn/domain/node"
	"cairn/domain/placement"
	"cairn/graph/apierr"
	"cairn/graph/model"
	"cairn/internal/ptr"
	"cairn/projections/readmodel"
)

func resourcesModel(r placement.Resources) *model.Resources {
	return &model.Resources{CPU: float64(r.CPUMillis) / 1000, MemoryBytes: r.MemoryBytes, DiskBytes: r.DiskBytes}
}

// resourcesInput converts amounts given in the API; field names the input
// in errors. A negative amount is the domain's to refuse.
func resourcesInput(field string, in *model.ResourcesInput) (placement.Resources, error) {
	if in == nil {
		return placement.Resources{}, nil
	}
	cpu := ptr.Value(in.CPU)
	if math.IsNaN(cpu) || math.IsInf(cpu, 0) || math.Abs(cpu) > 1e9 {
		return placement.Resources{}, apierr.InvalidInput(field+".cpu", "is not a number of CPUs any node has")
	}
	return placement.Resources{CPUMillis: int64(math.Round(cpu * 1000)), MemoryBytes: ptr.Value(in.MemoryBytes), DiskBytes: ptr.Value(in.DiskBytes)}, nil
}

func nodeCapacityModel(c readmodel.Capacity) *model.NodeCapacity {
	out := &model.NodeCapacity{Allocatable: resourcesModel(c.Allocatable), Allocated: resourcesModel(c.Allocated),
		LocationReserve: resourcesModel(c.LocationReserve), Allocations: c.Allocations, Fill: c.Fill()}
	if c.Reserve != nil {
		out.Reserve = resourcesModel(*c.Reserve)
	}
	return out
}

func locationCapacityModel(c readmodel.LocationCapacity) *model.LocationCapacity {
	out := &model.LocationCapacity{Allocatable: resourcesModel(c.Allocatable), Allocated: resourcesModel(c.Allocated),
		Reserve: resourcesModel(c.Reserve), Nodes: c.Nodes, SchedulableNodes: c.Schedulable, RunningTotal: c.RunningTotal,
		Fullest: []model.NodeFill{}, Running: []model.Allocation{}}
	for _, f := range c.Fullest {
		out.Fullest = append(out.Fullest, model.NodeFill{NodeID: f.Node.ID, Hostname: f.Node.Hostname,
			Status: model.NodeStatus(upper(f.Node.Status)), Capacity: nodeCapacityModel(f.Capacity)})
	}
	for _, a := range c.Running {
		out.Running = append(out.Running, model.Allocation{ResourceID: a.ResourceID, ResourceType: a.ResourceType,
			ServiceID: optional(a.ServiceID), ServiceName: optional(a.ServiceName), NodeID: a.NodeID, Hostname: a.Hostname,
			Request: resourcesModel(a.Request), AllocatedAt: a.AllocatedAt})
	}
	return out
}

// The API's label operators and the domain's.
var labelOperators = map[model.LabelOperator]node.Operator{
	model.LabelOperatorEquals: node.OpEquals, model.LabelOperatorNotEquals: node.OpNotEquals,
	model.LabelOperatorIn: node.OpIn, model.LabelOperatorNotIn: node.OpNotIn,
	model.LabelOperatorExists: node.OpExists, model.LabelOperatorNotExists: node.OpNotExists,
}

func requirementsInput(in []model.LabelRequirementInput) node.Selector {
	var out node.Selector
	for _, r := range in {
		out = append(out, node.Requirement{Key: r.Key, Op: labelOperators[r.Operator], Values: r.Values})
	}
	return out
}

func requirementsModel(s node.Selector) []model.LabelRequirement {
	out := []model.LabelRequirement{}
	for _, r := range s {
		for api, op := range labelOperators {
			if op == r.Op {
				values := r.Values
				if values == nil {
					values = []string{}
				}
				out = append(out, model.LabelRequirement{Key: r.Key, Operator: api, Values: values})
			}
		}
	}
	return out
}
