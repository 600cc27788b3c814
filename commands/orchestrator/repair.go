package orchestrator

import (
	"context"
	"slices"

	"cairn/domain"
	"cairn/domain/resource"
	"cairn/domain/service"
)

// repairOne makes one resource a repair asks for again: a resource whose
// node is down gives its allocation back first (the scheduler places it on
// another node), then it is created (and started, if the service runs) as
// at registration, and its drift is cleared. Resources the repair does not
// name are left as they are.
func (o *Orchestrator) repairOne(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	if !slices.Contains(d.svc.Repairing, t.node.ResourceID) {
		return nil, nil
	}
	s := t.state
	switch s.Status {
	case resource.StatusPending, resource.StatusCreating:
		// Begun already (a pass cut short): go on with the create.
	case resource.StatusStarting:
		// Made again already, its start cut short: go on with the start.
		return o.finishRepair(ctx, d, t)
	default:
		if s.Drift == resource.DriftNodeDown {
			if err := o.unplace(ctx, d, t); err != nil {
				return nil, err
			}
		}
		reason := s.DriftDetail
		if reason == "" {
			reason = "asked to repair"
		}
		if t.state.Status == resource.StatusCreated || t.state.Status == resource.StatusRunning ||
			t.state.Status == resource.StatusStopped || t.state.Status == resource.StatusFailed {
			if err := o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
				return r.BeginRepair(r.ID, truncate(reason, resource.MaxDriftDetailLength), o.cfg.Clock())
			}); err != nil {
				return nil, err
			}
		}
	}
	if f, err := o.create(ctx, d, t); f != nil || err != nil {
		return f, err
	}
	return o.finishRepair(ctx, d, t)
}

// finishRepair starts a resource made again when its service runs, and
// clears its drift.
func (o *Orchestrator) finishRepair(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	if d.svc.RepairFrom == service.StatusRunning {
		if f, err := o.startOne(ctx, d, t); f != nil || err != nil {
			return f, err
		}
	}
	return nil, o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
		return r.ClearDrift(o.cfg.Clock())
	})
}
