package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/plugins"
)

// An update (and the revert of a failed one) converges the resources from
// the revision the service leaves to the one it declares: ocl.Diff says
// what each instance needs, walked in dependency order, and the instances
// the new revision drops are destroyed last, dependents first. A resource
// records the revision it was made or updated for, so a pass repeated
// after a crash skips what is done, and a revert touches only what the
// failed update changed.

// walkConverge runs one pass of updating or reverting.
func (o *Orchestrator) walkConverge(ctx context.Context, d *deployment, p phase) error {
	fail := func(why string) error {
		return o.decideService(ctx, d, func(s service.Service) ([]domain.Event, error) {
			return p.fail(o, s, nil, truncate(why, service.MaxCauseLength), o.cfg.Clock())
		})
	}
	if d.planErr != nil {
		return fail(d.planErr.Error())
	}
	if d.leavingGraph == nil {
		return fail("the revision the service leaves is not recorded")
	}
	changes := map[string]ocl.Change{}
	for _, c := range ocl.Diff(d.leavingGraph, d.graph, o.reg.UpdatesInPlace) {
		changes[c.Name] = c
	}
	for _, level := range d.graph.Levels() {
		fails, err := o.eachInLevel(ctx, d, level, func(ctx context.Context, t *tracked) (*failure, error) {
			return o.convergeOne(ctx, d, t, changes[t.node.Name].Action)
		})
		if err != nil {
			return err
		}
		if len(fails) > 0 {
			return fail(cause(fails))
		}
	}
	for _, level := range d.leavingGraph.ReverseLevels() {
		var gone []string
		for _, name := range level {
			if _, ok := d.leaving[name]; ok {
				gone = append(gone, name)
			}
		}
		fails, err := o.eachLeaving(ctx, d, gone)
		if err != nil {
			return err
		}
		if len(fails) > 0 {
			return fail(cause(fails))
		}
	}
	var outputs []byte
	if p.outputs {
		var err error
		if outputs, err = d.serviceOutputs(); err != nil {
			return fail(err.Error())
		}
	}
	return o.decideService(ctx, d, func(s service.Service) ([]domain.Event, error) {
		return p.complete(s, outputs, o.cfg.Clock())
	})
}

// eachLeaving destroys, in parallel, resources the new revision drops.
func (o *Orchestrator) eachLeaving(ctx context.Context, d *deployment, names []string) ([]failure, error) {
	sub := d.withLeaving(nil)
	// Dependents first, level by level: what depended on these and stays
	// no longer does.
	return o.eachInLevel(ctx, sub, names, func(ctx context.Context, t *tracked) (*failure, error) {
		return o.destroyOne(ctx, sub, t)
	})
}

// withLeaving is the deployment as the revision left sees it: its graph,
// and every resource by name (those it shares with the new revision, its
// own, and old standing in for a shared one being replaced), so that
// properties resolve as they did.
func (d *deployment) withLeaving(old *tracked) *deployment {
	sub := &deployment{svc: d.svc, svcVersion: d.svcVersion, request: d.request, meta: d.meta,
		graph: d.leavingGraph, nodes: make(map[string]*tracked, len(d.nodes)+len(d.leaving))}
	maps.Copy(sub.nodes, d.nodes)
	maps.Copy(sub.nodes, d.leaving)
	if old != nil {
		sub.nodes[old.node.Name] = old
	}
	return sub
}

// atRevision reports whether a resource already is as the declared
// revision wants: made or updated for it, or (while reverting) never
// touched by the update being undone.
func (d *deployment) atRevision(t *tracked) bool {
	s := t.state
	if !t.exists() || s.Status == resource.StatusDestroyed {
		return false
	}
	if s.Revision == d.svc.Revision {
		return true
	}
	return d.svc.Status == service.StatusReverting && d.svc.Leaving != nil && s.Revision != d.svc.Leaving.Number
}

// convergeOne brings one instance of the declared revision where it
// should be: created, updated or replaced as the diff says, then created
// and started as its service wants.
func (o *Orchestrator) convergeOne(ctx context.Context, d *deployment, t *tracked, action ocl.Action) (*failure, error) {
	if !d.atRevision(t) {
		switch {
		case action == ocl.ActionUpdate && t.exists() && t.state.Status != resource.StatusDestroyed:
			if err := o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
				return r.BeginUpdate(resource.BeginUpdate{ResourceID: r.ID, Revision: d.svc.Revision,
					Properties: recordable(t.node), DependsOn: d.dependencyIDs(t.node), Checks: d.checksOf(t.node), At: o.cfg.Clock()})
			}); err != nil {
				return nil, err
			}
		case action == ocl.ActionKeep && t.exists() && t.state.Status != resource.StatusDestroyed:
			// Unchanged: settled below as it is.
		default: // create, replace, or a kept one that is gone
			if f, err := o.replace(ctx, d, t); f != nil || err != nil {
				return f, err
			}
		}
	}
	return o.settle(ctx, d, t)
}

// replace destroys what stands of a resource, with the properties of the
// revision left, and plans it again at the declared revision.
func (o *Orchestrator) replace(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	if t.exists() && t.state.Status != resource.StatusDestroyed {
		old := &tracked{node: t.node, state: t.state, version: t.version, last: t.last}
		if n, ok := d.leavingGraph.Node(t.node.Name); ok {
			old.node = n
		}
		// Its dependents stay (they are updated next, as the diff says): only
		// the resource itself goes.
		f, err := o.destroyOne(ctx, d.withLeaving(old), old)
		t.state, t.version, t.last = old.state, old.version, old.last
		if f != nil || err != nil {
			return f, err
		}
	}
	if err := o.planResources(ctx, d, []*tracked{t}); err != nil {
		var pe *planError
		if errors.As(err, &pe) {
			return &failure{t.node.Name, pe}, nil
		}
		return nil, err
	}
	return nil, nil
}

// settle finishes what a resource at the declared revision has under way
// and brings it to the status its service wants.
func (o *Orchestrator) settle(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	s := t.state
	switch {
	case s.Status == resource.StatusPending || s.Status == resource.StatusCreating ||
		s.Status == resource.StatusFailed && s.FailedIn == resource.PhaseCreate:
		if f, err := o.create(ctx, d, t); f != nil || err != nil {
			return f, err
		}
	case s.Status == resource.StatusUpdating || s.Status == resource.StatusFailed && s.FailedIn == resource.PhaseUpdate:
		if f, err := o.updateOne(ctx, d, t); f != nil || err != nil {
			return f, err
		}
	}
	if d.svc.UpdateFrom == service.StatusRunning {
		return o.startOne(ctx, d, t)
	}
	return nil, nil
}

// updateOne makes (or repeats) the plugin's update call of a resource
// whose update was begun.
func (o *Orchestrator) updateOne(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	s := t.state
	switch {
	case d.failedInRun(t, resource.PhaseUpdate):
		return &failure{t.node.Name, errors.New(s.Error)}, nil
	case s.Status == resource.StatusFailed:
		if err := o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
			return r.BeginUpdate(resource.BeginUpdate{ResourceID: r.ID, Revision: d.svc.Revision,
				Properties: recordable(t.node), DependsOn: d.dependencyIDs(t.node), Checks: d.checksOf(t.node), At: o.cfg.Clock()})
		}); err != nil {
			return nil, err
		}
	case s.Status != resource.StatusUpdating:
		return &failure{t.node.Name, fmt.Errorf("it is %s and cannot be updated", describe(s))}, nil
	}
	out, err := o.call(ctx, d, t, plugins.OpUpdate)
	return o.record(ctx, d, t, err, func(r resource.Resource) ([]domain.Event, error) {
		return r.CompleteUpdate(r.ID, out, o.cfg.Clock())
	})
}
