package ocl

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Plan expands the descriptor into an execution graph for one service.
//
// vars are the values ResolveVariables returned. Each resource becomes one
// node, or one node per instance when it has a count ("web[0]", "web[1]";
// a count of 0 yields none). In properties, placement, outputs and health
// checks, ${var.*}, ${service.*} and ${count.index} are replaced now; output
// references stay for ResolveProperties, with their index made concrete.
// Dependencies come from dependsOn (on every instance of the named resource)
// and from output references (on the referenced instance).
//
// Plan validates the descriptor first (without a plugin catalog) and returns
// a *ValidationError for it, for a count variable out of range, or for an
// index past a resource's instances.
func (d *Descriptor) Plan(vars map[string]json.RawMessage, svc ServiceContext) (*Graph, error) {
	if err := d.Validate(nil); err != nil {
		return nil, err
	}
	var ps problems
	pl := &planner{d: d, svc: svc, ps: &ps, values: map[string]any{}, count: map[string]int{}}
	if svc.ID == "" {
		ps.add("service.id", "is required: resource ids are derived from it")
	}
	for _, name := range sortedKeys(vars) {
		v, err := decodeValue(vars[name])
		if err != nil {
			ps.add(path("variables").key(name), "is not valid JSON: %v", err)
			continue
		}
		pl.values[name] = v
	}
	pl.counts()
	if len(ps) > 0 {
		return nil, ps.err()
	}
	nodes := pl.nodes()
	outputs := pl.outputs()
	checks := pl.healthChecks()
	if len(ps) > 0 {
		return nil, ps.err()
	}
	g, err := newGraph(nodes, outputs, checks)
	if err != nil {
		// Validate rules this out; report it rather than hand over a bad plan.
		return nil, &ValidationError{Problems: []Problem{{Path: "resources", Message: err.Error()}}}
	}
	return g, nil
}

type planner struct {
	d      *Descriptor
	svc    ServiceContext
	ps     *problems
	values map[string]any
	count  map[string]int // instances per resource; -1 for no count
}

// counts evaluates every resource's count.
func (pl *planner) counts() {
	total := 0
	for i, r := range pl.d.Resources {
		n := pl.countOf(path("resources").index(i).key("count"), r)
		pl.count[r.Name] = n
		total += len(instances(n))
	}
	if total > MaxInstances {
		pl.ps.add("resources", "the plan has %d instances; at most %d are allowed", total, MaxInstances)
	}
}

func (pl *planner) countOf(p path, r Resource) int {
	if !r.Counted() {
		return -1
	}
	v, err := decodeValue(r.Count)
	if err != nil {
		pl.ps.add(p, "is not valid JSON: %v", err)
		return 0
	}
	source := ""
	if s, ok := v.(string); ok {
		t, err := parseTemplate(s)
		ref, single := t.single()
		if err != nil || !single || ref.kind != refVar {
			pl.ps.add(p, "must be an integer or a single ${var.NAME} expression")
			return 0
		}
		val, ok := pl.values[ref.name]
		if !ok {
			pl.ps.add(p, "variable %q has no value; resolve variables with ResolveVariables first", ref.name)
			return 0
		}
		v, source = val, fmt.Sprintf("variable %q ", ref.name)
	}
	n, ok := v.(json.Number)
	if ok {
		if i, err := strconv.Atoi(string(n)); err == nil && i >= 0 && i <= MaxCount {
			return i
		}
	}
	pl.ps.add(p, "%sis %s; a count must be an integer from 0 to %d", source, display(v), MaxCount)
	return 0
}

// nodes expands resources into instances in plan order.
func (pl *planner) nodes() []Node {
	var (
		nodes []Node
		deps  []map[string]bool
	)
	for i, r := range pl.d.Resources {
		p := path("resources").index(i)
		for _, idx := range instances(pl.count[r.Name]) {
			n := Node{
				Name:     instanceName(r.Name, idx),
				Resource: r.Name,
				Index:    idx,
				Plugin:   r.Plugin,
				Type:     r.Type,
			}
			n.ResourceID = ResourceID(pl.svc.ID, n.Name)
			env := &expansion{index: idx, deps: map[string]bool{}}
			for _, dep := range r.DependsOn {
				for _, di := range instances(pl.count[dep]) {
					env.deps[instanceName(dep, di)] = true
				}
			}
			n.Properties = pl.expandJSON(p.key("properties"), r.Properties, env)
			if r.Placement != nil {
				n.Placement = pl.placement(p.key("placement"), r.Placement, env)
			}
			if r.Requests != nil {
				n.Requests = pl.requests(p.key("requests"), r.Requests, env)
			}
			n.Sensitive = env.sensitive
			nodes = append(nodes, n)
			deps = append(deps, env.deps)
		}
	}
	// List dependencies in plan order, now that every node's position is
	// known (a resource may depend on one declared after it).
	pos := make(map[string]int, len(nodes))
	for i, n := range nodes {
		pos[n.Name] = i
	}
	for i := range nodes {
		for name := range deps[i] {
			nodes[i].DependsOn = append(nodes[i].DependsOn, name)
		}
		sort.Slice(nodes[i].DependsOn, func(a, b int) bool {
			return pos[nodes[i].DependsOn[a]] < pos[nodes[i].DependsOn[b]]
		})
	}
	return nodes
}

// instances lists the indexes of a resource's instances: [-1] for one without
// count.
func instances(count int) []int {
	if count < 0 {
		return []int{-1}
	}
	out := make([]int, count)
	for i := range out {
		out[i] = i
	}
	return out
}

// expansion is the state of substituting one value.
type expansion struct {
	index     int             // count.index, or -1
	deps      map[string]bool // collects referenced instances; nil when references add no dependency
	final     bool            // the result goes straight to use: no escaping, no output references
	text      bool            // the result must be a string even for a lone expression
	sensitive bool            // a sensitive variable was substituted
}

func (pl *planner) expandJSON(p path, raw json.RawMessage, e *expansion) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	v, err := decodeValue(raw)
	if err != nil {
		pl.ps.add(p, "is not valid JSON: %v", err)
		return nil
	}
	out, _ := walkStrings(v, p, func(at path, s string) (any, error) {
		return pl.expandString(at, s, e), nil
	})
	return encodeCanonical(out)
}

func (pl *planner) placement(p path, pc *Placement, e *expansion) *Placement {
	pe := &expansion{index: e.index, final: true, text: true}
	out := &Placement{Location: pl.expandString(p.key("location"), pc.Location, pe).(string)}
	if len(pc.Labels) > 0 {
		out.Labels = make(map[string]string, len(pc.Labels))
		for _, k := range sortedKeys(pc.Labels) {
			out.Labels[k] = pl.expandString(p.key("labels").key(k), pc.Labels[k], pe).(string)
		}
	}
	out.Selector = pl.expandString(p.key("selector"), pc.Selector, pe).(string)
	pl.checkSelector(p.key("selector"), out.Selector)
	out.Spread, out.Distinct = pc.Spread, pc.Distinct
	e.sensitive = e.sensitive || pe.sensitive
	return out
}

// expandString substitutes what is known at plan time in one string value.
func (pl *planner) expandString(at path, s string, e *expansion) any {
	t, err := parseTemplate(s)
	if err != nil {
		pl.ps.add(at, "%v", err)
		return s
	}
	if r, ok := t.single(); ok && !e.text {
		return pl.refValue(at, r, e)
	}
	var b strings.Builder
	for _, seg := range t {
		switch {
		case seg.ref == nil && e.final:
			b.WriteString(seg.text)
		case seg.ref == nil:
			b.WriteString(escapeText(seg.text))
		case seg.ref.kind == refResource:
			b.WriteString(pl.refValue(at, *seg.ref, e).(string))
		default:
			// Interpolate the plain value as text, then escape that text
			// once so that ResolveProperties reads it back literally.
			plain := &expansion{index: e.index, final: true}
			b.WriteString(textOrEscaped(textOf(pl.refValue(at, *seg.ref, plain)), e.final))
			e.sensitive = e.sensitive || plain.sensitive
		}
	}
	return b.String()
}

func textOrEscaped(s string, final bool) string {
	if final {
		return s
	}
	return escapeText(s)
}

// refValue is the plan-time value of one reference: the variable's value with
// its JSON type, a service field, the index, or, for an output reference, the
// reference itself with a concrete index.
func (pl *planner) refValue(at path, r ref, e *expansion) any {
	switch r.kind {
	case refVar:
		v, ok := pl.values[r.name]
		if !ok {
			pl.ps.add(at, "variable %q has no value; resolve variables with ResolveVariables first", r.name)
			return nil
		}
		if pl.d.Variables[r.name].Sensitive {
			e.sensitive = true
		}
		if e.final {
			return deepCopy(v)
		}
		return escapeValue(v)
	case refServiceID:
		return textOrEscaped(pl.svc.ID, e.final)
	case refServiceTenant:
		return textOrEscaped(pl.svc.Tenant, e.final)
	case refCountIndex:
		return json.Number(strconv.Itoa(e.index))
	}
	idx := -1
	switch r.mode {
	case indexLiteral:
		idx = r.index
	case indexCount:
		idx = e.index
	}
	if n := pl.count[r.name]; idx >= 0 && idx >= n {
		pl.ps.add(at, "index %d is out of range: resource %q has %s", idx, r.name, plural(n, "instance"))
	}
	if e.deps != nil {
		e.deps[instanceName(r.name, idx)] = true
	}
	concrete := ref{kind: refResource, name: r.name, key: r.key}
	if idx >= 0 {
		concrete.mode, concrete.index = indexLiteral, idx
	}
	return "${" + concrete.String() + "}"
}

func (pl *planner) outputs() map[string]PlannedOutput {
	out := make(map[string]PlannedOutput, len(pl.d.Outputs))
	for _, name := range sortedKeys(pl.d.Outputs) {
		o := pl.d.Outputs[name]
		e := &expansion{index: -1}
		v := pl.expandJSON(path("outputs").key(name).key("value"), o.Value, e)
		out[name] = PlannedOutput{Value: v, Description: o.Description, Sensitive: o.Sensitive || e.sensitive}
	}
	return out
}

func (pl *planner) healthChecks() []PlannedHealthCheck {
	var out []PlannedHealthCheck
	for i, hc := range pl.d.HealthChecks {
		p := path("healthChecks").index(i)
		interval, _ := time.ParseDuration(orDefault(hc.Interval, DefaultCheckInterval))
		timeout, _ := time.ParseDuration(orDefault(hc.Timeout, DefaultCheckTimeout))
		for _, idx := range instances(pl.count[hc.Resource]) {
			e := &expansion{index: idx}
			out = append(out, PlannedHealthCheck{
				Name:       hc.Name,
				Node:       instanceName(hc.Resource, idx),
				Type:       hc.Type,
				Properties: pl.expandJSON(p.key("properties"), hc.Properties, e),
				Interval:   interval,
				Timeout:    timeout,
			})
		}
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
