package dispatch

import (
	"context"
	"time"

	"cairn/commands"
	"cairn/commands/jobs"
)

// fire submits a schedule's job when its instant has come. The job's id is
// derived from the schedule and the instant, so a firing repeated (after a
// restart, say) is refused as a duplicate instead of running twice.
func (d *Dispatcher) fire(s *scheduleEntry, now time.Time) {
	if s.next.IsZero() || now.Before(s.next) {
		return
	}
	slot, sc := s.next, s.s
	s.next = sc.Next(slot)
	t := sc.Job
	d.launch("fire schedule "+sc.ID, func(ctx context.Context) (commands.Outcome, error) {
		return d.jobsH.Submit(ctx, commands.Meta{Actor: sc.Submitter, CorrelationID: "schedule:" + sc.ID}, jobs.Submit{
			JobID: sc.JobIDAt(slot), Spec: t.Spec, Target: t.Target, Timeout: t.Timeout, Grace: t.Grace,
			Retry: t.Retry, Queue: t.Queue,
		})
	}, func(commands.Outcome, error) {})
}
