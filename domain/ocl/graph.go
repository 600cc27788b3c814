package ocl

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// ServiceContext identifies the service instance a plan is for. ID seeds the
// resource ids, so it must be stable for the life of the service.
type ServiceContext struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
}

// Node is one instance of a resource in an execution graph.
type Node struct {
	// Name addresses the instance: "web" for a resource without count,
	// "web[0]", "web[1]", ... for one with count.
	Name     string `json:"name"`
	Resource string `json:"resource"`
	// Index is the instance index, or -1 when the resource has no count.
	Index int `json:"index"`
	// ResourceID is ResourceID(service id, Name): what the plugin sees.
	ResourceID string `json:"resourceId"`
	Plugin     string `json:"plugin"`
	Type       string `json:"type"`
	// Properties have variables, service fields and count.index substituted;
	// references to other resources' outputs remain as ${...} for
	// ResolveProperties to fill once those resources exist.
	Properties json.RawMessage `json:"properties,omitempty"`
	// Placement is fully resolved; nil when the descriptor gives none.
	Placement *Placement `json:"placement,omitempty"`
	// Requests are fully resolved; nil when the descriptor gives none.
	Requests *PlannedRequests `json:"requests,omitempty"`
	// DependsOn names the nodes that must be in place before this one, from
	// dependsOn and from output references, in plan order.
	DependsOn []string `json:"dependsOn,omitempty"`
	// Sensitive is set when the properties or placement hold the value of a
	// sensitive variable: do not log them.
	Sensitive bool `json:"sensitive,omitempty"`
}

func (n Node) clone() Node {
	n.Properties = slices.Clone(n.Properties)
	n.DependsOn = slices.Clone(n.DependsOn)
	if n.Placement != nil {
		p := *n.Placement
		p.Labels = maps.Clone(p.Labels)
		n.Placement = &p
	}
	if n.Requests != nil {
		r := *n.Requests
		n.Requests = &r
	}
	return n
}

// PlannedOutput is an output with variables substituted; resolve its Value
// with ResolveProperties once the resources it names exist.
type PlannedOutput struct {
	Value       json.RawMessage `json:"value"`
	Description string          `json:"description,omitempty"`
	Sensitive   bool            `json:"sensitive,omitempty"`
}

// PlannedHealthCheck is a health check bound to one node. Properties are in
// the same form as Node.Properties.
type PlannedHealthCheck struct {
	Name       string          `json:"name"`
	Node       string          `json:"node"`
	Type       HealthCheckType `json:"type"`
	Properties json.RawMessage `json:"properties,omitempty"`
	Interval   time.Duration   `json:"interval"`
	Timeout    time.Duration   `json:"timeout"`
}

// Graph is an execution plan: nodes, their dependencies and derived orders.
// It is immutable; accessors return copies.
type Graph struct {
	nodes      []Node
	byName     map[string]int
	levels     [][]string
	dependents map[string][]string
	outputs    map[string]PlannedOutput
	checks     []PlannedHealthCheck
}

// newGraph indexes nodes and layers them. It refuses dangling or cyclic
// dependencies, so a Graph is always walkable.
func newGraph(nodes []Node, outputs map[string]PlannedOutput, checks []PlannedHealthCheck) (*Graph, error) {
	g := &Graph{
		nodes:      nodes,
		byName:     make(map[string]int, len(nodes)),
		dependents: map[string][]string{},
		outputs:    outputs,
		checks:     checks,
	}
	for i, n := range nodes {
		if _, dup := g.byName[n.Name]; dup {
			return nil, fmt.Errorf("node %q appears twice", n.Name)
		}
		g.byName[n.Name] = i
	}
	for _, n := range nodes {
		for _, dep := range n.DependsOn {
			if _, ok := g.byName[dep]; !ok {
				return nil, fmt.Errorf("node %q depends on %q, which is not in the graph", n.Name, dep)
			}
			g.dependents[dep] = append(g.dependents[dep], n.Name)
		}
	}
	for _, hc := range checks {
		if _, ok := g.byName[hc.Node]; !ok {
			return nil, fmt.Errorf("health check %q is for node %q, which is not in the graph", hc.Name, hc.Node)
		}
	}
	level, err := g.layer()
	if err != nil {
		return nil, err
	}
	for i, n := range nodes {
		for len(g.levels) <= level[i] {
			g.levels = append(g.levels, nil)
		}
		g.levels[level[i]] = append(g.levels[level[i]], n.Name)
	}
	return g, nil
}

// layer puts each node one level above its deepest dependency, so every level
// can run in parallel once the levels before it are done.
func (g *Graph) layer() ([]int, error) {
	const (
		unvisited = iota
		visiting
		done
	)
	level := make([]int, len(g.nodes))
	state := make([]uint8, len(g.nodes))
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("dependency cycle through node %q", g.nodes[i].Name)
		}
		state[i] = visiting
		for _, dep := range g.nodes[i].DependsOn {
			j := g.byName[dep]
			if err := visit(j); err != nil {
				return err
			}
			level[i] = max(level[i], level[j]+1)
		}
		state[i] = done
		return nil
	}
	for i := range g.nodes {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	return level, nil
}

// Nodes returns the nodes in plan order: resources as declared, instances by
// index.
func (g *Graph) Nodes() []Node {
	out := make([]Node, len(g.nodes))
	for i, n := range g.nodes {
		out[i] = n.clone()
	}
	return out
}

// Node returns the node with the given instance name.
func (g *Graph) Node(name string) (Node, bool) {
	i, ok := g.byName[name]
	if !ok {
		return Node{}, false
	}
	return g.nodes[i].clone(), true
}

// Levels returns the nodes in topological layers: level 0 depends on nothing,
// level k only on earlier levels. Within a level, plan order.
func (g *Graph) Levels() [][]string {
	out := make([][]string, len(g.levels))
	for i, l := range g.levels {
		out[i] = slices.Clone(l)
	}
	return out
}

// ReverseLevels returns Levels last layer first: the parallel schedule for
// stopping and removing.
func (g *Graph) ReverseLevels() [][]string {
	out := g.Levels()
	slices.Reverse(out)
	return out
}

// Walk returns Levels, or ReverseLevels when reverse is set.
func (g *Graph) Walk(reverse bool) [][]string {
	if reverse {
		return g.ReverseLevels()
	}
	return g.Levels()
}

// Order returns a topological order (dependencies first) for creating and
// starting, stable for a given descriptor.
func (g *Graph) Order() []string {
	var out []string
	for _, l := range g.levels {
		out = append(out, l...)
	}
	return out
}

// Reverse returns Order backwards (dependents first) for stopping and
// removing.
func (g *Graph) Reverse() []string {
	out := g.Order()
	slices.Reverse(out)
	return out
}

// Dependents returns the nodes that depend directly on the named one, in
// plan order.
func (g *Graph) Dependents(name string) []string {
	return slices.Clone(g.dependents[name])
}

// Outputs returns the planned outputs by name.
func (g *Graph) Outputs() map[string]PlannedOutput {
	out := make(map[string]PlannedOutput, len(g.outputs))
	for k, o := range g.outputs {
		o.Value = slices.Clone(o.Value)
		out[k] = o
	}
	return out
}

// HealthChecks returns the health checks, one per check and node.
func (g *Graph) HealthChecks() []PlannedHealthCheck {
	out := slices.Clone(g.checks)
	for i := range out {
		out[i].Properties = slices.Clone(out[i].Properties)
	}
	return out
}

type graphJSON struct {
	Nodes        []Node                   `json:"nodes"`
	Outputs      map[string]PlannedOutput `json:"outputs,omitempty"`
	HealthChecks []PlannedHealthCheck     `json:"healthChecks,omitempty"`
}

// MarshalJSON encodes the graph so it can be recorded in an event.
func (g *Graph) MarshalJSON() ([]byte, error) {
	return json.Marshal(graphJSON{Nodes: g.nodes, Outputs: g.outputs, HealthChecks: g.checks})
}

// UnmarshalJSON rebuilds a recorded graph, checking it as Plan would.
func (g *Graph) UnmarshalJSON(data []byte) error {
	var raw graphJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	ng, err := newGraph(raw.Nodes, raw.Outputs, raw.HealthChecks)
	if err != nil {
		return fmt.Errorf("decode graph: %w", err)
	}
	*g = *ng
	return nil
}
