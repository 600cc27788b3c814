// Package schedules handles the commands of recurring schedules: create,
// pause, resume and delete. Firing a due schedule is the dispatcher's work
// (dispatch/firing.go): it follows the schedules' streams like the jobs'.
package schedules

import (
	"context"
	"errors"
	"time"

	"cairn/commands"
	"cairn/commands/jobs"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/schedule"
	"cairn/sal/catalog"
)

// Handlers handle the commands of recurring schedules.
type Handlers struct {
	store   commands.Store
	now     commands.Clock
	catalog *catalog.Validator
}

// NewHandlers returns schedule handlers; clock stamps the commands and
// validator checks an action job's arguments against the catalogue.
func NewHandlers(store commands.Store, clock commands.Clock, validator *catalog.Validator) *Handlers {
	return &Handlers{store: store, now: clock, catalog: validator}
}

// Create asks for a job to be submitted every Every, or at the
// instants of the cron expression Cron (UTC): exactly one of the two.
type Create struct {
	ScheduleID string               `json:"scheduleId"`
	Job        schedule.JobTemplate `json:"job"`
	Every      time.Duration        `json:"every,omitempty"`
	Cron       string               `json:"cron,omitempty"`
}

// Create records a schedule, submitted by meta.Actor. Zero timeout and
// grace take the defaults of a job submission.
func (s *Handlers) Create(ctx context.Context, meta commands.Meta, in Create) (commands.Outcome, error) {
	if in.Job.Timeout == 0 {
		in.Job.Timeout = jobs.DefaultTimeout
	}
	if in.Job.Grace == 0 {
		in.Job.Grace = jobs.DefaultGrace
	}
	if sp := in.Job.Spec; sp.Kind == job.KindAction {
		if err := s.catalog.Validate(sp.Action, sp.Args); err != nil {
			field := "job.spec.args"
			var unknown *catalog.UnknownActionError
			if errors.As(err, &unknown) {
				field = "job.spec.action"
			}
			return commands.Outcome{}, &domain.ValidationError{Field: field, Reason: err.Error()}
		}
	}
	if in.Job.Target.NodeID != "" {
		if _, err := commands.RequireNode(ctx, s.store, in.Job.Target.NodeID); err != nil {
			return commands.Outcome{}, err
		}
	}
	if err := commands.IDFree(ctx, s.store, domain.ScheduleStream, in.ScheduleID); err != nil {
		return commands.Outcome{}, err
	}
	return s.run(ctx, meta, in.ScheduleID, in, func(sc schedule.Schedule, at time.Time) ([]domain.Event, error) {
		return sc.Create(schedule.Create{ScheduleID: in.ScheduleID, Job: in.Job, Every: in.Every, Cron: in.Cron, Submitter: meta.Actor, At: at})
	})
}

// Pause stops a schedule from firing until it is resumed.
func (s *Handlers) Pause(ctx context.Context, meta commands.Meta, id string) (commands.Outcome, error) {
	return s.run(ctx, meta, id, struct{ Pause string }{id}, func(sc schedule.Schedule, at time.Time) ([]domain.Event, error) {
		return sc.Pause(schedule.Pause{ScheduleID: id, At: at})
	})
}

// Resume lets a paused schedule fire again.
func (s *Handlers) Resume(ctx context.Context, meta commands.Meta, id string) (commands.Outcome, error) {
	return s.run(ctx, meta, id, struct{ Resume string }{id}, func(sc schedule.Schedule, at time.Time) ([]domain.Event, error) {
		return sc.Resume(schedule.Resume{ScheduleID: id, At: at})
	})
}

// Delete ends a schedule for good.
func (s *Handlers) Delete(ctx context.Context, meta commands.Meta, id, reason string) (commands.Outcome, error) {
	in := struct{ Delete, Reason string }{id, reason}
	return s.run(ctx, meta, id, in, func(sc schedule.Schedule, at time.Time) ([]domain.Event, error) {
		return sc.Delete(schedule.Delete{ScheduleID: id, Reason: reason, At: at})
	})
}

// Get returns a schedule as its stream shows it now.
func (s *Handlers) Get(ctx context.Context, id string) (schedule.Schedule, error) {
	sc, _, err := commands.Load[schedule.Schedule](ctx, s.store, domain.ScheduleStream, id)
	if err == nil && !sc.Exists() {
		err = &domain.NotFoundError{Entity: "schedule", ID: id}
	}
	return sc, err
}

func (s *Handlers) run(ctx context.Context, meta commands.Meta, id string, input any,
	decide func(schedule.Schedule, time.Time) ([]domain.Event, error)) (commands.Outcome, error) {
	if err := commands.RequireID("scheduleId", id); err != nil {
		return commands.Outcome{}, err
	}
	at := s.now()
	res, err := commands.Execute[schedule.Schedule](ctx, s.store, domain.ScheduleStream, id, meta, input,
		func(sc schedule.Schedule) ([]domain.Event, error) { return decide(sc, at) })
	if err != nil {
		return commands.Outcome{}, err
	}
	return commands.Outcome{Result: res, ID: id}, nil
}
