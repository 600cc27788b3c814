package graph

import (
	"context"
	"errors"
	"time"

	"cairn/auth"
	"cairn/commands"
	"cairn/commands/jobs"
	"cairn/domain"
	"cairn/domain/schedule"
	"cairn/eventstore"
	"cairn/graph/apierr"
	"cairn/graph/model"
	"cairn/graph/transport"
)

// Schedules are read from their own streams, like jobs.

func (r *Resolver) schedulesReady() error {
	if r.deps.Schedules == nil || r.deps.Jobs == nil {
		return errNoJobs
	}
	return nil
}

// manageSchedule authorizes pausing, resuming or deleting a schedule: as
// much as submitting its jobs.
func (r *Resolver) manageSchedule(ctx context.Context) (Principal, error) {
	if err := r.schedulesReady(); err != nil {
		return transport.Principal(ctx), err
	}
	return r.authorize(ctx, auth.JobSubmit, auth.Resource{TenantID: transport.Principal(ctx).TenantID})
}

func (r *Resolver) loadSchedule(ctx context.Context, id string) (schedule.Schedule, int64, error) {
	if id == "" {
		return schedule.Schedule{}, 0, apierr.InvalidInput("id", "is required")
	}
	return commands.Load[schedule.Schedule](ctx, r.deps.Store, domain.ScheduleStream, id)
}

// loadOwnedSchedule folds a schedule's stream and says which tenant it
// belongs to: the one its creator acted for (none when an operator made
// it), as for jobs.
func (r *Resolver) loadOwnedSchedule(ctx context.Context, id string) (schedule.Schedule, int64, string, error) {
	var sc schedule.Schedule
	if id == "" {
		return sc, 0, "", apierr.InvalidInput("id", "is required")
	}
	evs, err := r.deps.Store.ReadStream(ctx, domain.StreamID(domain.ScheduleStream, id), eventstore.ReadStreamOptions{})
	var nf *eventstore.StreamNotFoundError
	if errors.As(err, &nf) {
		return sc, 0, "", nil
	}
	if err != nil {
		return sc, 0, "", err
	}
	for _, rec := range evs {
		ev, err := r.deps.Store.Decode(rec)
		if err != nil {
			return sc, 0, "", err
		}
		sc.Apply(ev)
	}
	return sc, evs[len(evs)-1].Version, evs[0].Metadata.Tenant, nil
}

func (r *Resolver) schedulePayload(ctx context.Context, out commands.Outcome) (*model.SchedulePayload, error) {
	p := &model.SchedulePayload{Cursor: model.Cursor(out.Cursor), Duplicate: out.Duplicate}
	if !selects(ctx, "schedule") {
		return p, nil
	}
	sc, v, err := r.loadSchedule(ctx, out.ID)
	if err != nil {
		return nil, err
	}
	p.Schedule = scheduleModel(sc, v, r.deps.Now())
	return p, nil
}

func scheduleTemplate(in jobs.Submit) schedule.JobTemplate {
	return schedule.JobTemplate{Spec: in.Spec, Target: in.Target, Timeout: in.Timeout, Grace: in.Grace, Retry: in.Retry, Queue: in.Queue}
}

func scheduleModel(sc schedule.Schedule, version int64, now time.Time) *model.Schedule {
	t := sc.Job
	out := &model.Schedule{
		ID: sc.ID, Status: model.ScheduleStatus(upper(sc.Status)), Cron: optional(sc.Cron), Submitter: sc.Submitter,
		NextRunAt: timePtr(sc.Next(now)), CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt, Version: int(version),
		AllowedActions: sc.AllowedCommands(),
		Job: &model.ScheduleJob{Spec: specModel(t.Spec), Target: targetModel(t.Target), TimeoutSeconds: seconds(t.Timeout),
			GraceSeconds: seconds(t.Grace), Retry: &model.RetryPolicy{Max: t.Retry.Max, BackoffSeconds: t.Retry.Backoff.Seconds()},
			Queue: optional(t.Queue)},
	}
	if sc.Every > 0 {
		every := int(sc.Every / time.Second)
		out.EverySeconds = &every
	}
	if out.AllowedActions == nil {
		out.AllowedActions = []string{}
	}
	return out
}
