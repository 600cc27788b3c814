// Package schedule holds recurring schedules: a job template the control
// plane submits again and again, at a fixed interval or at the instants of a
// cron expression. A schedule only records what to run and when; the
// dispatcher fires it by submitting a job whose id is derived from the
// schedule and the instant (JobIDAt), so a firing repeated after a crash is
// refused as a duplicate rather than run twice.
package schedule

import (
	"maps"
	"slices"
	"time"

	"cairn/domain"
	"cairn/domain/job"
)

const entity = "schedule"

// Status is where a schedule is in its life.
type Status string

const (
	StatusActive  Status = "active"
	StatusPaused  Status = "paused"
	StatusDeleted Status = "deleted"
)

// Statuses lists every schedule status.
var Statuses = []Status{StatusActive, StatusPaused, StatusDeleted}

// Command names, as the allowed-commands table and state errors spell them.
const (
	CmdCreate = "create"
	CmdPause  = "pause"
	CmdResume = "resume"
	CmdDelete = "delete"
)

// Commands lists every schedule command.
var Commands = []string{CmdCreate, CmdPause, CmdResume, CmdDelete}

// Allowed lists the commands an existing schedule accepts in each status;
// create is accepted only by a schedule that does not exist yet.
var Allowed = map[Status][]string{
	StatusActive:  {CmdPause, CmdDelete},
	StatusPaused:  {CmdResume, CmdDelete},
	StatusDeleted: {},
}

// AllowedCommands returns the commands a schedule in status s accepts.
func AllowedCommands(s Status) []string { return slices.Clone(Allowed[s]) }

// JobTemplate is what each firing submits.
type JobTemplate struct {
	Spec    job.Spec        `json:"spec"`
	Target  job.Target      `json:"target"`
	Timeout time.Duration   `json:"timeout"`
	Grace   time.Duration   `json:"grace"`
	Retry   job.RetryPolicy `json:"retry"`
	Queue   string          `json:"queue,omitempty"`
}

// Schedule is the state of one schedule, folded from its events.
type Schedule struct {
	ID  string
	Job JobTemplate
	// Exactly one of Every and Cron is set.
	Every     time.Duration
	Cron      string
	Status    Status
	Submitter string // who created it; each firing is submitted on their behalf
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Exists reports whether the schedule has been created.
func (s Schedule) Exists() bool { return s.Status != "" }

// AllowedCommands returns the commands this schedule accepts now.
func (s Schedule) AllowedCommands() []string {
	if !s.Exists() {
		return []string{CmdCreate}
	}
	return AllowedCommands(s.Status)
}

// Next returns the first firing strictly after after: interval schedules
// fire at CreatedAt + k·Every (k ≥ 1), cron schedules at the instants of
// their expression. Firings missed while nobody was watching are not caught
// up: Next only looks forward. It returns the zero time for a schedule that
// is not active.
func (s Schedule) Next(after time.Time) time.Time {
	if s.Status != StatusActive {
		return time.Time{}
	}
	if s.Every > 0 {
		if after.Before(s.CreatedAt) {
			return s.CreatedAt.Add(s.Every)
		}
		k := after.Sub(s.CreatedAt)/s.Every + 1
		return s.CreatedAt.Add(k * s.Every)
	}
	c, err := ParseCron(s.Cron)
	if err != nil {
		return time.Time{}
	}
	return c.Next(after)
}

// JobIDAt is the id of the job the firing at instant at submits.
func (s Schedule) JobIDAt(at time.Time) string {
	return s.ID + "." + at.UTC().Format("20060102T150405Z")
}

// Apply folds one event into the state; others are ignored.
func (s *Schedule) Apply(e domain.Event) {
	switch e := e.(type) {
	case Created:
		*s = Schedule{ID: e.ScheduleID, Job: e.Job.clone(), Every: e.Every, Cron: e.Cron,
			Status: StatusActive, Submitter: e.Submitter, CreatedAt: e.At, UpdatedAt: e.At}
	case Paused:
		s.Status = StatusPaused
		s.UpdatedAt = e.At
	case Resumed:
		s.Status = StatusActive
		s.UpdatedAt = e.At
	case Deleted:
		s.Status = StatusDeleted
		s.UpdatedAt = e.At
	}
}

func (t JobTemplate) clone() JobTemplate {
	t.Spec.Args = slices.Clone(t.Spec.Args)
	if t.Spec.Exec != nil {
		x := *t.Spec.Exec
		x.Argv = slices.Clone(x.Argv)
		x.Env = maps.Clone(x.Env)
		t.Spec.Exec = &x
	}
	if t.Spec.Script != nil {
		x := *t.Spec.Script
		t.Spec.Script = &x
	}
	t.Target.Selector = maps.Clone(t.Target.Selector)
	return t
}
