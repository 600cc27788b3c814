package service

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"cairn/domain"
)

// Repairs: the reconciler asks for the resources it found drifted to be
// made again; the orchestrator does it (repairing) and the service goes
// back where it was, or, after too many failed repairs in a window, is
// degraded until it heals or someone retries.

// RepairRequested records that resources of a settled service are to be
// made again, and why.
type RepairRequested struct {
	ServiceID string    `json:"serviceId"`
	Resources []string  `json:"resources"`
	Reason    string    `json:"reason"`
	At        time.Time `json:"at"`
}

// Repaired records that every resource asked for was made again, with the
// service's outputs as they are now (a resource moved to another node, say).
type Repaired struct {
	ServiceID string          `json:"serviceId"`
	Outputs   json.RawMessage `json:"outputs,omitempty"`
	// To is the status the service is back in (where it was before).
	To Status    `json:"to"`
	At time.Time `json:"at"`
}

// RepairFailed records a failed repair; Degraded says the failures in the
// window reached the limit, and the service waits for an operator.
type RepairFailed struct {
	ServiceID string `json:"serviceId"`
	Cause     string `json:"cause"`
	Degraded  bool   `json:"degraded,omitempty"`
	// To is the status the service is in now: degraded, or where it was.
	To Status    `json:"to"`
	At time.Time `json:"at"`
}

// RepairRetried records an operator's retry of a degraded service: it goes
// back where it was, and the reconciler tries again.
type RepairRetried struct {
	ServiceID string    `json:"serviceId"`
	To        Status    `json:"to"`
	At        time.Time `json:"at"`
}

func (RepairRequested) EventType() string { return "service.repair_requested" }
func (Repaired) EventType() string        { return "service.repaired" }
func (RepairFailed) EventType() string    { return "service.repair_failed" }
func (RepairRetried) EventType() string   { return "service.repair_retried" }

func registerRepairEvents(r *domain.Registry) {
	domain.Register[RepairRequested](r, 1)
	domain.Register[Repaired](r, 1)
	domain.Register[RepairFailed](r, 1)
	domain.Register[RepairRetried](r, 1)
}

// applyRepair folds the repair events; false for any other.
func (s *Service) applyRepair(e domain.Event) bool {
	switch e := e.(type) {
	case RepairRequested:
		from := s.Status
		s.enter(StatusRepairing, e.At)
		s.RepairFrom, s.Repairing, s.Cause = from, slices.Clone(e.Resources), ""
	case Repaired:
		s.enter(e.To, e.At)
		s.Repairing, s.RepairFailures = nil, nil
		s.setOutputs(e.Outputs)
	case RepairFailed:
		s.RepairFailures = append(s.RepairFailures, e.At)
		s.Cause, s.Repairing = e.Cause, nil
		s.enter(e.To, e.At)
	case RepairRetried:
		s.enter(e.To, e.At)
		s.RepairFailures, s.Cause = nil, ""
	default:
		return false
	}
	return true
}

// RequestRepair asks for resources of a running, registered or stopped
// service to be made again.
type RequestRepair struct {
	ServiceID string
	Resources []string
	Reason    string
	At        time.Time
}

// RequestRepair decides a repair of some of the service's own resources.
func (s Service) RequestRepair(c RequestRepair) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdRequestRepair, c.At); err != nil {
		return nil, err
	}
	if len(c.Resources) == 0 {
		return nil, domain.Invalid("resources", "name at least one resource to repair")
	}
	for i, r := range c.Resources {
		if !slices.Contains(s.ResourceIDs, r) {
			return nil, domain.Invalid(fmt.Sprintf("resources[%d]", i), fmt.Sprintf("%q is not a resource of service %s", r, s.ID))
		}
	}
	if err := domain.ValidateRequiredText("reason", c.Reason, MaxCauseLength); err != nil {
		return nil, err
	}
	return []domain.Event{RepairRequested{ServiceID: s.ID, Resources: slices.Clone(c.Resources), Reason: c.Reason, At: c.At.UTC()}}, nil
}

// CompleteRepair reports that the repair made every resource again;
// outputs are the service's outputs now (nil keeps the last).
func (s Service) CompleteRepair(serviceID string, outputs json.RawMessage, at time.Time) ([]domain.Event, error) {
	if err := s.admit(serviceID, CmdCompleteRepair, at); err != nil {
		return nil, err
	}
	if err := domain.ValidateJSON("outputs", outputs, MaxJSONBytes, true); err != nil {
		return nil, err
	}
	return []domain.Event{Repaired{ServiceID: s.ID, Outputs: domain.CanonicalJSON(outputs), To: s.RepairFrom, At: at.UTC()}}, nil
}

// FailRepair reports a failed repair. The service is degraded when, with
// this one, MaxFailures repairs failed within Window.
type FailRepair struct {
	ServiceID   string
	Cause       string
	MaxFailures int
	Window      time.Duration
	At          time.Time
}

// FailRepair decides a repair's failure, and whether it degrades the
// service.
func (s Service) FailRepair(c FailRepair) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdFailRepair, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateRequiredText("cause", c.Cause, MaxCauseLength); err != nil {
		return nil, err
	}
	recent := 1
	for _, t := range s.RepairFailures {
		if c.At.Sub(t) <= c.Window {
			recent++
		}
	}
	degraded := recent >= max(c.MaxFailures, 1)
	to := s.RepairFrom
	if degraded {
		to = StatusDegraded
	}
	return []domain.Event{RepairFailed{ServiceID: s.ID, Cause: c.Cause, Degraded: degraded, To: to, At: c.At.UTC()}}, nil
}
