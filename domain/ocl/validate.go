package ocl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"cairn/domain"
	"cairn/domain/node"
)

// PluginCatalog tells Validate which plugins exist, which resource types each
// serves, and the JSON Schema of each type's properties (nil or empty when
// the plugin publishes none).
type PluginCatalog interface {
	ResourceTypes(plugin string) (types map[string]json.RawMessage, ok bool)
}

// Validate reports every problem with the descriptor as a *ValidationError:
// schema violations, duplicate names, references to undeclared variables or
// resources, misuse of count, dependency cycles, health checks and outputs
// that name nothing, defaults and flavor values that break their variable's
// rules and, when catalog is not nil, unknown plugins and resource types and
// literal properties that break the plugin's property schema (expressions are
// skipped: their values exist only at deployment).
func (d *Descriptor) Validate(catalog PluginCatalog) error {
	ps := d.schemaCheck()
	c := &checker{d: d, ps: &ps}
	c.indexResources()
	c.variables()
	c.flavors()
	c.resources()
	c.cycles()
	c.outputs()
	c.healthChecks()
	if catalog != nil {
		c.plugins(catalog)
	}
	return ps.err()
}

func (d *Descriptor) schemaCheck() problems {
	cur, err := json.Marshal(d)
	if err != nil {
		return problems{{Message: fmt.Sprintf("cannot encode the descriptor: %v", err)}}
	}
	if d.source != nil && bytes.Equal(cur, d.parsedAs) {
		return schemaProblems(d.source)
	}
	tree, err := decodeValue(cur)
	if err != nil {
		return problems{{Message: fmt.Sprintf("cannot encode the descriptor: %v", err)}}
	}
	return schemaProblems(tree)
}

// checker holds what the individual checks share.
type checker struct {
	d      *Descriptor
	ps     *problems
	byName map[string]int // resource name -> first index
	counts []int          // literal count, or -1 when absent or an expression
	deps   [][]int        // resource index -> indexes it depends on
}

func (c *checker) add(p path, format string, args ...any) { c.ps.add(p, format, args...) }

func (c *checker) indexResources() {
	n := len(c.d.Resources)
	c.byName = make(map[string]int, n)
	c.counts = make([]int, n)
	c.deps = make([][]int, n)
	for i, r := range c.d.Resources {
		c.counts[i] = literalCount(r)
		if r.Name == "" {
			continue
		}
		if first, dup := c.byName[r.Name]; dup {
			c.add(path("resources").index(i).key("name"), "duplicate resource name %q; resources[%d] already uses it", r.Name, first)
			continue
		}
		c.byName[r.Name] = i
	}
}

// literalCount is the count written as a number, or -1.
func literalCount(r Resource) int {
	if !r.Counted() {
		return -1
	}
	v, err := decodeValue(r.Count)
	if err != nil {
		return -1
	}
	n, ok := v.(json.Number)
	if !ok {
		return -1
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > MaxCount {
		return -1
	}
	return int(i)
}

func (c *checker) variables() {
	for _, name := range sortedKeys(c.d.Variables) {
		def := c.d.Variables[name]
		p := path("variables").key(name)
		if def.Required && !isAbsent(def.Default) {
			c.add(p, "is required and has a default; drop \"required\" or the default")
		}
		c.validationRules(p.key("validation"), def)
		if len(def.Default) > 0 {
			c.checkJSONValue(p.key("default"), def, def.Default)
		}
	}
}

func (c *checker) validationRules(p path, def Variable) {
	val := def.Validation
	if val == nil || !knownType(def.Type) {
		return // an unknown type is the schema's to report
	}
	isString := def.Type == TypeString
	isNumber := def.Type == TypeNumber || def.Type == TypeInteger
	onlyFor := func(field, kind string) {
		c.add(p.key(field), "applies to %s only; this variable is %s", kind, withArticle(string(def.Type)))
	}
	if val.Pattern != "" {
		if !isString {
			onlyFor("pattern", "strings")
		} else if _, err := regexp.Compile(val.Pattern); err != nil {
			c.add(p.key("pattern"), "is not a valid regular expression: %v", err)
		}
	}
	if val.MinLength != nil && !isString {
		onlyFor("minLength", "strings")
	}
	if val.MaxLength != nil && !isString {
		onlyFor("maxLength", "strings")
	}
	if val.Minimum != nil && !isNumber {
		onlyFor("minimum", "numbers")
	}
	if val.Maximum != nil && !isNumber {
		onlyFor("maximum", "numbers")
	}
	if val.MinLength != nil && val.MaxLength != nil && *val.MinLength > *val.MaxLength {
		c.add(p, "minLength %d is greater than maxLength %d", *val.MinLength, *val.MaxLength)
	}
	if val.Minimum != nil && val.Maximum != nil && *val.Minimum > *val.Maximum {
		c.add(p, "minimum %s is greater than maximum %s", formatFloat(*val.Minimum), formatFloat(*val.Maximum))
	}
	for i, e := range val.Enum {
		v, err := decodeValue(e)
		if err != nil {
			c.add(p.key("enum").index(i), "is not valid JSON: %v", err)
			continue
		}
		if msg := checkType(def.Type, v); msg != "" {
			c.add(p.key("enum").index(i), "%s", msg)
		}
	}
}

// checkJSONValue checks a default or a flavor value against its variable.
func (c *checker) checkJSONValue(p path, def Variable, raw json.RawMessage) {
	v, err := decodeValue(raw)
	if err != nil {
		c.add(p, "is not valid JSON: %v", err)
		return
	}
	for _, msg := range checkValue(def, v) {
		c.add(p, "%s", msg)
	}
}

func (c *checker) flavors() {
	for _, fname := range sortedKeys(c.d.Flavors) {
		f := c.d.Flavors[fname]
		for _, vname := range sortedKeys(f.Variables) {
			p := path("flavors").key(fname).key("variables").key(vname)
			def, ok := c.d.Variables[vname]
			if !ok {
				c.add(p, "is not a variable of this descriptor; %s", declared("variables", sortedKeys(c.d.Variables)))
				continue
			}
			c.checkJSONValue(p, def, f.Variables[vname])
		}
	}
}

// refContext says which references a string may hold where it sits.
type refContext struct {
	self       int  // index of the resource the string belongs to, or -1
	counted    bool // whether ${count.index} has a value here
	count      int  // literal count of the surrounding resource, or -1
	noResource string
	edges      *[]int // where resource references become dependencies
	sensitive  string // set to the first sensitive variable referenced
}

func (c *checker) resources() {
	for i, r := range c.d.Resources {
		p := path("resources").index(i)
		for j, dep := range r.DependsOn {
			dp := p.key("dependsOn").index(j)
			k, ok := c.byName[dep]
			switch {
			case dep == r.Name:
				c.add(dp, "a resource cannot depend on itself")
			case !ok:
				c.add(dp, "unknown resource %q; %s", dep, declared("resources", c.resourceNames()))
			default:
				c.deps[i] = append(c.deps[i], k)
			}
		}
		c.countExpression(p.key("count"), r)
		ctx := &refContext{self: i, counted: r.Counted(), count: c.counts[i], edges: &c.deps[i]}
		c.refsIn(p.key("properties"), r.Properties, ctx)
		if r.Placement != nil {
			pctx := &refContext{self: i, counted: r.Counted(), count: c.counts[i], noResource: "placement is decided before any resource exists"}
			c.refsInString(p.key("placement").key("location"), r.Placement.Location, pctx)
			for _, k := range sortedKeys(r.Placement.Labels) {
				c.refsInString(p.key("placement").key("labels").key(k), r.Placement.Labels[k], pctx)
			}
			c.refsInString(p.key("placement").key("selector"), r.Placement.Selector, pctx)
			if !strings.Contains(r.Placement.Selector, "$") {
				if _, err := node.ParseSelector(r.Placement.Selector); err != nil {
					c.add(p.key("placement").key("selector"), "%s", domain.Reason(err))
				}
			}
		}
		if r.Requests != nil {
			rctx := &refContext{self: i, counted: r.Counted(), count: c.counts[i], noResource: "requests are decided before any resource exists"}
			for _, q := range r.Requests.fields() {
				if len(q.raw) == 0 {
					continue
				}
				qp := p.key("requests").key(q.name)
				if s, ok := jsonString(q.raw); ok && strings.Contains(s, "$") {
					c.refsInString(qp, s, rctx)
					continue
				}
				if _, err := q.parse(q.raw); err != nil {
					c.add(qp, "%v", err)
				}
			}
		}
		c.deps[i] = uniqueInts(c.deps[i])
	}
}

// countExpression checks a "${var.NAME}" count: the schema guarantees the
// form, this checks that the variable exists and holds an integer.
func (c *checker) countExpression(p path, r Resource) {
	if !r.Counted() {
		return
	}
	var s string
	if err := json.Unmarshal(r.Count, &s); err != nil {
		return
	}
	t, err := parseTemplate(s)
	ref, single := t.single()
	if err != nil || !single || ref.kind != refVar {
		return // the schema's count pattern admits exactly the strings that parse here
	}
	def, ok := c.d.Variables[ref.name]
	switch {
	case !ok:
		c.add(p, "unknown variable %q; %s", ref.name, declared("variables", sortedKeys(c.d.Variables)))
	case def.Type != TypeInteger:
		c.add(p, "variable %q is %s; a count needs an integer variable", ref.name, withArticle(string(def.Type)))
	}
}

func (c *checker) refsIn(p path, raw json.RawMessage, ctx *refContext) {
	if len(raw) == 0 {
		return
	}
	v, err := decodeValue(raw)
	if err != nil {
		c.add(p, "is not valid JSON: %v", err)
		return
	}
	_, _ = walkStrings(v, p, func(at path, s string) (any, error) {
		c.refsInString(at, s, ctx)
		return s, nil
	})
}

func (c *checker) refsInString(p path, s string, ctx *refContext) {
	t, err := parseTemplate(s)
	if err != nil {
		c.add(p, "%v", err)
		return
	}
	for _, r := range t.refs() {
		c.checkRef(p, r, ctx)
	}
}

func (c *checker) checkRef(p path, r ref, ctx *refContext) {
	countOnly := "${count.index} has a value only in a resource with count, its placement and its health checks"
	switch r.kind {
	case refVar:
		def, ok := c.d.Variables[r.name]
		if !ok {
			c.add(p, "unknown variable %q; %s", r.name, declared("variables", sortedKeys(c.d.Variables)))
			return
		}
		if def.Sensitive && ctx.sensitive == "" {
			ctx.sensitive = r.name
		}
	case refCountIndex:
		if !ctx.counted {
			c.add(p, "%s", countOnly)
		}
	case refResource:
		c.checkResourceRef(p, r, ctx, countOnly)
	}
}

func (c *checker) checkResourceRef(p path, r ref, ctx *refContext, countOnly string) {
	if ctx.noResource != "" {
		c.add(p, "cannot refer to ${%s}: %s", r, ctx.noResource)
		return
	}
	j, ok := c.byName[r.name]
	if !ok {
		c.add(p, "unknown resource %q; %s", r.name, declared("resources", c.resourceNames()))
		return
	}
	if j == ctx.self {
		c.add(p, "a resource cannot use its own outputs (${%s})", r)
		return
	}
	target := c.d.Resources[j]
	switch {
	case target.Counted() && r.mode == indexNone:
		c.add(p, "resource %q has a count; pick an instance, e.g. ${resource.%s[0].outputs.%s} or [count.index]", r.name, r.name, r.key)
		return
	case !target.Counted() && r.mode != indexNone:
		c.add(p, "resource %q has no count; refer to it as ${resource.%s.outputs.%s}", r.name, r.name, r.key)
		return
	case r.mode == indexCount && !ctx.counted:
		c.add(p, "%s", countOnly)
		return
	case r.mode == indexLiteral && c.counts[j] >= 0 && r.index >= c.counts[j]:
		c.add(p, "index %d is out of range: resource %q has %s", r.index, r.name, plural(c.counts[j], "instance"))
		return
	case r.mode == indexCount && c.counts[j] >= 0 && ctx.count > c.counts[j]:
		c.add(p, "resource %q has %s but this one has %d, so [count.index] runs past them", r.name, plural(c.counts[j], "instance"), ctx.count)
		return
	}
	if ctx.edges != nil {
		*ctx.edges = append(*ctx.edges, j)
	}
}

// resourceNames lists declared resource names in document order, for
// messages that offer the alternatives.
func (c *checker) resourceNames() []string {
	names := make([]string, 0, len(c.byName))
	for i, r := range c.d.Resources {
		if first, ok := c.byName[r.Name]; ok && first == i {
			names = append(names, r.Name)
		}
	}
	return names
}

// cycles reports each dependency cycle once per strongly connected group of
// resources, starting from the group's first resource in the document.
// "a -> b" reads "a depends on b".
func (c *checker) cycles() {
	for _, scc := range stronglyConnected(c.deps) {
		if len(scc) < 2 {
			continue // self-dependencies are reported where they are written
		}
		cycle := cycleThrough(scc[0], scc, c.deps)
		names := make([]string, len(cycle))
		for i, k := range cycle {
			names[i] = c.d.Resources[k].Name
		}
		c.add("resources", "dependency cycle: %s", strings.Join(names, " -> "))
	}
}

// stronglyConnected is Tarjan's algorithm; each group comes back sorted and
// groups are ordered by their first member, for stable messages.
func stronglyConnected(edges [][]int) [][]int {
	n := len(edges)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var (
		stack  []int
		groups [][]int
		next   int
	)
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges[v] {
			if index[w] < 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var g []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				g = append(g, w)
				if w == v {
					break
				}
			}
			sort.Ints(g)
			groups = append(groups, g)
		}
	}
	for v := 0; v < n; v++ {
		if index[v] < 0 {
			visit(v)
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i][0] < groups[j][0] })
	return groups
}

// cycleThrough finds the shortest cycle from start back to start inside one
// strongly connected group, by breadth-first search.
func cycleThrough(start int, group []int, edges [][]int) []int {
	in := make(map[int]bool, len(group))
	for _, v := range group {
		in[v] = true
	}
	prev := map[int]int{start: -1}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range edges[v] {
			if !in[w] {
				continue
			}
			if w == start {
				var path []int
				for u := v; u != -1; u = prev[u] {
					path = append(path, u)
				}
				for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return append(path, start)
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return append(group, group[0]) // unreachable for a real cycle
}

func (c *checker) outputs() {
	for _, name := range sortedKeys(c.d.Outputs) {
		o := c.d.Outputs[name]
		p := path("outputs").key(name).key("value")
		ctx := &refContext{self: -1, count: -1}
		c.refsIn(p, o.Value, ctx)
		if ctx.sensitive != "" && !o.Sensitive {
			c.add(path("outputs").key(name), "uses sensitive variable %q; set sensitive: true on the output", ctx.sensitive)
		}
	}
}

func (c *checker) healthChecks() {
	seen := map[string]int{}
	for i, hc := range c.d.HealthChecks {
		p := path("healthChecks").index(i)
		if hc.Name != "" {
			if first, dup := seen[hc.Name]; dup {
				c.add(p.key("name"), "duplicate health check name %q; healthChecks[%d] already uses it", hc.Name, first)
			} else {
				seen[hc.Name] = i
			}
		}
		ctx := &refContext{self: -1, count: -1}
		if hc.Resource != "" {
			if j, ok := c.byName[hc.Resource]; ok {
				ctx.counted, ctx.count = c.d.Resources[j].Counted(), c.counts[j]
			} else {
				c.add(p.key("resource"), "unknown resource %q; %s", hc.Resource, declared("resources", c.resourceNames()))
			}
		}
		c.refsIn(p.key("properties"), hc.Properties, ctx)
		interval, iok := positiveDuration(hc.Interval, DefaultCheckInterval)
		timeout, tok := positiveDuration(hc.Timeout, DefaultCheckTimeout)
		if !iok {
			c.add(p.key("interval"), "must be longer than zero")
		}
		if !tok {
			c.add(p.key("timeout"), "must be longer than zero")
		}
		if iok && tok && interval > 0 && timeout > interval {
			c.add(p.key("timeout"), "%s is longer than the interval %s", timeout, interval)
		}
	}
}

// positiveDuration parses s (or def when s is empty). A malformed duration is
// the schema's to report, so it counts as acceptable here with value 0.
func positiveDuration(s, def string) (time.Duration, bool) {
	if s == "" {
		s = def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, true
	}
	return d, d > 0
}

func (c *checker) plugins(catalog PluginCatalog) {
	compiled := map[string]*jsonschema.Schema{}
	failed := map[string]error{}
	for i, r := range c.d.Resources {
		if r.Plugin == "" || r.Type == "" {
			continue
		}
		p := path("resources").index(i)
		types, ok := catalog.ResourceTypes(r.Plugin)
		if !ok {
			c.add(p.key("plugin"), "unknown plugin %q", r.Plugin)
			continue
		}
		raw, ok := types[r.Type]
		if !ok {
			c.add(p.key("type"), "plugin %q has no resource type %q; it offers: %s", r.Plugin, r.Type, strings.Join(sortedKeys(types), ", "))
			continue
		}
		if isAbsent(raw) {
			continue
		}
		id := "urn:cairn:plugin:" + r.Plugin + ":" + r.Type
		sch, err := compiled[id], failed[id]
		if sch == nil && err == nil {
			sch, err = compileSchema(id, raw)
			compiled[id], failed[id] = sch, err
		}
		if err != nil {
			c.add(p.key("type"), "plugin %q publishes a property schema for %q that does not compile: %v", r.Plugin, r.Type, err)
			continue
		}
		var props any = map[string]any{}
		if len(r.Properties) > 0 {
			v, err := decodeValue(r.Properties)
			if err != nil {
				continue // reported by resources()
			}
			props = v
		}
		*c.ps = append(*c.ps, validateAgainst(sch, props, p.key("properties"), containsExpression)...)
	}
}

func uniqueInts(s []int) []int {
	if len(s) < 2 {
		return s
	}
	sort.Ints(s)
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}
