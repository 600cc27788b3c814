package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/eventstore"
	"cairn/plugins"
)

// deployment is what one pass knows about a service: its state, its
// execution graph and the state of each resource, all loaded from the log at
// the start of the pass and kept current as the pass appends.
type deployment struct {
	svc        service.Service
	svcVersion int64
	// request is the cursor of the service's last event: the request the
	// pass is carrying out. A resource failure recorded after it happened in
	// this run and is not retried; one before it is.
	request eventstore.Cursor
	meta    eventstore.Metadata

	graph   *ocl.Graph
	planErr error // why there is no graph
	nodes   map[string]*tracked
	order   []*tracked // plan order

	// While updating or reverting: the graph of the revision the service
	// leaves, and its resources that are not in the graph it moves to.
	leavingGraph *ocl.Graph
	leaving      map[string]*tracked
}

// tracked is one resource of the graph with its state.
type tracked struct {
	node    ocl.Node
	state   resource.Resource
	version int64
	last    eventstore.Cursor
}

func (t *tracked) exists() bool { return t.state.Exists() }

// failedInRun reports whether the resource's last event is a failure of the
// given phase recorded while carrying out the current request.
func (d *deployment) failedInRun(t *tracked, phase resource.Phase) bool {
	return t.state.Status == resource.StatusFailed && t.state.FailedIn == phase && d.request.Less(t.last)
}

// planError is a reason the service cannot be deployed as recorded (a
// template or variables that do not plan): the pass records it as the
// step's failure instead of retrying.
type planError struct{ err error }

func (e *planError) Error() string { return e.err.Error() }
func (e *planError) Unwrap() error { return e.err }

// load reads the service and, when it has work to do, its graph and
// resources.
func (o *Orchestrator) load(ctx context.Context, id string) (*deployment, error) {
	d := &deployment{}
	recs, err := o.store.ReadStream(ctx, domain.StreamID(domain.ServiceStream, id), eventstore.ReadStreamOptions{})
	var nf *eventstore.StreamNotFoundError
	if errors.As(err, &nf) {
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	for _, rec := range recs {
		ev, err := o.store.Decode(rec)
		if err != nil {
			return nil, fmt.Errorf("load service %q: %w", id, err)
		}
		d.svc.Apply(ev)
	}
	d.svcVersion = int64(len(recs))
	last := recs[len(recs)-1]
	d.request = last.Cursor()
	correlation := last.Metadata.CorrelationID
	if correlation == "" {
		correlation = recs[0].Metadata.CorrelationID
	}
	d.meta = eventstore.Metadata{
		CorrelationID: correlation,
		CausationID:   strconv.FormatInt(last.Position, 10),
		Actor:         Actor,
		Tenant:        d.svc.TenantID,
	}
	if !busy(d.svc.Status) {
		return d, nil
	}
	d.graph, err = o.plan(ctx, d.svc)
	var pe *planError
	switch {
	case errors.As(err, &pe):
		d.planErr = pe
	case err != nil:
		return nil, err
	}
	d.nodes = map[string]*tracked{}
	if d.graph != nil {
		for _, n := range d.graph.Nodes() {
			t := &tracked{node: n}
			d.nodes[n.Name] = t
			d.order = append(d.order, t)
		}
	}
	if err := o.loadLeaving(ctx, d); err != nil {
		return nil, err
	}
	for _, t := range d.order {
		if err := o.loadResource(ctx, t); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// loadLeaving plans the revision an update leaves, and loads its resources
// that the new revision does not have.
func (o *Orchestrator) loadLeaving(ctx context.Context, d *deployment) error {
	if d.svc.Leaving == nil || d.planErr != nil {
		return nil
	}
	left := d.svc
	left.TemplateVersion, left.Variables, left.ResourceIDs = d.svc.Leaving.TemplateVersion, d.svc.Leaving.Variables, d.svc.Leaving.ResourceIDs
	g, err := o.plan(ctx, left)
	var pe *planError
	switch {
	case errors.As(err, &pe):
		d.planErr = fmt.Errorf("the revision %d it leaves: %w", d.svc.Leaving.Number, pe)
		return nil
	case err != nil:
		return err
	}
	d.leavingGraph, d.leaving = g, map[string]*tracked{}
	for _, n := range g.Nodes() {
		if _, kept := d.nodes[n.Name]; kept {
			continue
		}
		t := &tracked{node: n}
		if err := o.loadResource(ctx, t); err != nil {
			return err
		}
		d.leaving[n.Name] = t
	}
	return nil
}

// busy reports whether the orchestrator has work to do in status s.
func busy(s service.Status) bool {
	_, ok := phases[s]
	return ok
}

func (o *Orchestrator) loadResource(ctx context.Context, t *tracked) error {
	recs, err := o.store.ReadStream(ctx, domain.StreamID(domain.ResourceStream, t.node.ResourceID), eventstore.ReadStreamOptions{})
	var nf *eventstore.StreamNotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, rec := range recs {
		ev, err := o.store.Decode(rec)
		if err != nil {
			return fmt.Errorf("load resource %q: %w", t.node.ResourceID, err)
		}
		t.state.Apply(ev)
	}
	t.version = int64(len(recs))
	t.last = recs[len(recs)-1].Cursor()
	return nil
}

// plan rebuilds the service's execution graph from its template and
// variables. The graph is a pure function of them, so every pass (and every
// server) gets the same one.
func (o *Orchestrator) plan(ctx context.Context, svc service.Service) (*ocl.Graph, error) {
	tv, _, err := commands.Load[template.TemplateVersion](ctx, o.store, domain.TemplateStream, template.ID(svc.TemplateName, svc.TemplateVersion))
	if err != nil {
		return nil, err
	}
	if !tv.Exists() {
		return nil, &planError{fmt.Errorf("template %s does not exist", template.ID(svc.TemplateName, svc.TemplateVersion))}
	}
	desc, err := ocl.Parse(tv.Descriptor)
	if err != nil {
		return nil, &planError{fmt.Errorf("template %s: %w", tv.ID(), err)}
	}
	given, err := o.cfg.Variables(ctx, svc)
	if err != nil {
		return nil, &planError{fmt.Errorf("variables: %w", err)}
	}
	vars, err := desc.ResolveVariables("", given)
	if err != nil {
		return nil, &planError{err}
	}
	g, err := desc.Plan(vars, ocl.ServiceContext{ID: svc.ID, Tenant: svc.TenantID})
	if err != nil {
		return nil, &planError{fmt.Errorf("plan: %w", err)}
	}
	var ids []string
	for _, n := range g.Nodes() {
		ids = append(ids, n.ResourceID)
	}
	if a, b := slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(svc.ResourceIDs)); !slices.Equal(a, b) {
		return nil, &planError{fmt.Errorf("the plan gives %d resources (%v) but the service was registered with %d (%v)", len(a), a, len(b), b)}
	}
	return g, nil
}

// ensurePlanned records a resource.planned event for every resource of the
// graph that has no stream yet (or was destroyed), all in one append.
func (o *Orchestrator) ensurePlanned(ctx context.Context, d *deployment) error {
	var missing []*tracked
	for _, t := range d.order {
		if !t.exists() || t.state.Status == resource.StatusDestroyed {
			missing = append(missing, t)
		}
	}
	return o.planResources(ctx, d, missing)
}

// planResources records resource.planned for each resource, at the
// service's revision, in one append. The recorded properties are the
// planned ones (references to other resources' outputs unresolved); for an
// instance that holds a sensitive value they are left out, since the log
// must not hold secrets in clear text.
func (o *Orchestrator) planResources(ctx context.Context, d *deployment, ts []*tracked) error {
	if len(ts) == 0 {
		return nil
	}
	changes := make([]eventstore.StreamAppend, 0, len(ts))
	at := o.cfg.Clock()
	for _, t := range ts {
		evs, err := t.state.Plan(resource.Plan{
			ResourceID: t.node.ResourceID, ServiceID: d.svc.ID, Name: t.node.Name, Plugin: t.node.Plugin, Type: t.node.Type,
			Properties: recordable(t.node), DependsOn: d.dependencyIDs(t.node), Revision: d.svc.Revision,
			Checks: d.checksOf(t.node), At: at,
		})
		if err != nil {
			return &planError{fmt.Errorf("resource %s: %w", t.node.Name, err)}
		}
		expected := eventstore.NoStream
		if t.exists() {
			expected = eventstore.Exactly(t.version)
		}
		changes = append(changes, eventstore.StreamAppend{
			StreamID: domain.StreamID(domain.ResourceStream, t.node.ResourceID), StreamType: domain.ResourceStream,
			Expected: expected, Events: evs,
		})
	}
	res, err := o.append(ctx, d, changes)
	if err != nil {
		return err
	}
	for i, t := range ts {
		for _, ev := range changes[i].Events {
			t.state.Apply(ev)
		}
		t.version += int64(len(changes[i].Events))
		t.last = res.Cursor
	}
	return nil
}

// recordable is what the log keeps of a node's properties: nothing when
// they hold a sensitive value.
func recordable(n ocl.Node) json.RawMessage {
	if n.Sensitive || !isObject(n.Properties) {
		return nil
	}
	return n.Properties
}

// checksOf are the health checks the plan binds to a node.
func (d *deployment) checksOf(n ocl.Node) []resource.HealthCheck {
	var out []resource.HealthCheck
	for _, c := range d.graph.HealthChecks() {
		if c.Node == n.Name {
			out = append(out, resource.HealthCheck{Name: c.Name, Type: string(c.Type), Properties: c.Properties, Interval: c.Interval, Timeout: c.Timeout})
		}
	}
	return out
}

// dependencyIDs names the resources a node depends on by id.
func (d *deployment) dependencyIDs(n ocl.Node) []string {
	deps := make([]string, 0, len(n.DependsOn))
	for _, dep := range n.DependsOn {
		deps = append(deps, d.nodes[dep].node.ResourceID)
	}
	return deps
}

func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}

// append records one step and reports it.
func (o *Orchestrator) append(ctx context.Context, d *deployment, changes []eventstore.StreamAppend) (eventstore.AppendResult, error) {
	res, err := o.store.Append(ctx, eventstore.AppendRequest{Metadata: d.meta, Streams: changes})
	if err != nil {
		return res, err
	}
	if o.cfg.OnStep != nil {
		step := Step{ServiceID: d.svc.ID, Cursor: res.Cursor}
		for _, c := range changes {
			step.Streams = append(step.Streams, c.StreamID)
			for _, ev := range c.Events {
				step.Events = append(step.Events, ev.EventType())
			}
		}
		o.cfg.OnStep(step)
	}
	return res, nil
}

// decideResource appends the events decide returns for a resource at the
// version the pass holds, and folds them into the tracked state.
func (o *Orchestrator) decideResource(ctx context.Context, d *deployment, t *tracked, decide func(resource.Resource) ([]domain.Event, error)) error {
	evs, err := decide(t.state)
	if err != nil {
		return fmt.Errorf("resource %s (%s): %w", t.node.Name, t.node.ResourceID, err)
	}
	res, err := o.append(ctx, d, []eventstore.StreamAppend{{
		StreamID: domain.StreamID(domain.ResourceStream, t.node.ResourceID), StreamType: domain.ResourceStream,
		Expected: eventstore.Exactly(t.version), Events: evs,
	}})
	if err != nil {
		return err
	}
	for _, ev := range evs {
		t.state.Apply(ev)
	}
	t.version += int64(len(evs))
	t.last = res.Cursor
	return nil
}

// decideService appends the service's next event at the version the pass
// loaded: the step that ends the pass.
func (o *Orchestrator) decideService(ctx context.Context, d *deployment, decide func(service.Service) ([]domain.Event, error)) error {
	evs, err := decide(d.svc)
	if err != nil {
		return fmt.Errorf("service %s: %w", d.svc.ID, err)
	}
	_, err = o.append(ctx, d, []eventstore.StreamAppend{{
		StreamID: domain.StreamID(domain.ServiceStream, d.svc.ID), StreamType: domain.ServiceStream,
		Expected: eventstore.Exactly(d.svcVersion), Events: evs,
	}})
	return err
}

// call resolves a resource's properties from the outputs of the resources
// it references and makes one plugin call.
func (o *Orchestrator) call(ctx context.Context, d *deployment, t *tracked, op plugins.Op) (json.RawMessage, error) {
	props, err := ocl.ResolveProperties(t.node.Properties, d.output)
	if err != nil {
		return nil, fmt.Errorf("resolve the properties of %s: %w", t.node.Name, err)
	}
	req := plugins.Request{ResourceID: t.node.ResourceID, Type: t.node.Type, Properties: props, Outputs: t.state.Outputs,
		ServiceID: d.svc.ID, TenantID: d.svc.TenantID, Sensitive: t.node.Sensitive, Node: t.state.NodeID}
	if p := t.node.Placement; p != nil {
		req.Placement = &plugins.Placement{Location: p.Location, Labels: p.Labels}
	}
	cctx, cancel := context.WithTimeout(ctx, o.cfg.CallTimeout)
	defer cancel()
	out, err := o.reg.Call(cctx, t.node.Plugin, op, req)
	if err != nil && ctx.Err() == nil && cctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("%w (gave up after %s)", err, o.cfg.CallTimeout)
	}
	return out, err
}

// output looks up an output of a resource instance for ResolveProperties.
func (d *deployment) output(resourceName string, index int, key string) (json.RawMessage, bool) {
	name := resourceName
	if index >= 0 {
		name = fmt.Sprintf("%s[%d]", resourceName, index)
	}
	t, ok := d.nodes[name]
	if !ok || len(t.state.Outputs) == 0 {
		return nil, false
	}
	var outs map[string]json.RawMessage
	if err := json.Unmarshal(t.state.Outputs, &outs); err != nil {
		return nil, false
	}
	v, ok := outs[key]
	return v, ok
}

// serviceOutputs resolves the descriptor's outputs from the resources'
// current outputs. Sensitive outputs are recorded as "(sensitive)": the log
// must not hold them in clear text.
func (d *deployment) serviceOutputs() (json.RawMessage, error) {
	planned := d.graph.Outputs()
	if len(planned) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(planned))
	for name, po := range planned {
		if po.Sensitive {
			out[name] = json.RawMessage(`"(sensitive)"`)
			continue
		}
		v, err := ocl.ResolveProperties(po.Value, d.output)
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", name, err)
		}
		out[name] = v
	}
	raw, err := json.Marshal(out)
	if err == nil && len(raw) > service.MaxJSONBytes {
		err = fmt.Errorf("the outputs take %d bytes, more than the %d a service may record", len(raw), service.MaxJSONBytes)
	}
	return raw, err
}
