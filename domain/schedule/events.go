package schedule

import (
	"time"

	"cairn/domain"
)

// Created records a new, active schedule.
type Created struct {
	ScheduleID string        `json:"scheduleId"`
	Job        JobTemplate   `json:"job"`
	Every      time.Duration `json:"every,omitempty"`
	Cron       string        `json:"cron,omitempty"`
	Submitter  string        `json:"submitter"`
	At         time.Time     `json:"at"`
}

// Paused records that the schedule stops firing until resumed.
type Paused struct {
	ScheduleID string    `json:"scheduleId"`
	At         time.Time `json:"at"`
}

// Resumed records that a paused schedule fires again.
type Resumed struct {
	ScheduleID string    `json:"scheduleId"`
	At         time.Time `json:"at"`
}

// Deleted records that the schedule never fires again; its id is not reused.
type Deleted struct {
	ScheduleID string    `json:"scheduleId"`
	Reason     string    `json:"reason,omitempty"`
	At         time.Time `json:"at"`
}

func (Created) EventType() string { return "schedule.created" }
func (Paused) EventType() string  { return "schedule.paused" }
func (Resumed) EventType() string { return "schedule.resumed" }
func (Deleted) EventType() string { return "schedule.deleted" }

// RegisterEvents registers every schedule event at its current schema version.
func RegisterEvents(r *domain.Registry) {
	domain.Register[Created](r, 1)
	domain.Register[Paused](r, 1)
	domain.Register[Resumed](r, 1)
	domain.Register[Deleted](r, 1)
}
