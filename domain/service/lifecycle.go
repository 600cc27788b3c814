package service

import "cairn/domain"

// CompleteRegistration moves a registering service to registered.
func (s Service) CompleteRegistration(c CompleteRegistration) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdCompleteRegistration, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateJSON("outputs", c.Outputs, MaxJSONBytes, true); err != nil {
		return nil, err
	}
	evs := []domain.Event{Registered{ServiceID: s.ID, Outputs: domain.CanonicalJSON(c.Outputs), At: c.At.UTC()}}
	if s.StartWhenRegistered {
		evs = append(evs, StartRequested{ServiceID: s.ID, At: c.At.UTC()})
	}
	return evs, nil
}

// FailRegistration moves a registering service to rolling_back.
func (s Service) FailRegistration(c FailRegistration) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdFailRegistration, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateRequiredText("cause", c.Cause, MaxCauseLength); err != nil {
		return nil, err
	}
	return []domain.Event{RegistrationFailed{ServiceID: s.ID, Cause: c.Cause, At: c.At.UTC()}}, nil
}

// CompleteRollback moves a rolling-back service to failed; the registration's
// cause is kept.
func (s Service) CompleteRollback(c CompleteRollback) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdCompleteRollback, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{RolledBack{ServiceID: s.ID, At: c.At.UTC()}}, nil
}

// FailRollback moves a rolling-back service to rollback_failed.
func (s Service) FailRollback(c FailRollback) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdFailRollback, c.At); err != nil {
		return nil, err
	}
	if err := domain.FirstError(
		s.validateRemaining(c.Remaining),
		domain.ValidateRequiredText("cause", c.Cause, MaxCauseLength),
	); err != nil {
		return nil, err
	}
	return []domain.Event{RollbackFailed{ServiceID: s.ID, Remaining: cloneIDs(c.Remaining), Cause: c.Cause, At: c.At.UTC()}}, nil
}

// Retry moves a service whose registration failed and was rolled back to
// registering again, and a degraded one back where it was before its
// repairs failed (the reconciler then tries again).
func (s Service) Retry(c Retry) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdRetry, c.At); err != nil {
		return nil, err
	}
	if s.Status == StatusDegraded {
		return []domain.Event{RepairRetried{ServiceID: s.ID, To: s.RepairFrom, At: c.At.UTC()}}, nil
	}
	return []domain.Event{RegistrationRetried{ServiceID: s.ID, At: c.At.UTC()}}, nil
}

// Start moves a registered, stopped, or (after a failed start or stop) failed
// service to starting.
func (s Service) Start(c Start) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdStart, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{StartRequested{ServiceID: s.ID, At: c.At.UTC()}}, nil
}

// CompleteStart moves a starting service to running.
func (s Service) CompleteStart(c CompleteStart) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdCompleteStart, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateJSON("outputs", c.Outputs, MaxJSONBytes, true); err != nil {
		return nil, err
	}
	return []domain.Event{Started{ServiceID: s.ID, Outputs: domain.CanonicalJSON(c.Outputs), At: c.At.UTC()}}, nil
}

// FailStart moves a starting service to failed.
func (s Service) FailStart(c FailStart) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdFailStart, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateRequiredText("cause", c.Cause, MaxCauseLength); err != nil {
		return nil, err
	}
	return []domain.Event{StartFailed{ServiceID: s.ID, Cause: c.Cause, At: c.At.UTC()}}, nil
}

// Stop moves a running, or (after a failed start or stop) failed, service to
// stopping.
func (s Service) Stop(c Stop) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdStop, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{StopRequested{ServiceID: s.ID, At: c.At.UTC()}}, nil
}

// CompleteStop moves a stopping service to stopped.
func (s Service) CompleteStop(c CompleteStop) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdCompleteStop, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{Stopped{ServiceID: s.ID, At: c.At.UTC()}}, nil
}

// FailStop moves a stopping service to failed.
func (s Service) FailStop(c FailStop) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdFailStop, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateRequiredText("cause", c.Cause, MaxCauseLength); err != nil {
		return nil, err
	}
	return []domain.Event{StopFailed{ServiceID: s.ID, Cause: c.Cause, At: c.At.UTC()}}, nil
}

// Remove moves a service that runs nothing (or, forced, a running one) to
// removing.
func (s Service) Remove(c Remove) ([]domain.Event, error) {
	if c.Force && s.Status == StatusRunning && c.ServiceID == s.ID {
		if err := domain.ValidateAt(c.At); err != nil {
			return nil, err
		}
		return []domain.Event{RemovalRequested{ServiceID: s.ID, Stopping: true, At: c.At.UTC()}}, nil
	}
	if err := s.admit(c.ServiceID, CmdRemove, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{RemovalRequested{ServiceID: s.ID, At: c.At.UTC()}}, nil
}

// CompleteRemoval moves a removing service to removed, its final status.
func (s Service) CompleteRemoval(c CompleteRemoval) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdCompleteRemoval, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{Removed{ServiceID: s.ID, At: c.At.UTC()}}, nil
}

// FailRemoval moves a removing service to manual_cleanup_required.
func (s Service) FailRemoval(c FailRemoval) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdFailRemoval, c.At); err != nil {
		return nil, err
	}
	if err := domain.FirstError(
		s.validateRemaining(c.Remaining),
		domain.ValidateRequiredText("cause", c.Cause, MaxCauseLength),
	); err != nil {
		return nil, err
	}
	return []domain.Event{RemovalFailed{ServiceID: s.ID, Remaining: cloneIDs(c.Remaining), Cause: c.Cause, At: c.At.UTC()}}, nil
}

// MarkCleanedUp moves a service whose leftovers were removed by hand to removed.
func (s Service) MarkCleanedUp(c MarkCleanedUp) ([]domain.Event, error) {
	if err := s.admit(c.ServiceID, CmdMarkCleanedUp, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateText("note", c.Note, MaxNoteLength); err != nil {
		return nil, err
	}
	return []domain.Event{CleanedUp{ServiceID: s.ID, Note: c.Note, At: c.At.UTC()}}, nil
}

func cloneIDs(ids []string) []string { return append([]string{}, ids...) }
