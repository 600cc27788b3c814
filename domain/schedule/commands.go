package schedule

import (
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"cairn/domain"
	"cairn/domain/job"
)

// Limits of a schedule.
const (
	// MinEvery is the shortest interval: a job every second is already a
	// load test, not a schedule.
	MinEvery = time.Second
	// MaxEvery is the longest interval; longer cadences are cron's job.
	MaxEvery        = 366 * 24 * time.Hour
	MaxReasonLength = 1024
)

// MaxIDLength is shorter than other ids on purpose: it leaves room in the
// domain.MaxIDLength characters of a job id for the suffix JobIDAt adds
// (".20060102T150405Z").
const MaxIDLength = domain.MaxIDLength - len(".20060102T150405Z")

// Create makes a schedule that submits Job every Every, or at the instants
// of the cron expression Cron: exactly one of the two.
type Create struct {
	ScheduleID string
	Job        JobTemplate
	Every      time.Duration
	Cron       string
	Submitter  string
	At         time.Time
}

// Pause stops an active schedule from firing.
type Pause struct {
	ScheduleID string
	At         time.Time
}

// Resume lets a paused schedule fire again.
type Resume struct {
	ScheduleID string
	At         time.Time
}

// Delete ends a schedule for good.
type Delete struct {
	ScheduleID string
	Reason     string
	At         time.Time
}

// Create decides the creation of a schedule that does not exist yet. The job
// template is checked by deciding a submission of it, so a schedule never
// holds a job the job aggregate would refuse at its first firing.
func (s Schedule) Create(c Create) ([]domain.Event, error) {
	if s.Exists() {
		return nil, s.refuse(CmdCreate)
	}
	if err := domain.ValidateIDUpTo("scheduleId", c.ScheduleID, MaxIDLength); err != nil {
		return nil, err
	}
	if c.At.IsZero() {
		return nil, domain.Invalid("at", "is required")
	}
	switch {
	case c.Every == 0 && c.Cron == "":
		return nil, domain.Invalid("every", "a schedule needs an interval or a cron expression")
	case c.Every != 0 && c.Cron != "":
		return nil, domain.Invalid("cron", "give an interval or a cron expression, not both")
	case c.Every != 0 && (c.Every < MinEvery || c.Every > MaxEvery):
		return nil, domain.Invalid("every", fmt.Sprintf("must be between %s and %s", MinEvery, MaxEvery))
	case c.Every%time.Second != 0:
		return nil, domain.Invalid("every", "must be a whole number of seconds")
	}
	if c.Cron != "" {
		if _, err := ParseCron(c.Cron); err != nil {
			return nil, domain.Invalid("cron", err.Error())
		}
	}
	probe := Schedule{ID: c.ScheduleID}
	if _, err := (job.Job{}).Submit(job.Submit{
		JobID: probe.JobIDAt(c.At), Spec: c.Job.Spec, Target: c.Job.Target, Timeout: c.Job.Timeout,
		Grace: c.Job.Grace, Retry: c.Job.Retry, Queue: c.Job.Queue, Submitter: c.Submitter, At: c.At,
	}); err != nil {
		var v *domain.ValidationError
		if errors.As(err, &v) {
			return nil, domain.Invalid("job."+v.Field, v.Reason)
		}
		return nil, err
	}
	return []domain.Event{Created{
		ScheduleID: c.ScheduleID, Job: c.Job.clone(), Every: c.Every, Cron: c.Cron,
		Submitter: c.Submitter, At: c.At.UTC(),
	}}, nil
}

// Pause pauses an active schedule.
func (s Schedule) Pause(c Pause) ([]domain.Event, error) {
	if err := s.admit(c.ScheduleID, CmdPause, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{Paused{ScheduleID: s.ID, At: c.At.UTC()}}, nil
}

// Resume resumes a paused schedule.
func (s Schedule) Resume(c Resume) ([]domain.Event, error) {
	if err := s.admit(c.ScheduleID, CmdResume, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{Resumed{ScheduleID: s.ID, At: c.At.UTC()}}, nil
}

// Delete deletes an active or paused schedule.
func (s Schedule) Delete(c Delete) ([]domain.Event, error) {
	if err := s.admit(c.ScheduleID, CmdDelete, c.At); err != nil {
		return nil, err
	}
	if len(c.Reason) > MaxReasonLength || !utf8.ValidString(c.Reason) {
		return nil, domain.Invalid("reason", fmt.Sprintf("must be UTF-8 of at most %d bytes", MaxReasonLength))
	}
	for _, r := range c.Reason {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return nil, domain.Invalid("reason", "must not contain control characters")
		}
	}
	return []domain.Event{Deleted{ScheduleID: s.ID, Reason: c.Reason, At: c.At.UTC()}}, nil
}

func (s Schedule) admit(id, command string, at time.Time) error {
	return domain.Admit(entity, s.ID, s.Status, Allowed, "scheduleId", id, command, at)
}

func (s Schedule) refuse(command string) error {
	return &domain.StateError{Entity: entity, ID: s.ID, Command: command, State: string(s.Status)}
}
