package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/placement"
	"cairn/domain/resource"
	"cairn/eventstore"
	"cairn/plugins"
	"cairn/scheduler"
)

// placeAttempts bounds the retries of an allocation whose node moved
// between the decision and its append.
const placeAttempts = 8

// placedType returns the resource's type when the scheduler places it.
func (o *Orchestrator) placedType(t *tracked) (plugins.ResourceType, bool) {
	if o.cfg.Scheduler == nil {
		return plugins.ResourceType{}, false
	}
	return scheduler.PlacedType(o.reg, t.node.Plugin, t.node.Type)
}

// ask is what the resource asks of the scheduler. A resource whose
// properties name its node (another resource's node output, say) is
// allocated there or nowhere.
func (o *Orchestrator) ask(d *deployment, t *tracked, rt plugins.ResourceType) (scheduler.Request, error) {
	var pin string
	if props, err := ocl.ResolveProperties(t.node.Properties, d.output); err == nil {
		var named struct {
			Node string `json:"node"`
		}
		if json.Unmarshal(props, &named) == nil {
			pin = named.Node
		}
	}
	return scheduler.RequestFor(t.node, rt, d.svc.ID, d.svc.TemplateName, pin)
}

// place allocates a node for a resource being created, when its type is
// placed and it has none yet. A request no node can take is the step's
// failure, naming why each node was left out.
func (o *Orchestrator) place(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	rt, placed := o.placedType(t)
	if !placed || t.state.NodeID != "" {
		return nil, nil
	}
	req, err := o.ask(d, t, rt)
	if err != nil {
		return &failure{t.node.Name, err}, nil
	}
	err = o.decideOnNode(ctx, d, t, func() (*scheduler.Decision, error) { return o.cfg.Scheduler.Reserve(ctx, req) })
	if errors.Is(err, placement.ErrNoFit) || errors.Is(err, domain.ErrInvalid) {
		return &failure{t.node.Name, fmt.Errorf("cannot be placed: %w", err)}, nil
	}
	return nil, err
}

// neverPlaced reports whether a resource the scheduler places is being
// created, or failed to be, without ever having been given a node: no
// plugin call was made for it (placement comes first), so there is nothing
// to destroy, and destroying it on some node would act where it never was.
// Resources created before there was a scheduler have their node in their
// outputs.
func (o *Orchestrator) neverPlaced(t *tracked) bool {
	s := t.state
	if _, placed := o.placedType(t); !placed || s.NodeID != "" || len(s.Outputs) > 0 {
		return false
	}
	return s.Status == resource.StatusCreating || s.Status == resource.StatusFailed && s.FailedIn == resource.PhaseCreate
}

// unplace ends a destroyed resource's allocation.
func (o *Orchestrator) unplace(ctx context.Context, d *deployment, t *tracked) error {
	if o.cfg.Scheduler == nil || t.state.NodeID == "" {
		return nil
	}
	return o.decideOnNode(ctx, d, t, func() (*scheduler.Decision, error) {
		return o.cfg.Scheduler.Release(ctx, t.state.NodeID, t.node.ResourceID)
	})
}

// decideOnNode appends a scheduler's decision, deciding again (up to
// placeAttempts times) when the node's stream moved between the decision
// and its append.
func (o *Orchestrator) decideOnNode(ctx context.Context, d *deployment, t *tracked, decide func() (*scheduler.Decision, error)) error {
	for attempt := 1; ; attempt++ {
		dec, err := decide()
		if err != nil {
			return err
		}
		err = o.appendDecision(ctx, d, t, dec)
		var conflict *eventstore.VersionConflictError
		if errors.As(err, &conflict) && conflict.StreamID == dec.Node.StreamID && attempt < placeAttempts {
			continue
		}
		return err
	}
}

// appendDecision appends a scheduler's decision with the resource's half
// of it, in one append, and tells the scheduler how it went.
func (o *Orchestrator) appendDecision(ctx context.Context, d *deployment, t *tracked, dec *scheduler.Decision) error {
	changes := []eventstore.StreamAppend{{
		StreamID: domain.StreamID(domain.ResourceStream, t.node.ResourceID), StreamType: domain.ResourceStream,
		Expected: eventstore.Exactly(t.version), Events: dec.Resource,
	}}
	if len(dec.Node.Events) > 0 {
		changes = append(changes, dec.Node)
	}
	res, err := o.append(ctx, d, changes)
	dec.Done(ctx, err)
	if err != nil {
		return err
	}
	for _, ev := range dec.Resource {
		t.state.Apply(ev)
	}
	t.version += int64(len(dec.Resource))
	t.last = res.Cursor
	return nil
}
