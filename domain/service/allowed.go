package service

import "slices"

// Command names, as the allowed-commands table and state errors spell them.
const (
	CmdRegister             = "register"
	CmdCompleteRegistration = "complete_registration"
	CmdFailRegistration     = "fail_registration"
	CmdCompleteRollback     = "complete_rollback"
	CmdFailRollback         = "fail_rollback"
	CmdStart                = "start"
	CmdCompleteStart        = "complete_start"
	CmdFailStart            = "fail_start"
	CmdStop                 = "stop"
	CmdCompleteStop         = "complete_stop"
	CmdFailStop             = "fail_stop"
	CmdRemove               = "remove"
	CmdCompleteRemoval      = "complete_removal"
	CmdFailRemoval          = "fail_removal"
	CmdMarkCleanedUp        = "mark_cleaned_up"
	CmdRetry                = "retry"
	CmdRequestRepair        = "request_repair"
	CmdCompleteRepair       = "complete_repair"
	CmdFailRepair           = "fail_repair"
	CmdUpdate               = "update"
	CmdCompleteUpdate       = "complete_update"
	CmdFailUpdate           = "fail_update"
	CmdCompleteRevert       = "complete_revert"
	CmdFailRevert           = "fail_revert"
)

// Commands lists every service command.
var Commands = []string{
	CmdRegister, CmdCompleteRegistration, CmdFailRegistration, CmdCompleteRollback,
	CmdFailRollback, CmdStart, CmdCompleteStart, CmdFailStart, CmdStop, CmdCompleteStop,
	CmdFailStop, CmdRemove, CmdCompleteRemoval, CmdFailRemoval, CmdMarkCleanedUp, CmdRetry,
	CmdRequestRepair, CmdCompleteRepair, CmdFailRepair, CmdUpdate, CmdCompleteUpdate, CmdFailUpdate,
	CmdCompleteRevert, CmdFailRevert,
}

// Allowed lists the commands an existing service accepts in each status,
// except failed, whose commands depend on the phase it failed in (see
// AllowedAfterFailure). Register is accepted only by a service that does not
// exist yet. The deciders consult these tables, so they are the single source
// of truth.
//
// A running service must be stopped before it is removed, so that remove never
// destroys a workload by surprise. Remove also retries the destruction of the
// leftovers of a failed rollback or removal; mark_cleaned_up is the operator's
// word that they were removed by hand.
var Allowed = map[Status][]string{
	StatusRegistering:           {CmdCompleteRegistration, CmdFailRegistration},
	StatusRegistered:            {CmdStart, CmdRemove, CmdRequestRepair, CmdUpdate},
	StatusStarting:              {CmdCompleteStart, CmdFailStart},
	StatusRunning:               {CmdStop, CmdRequestRepair, CmdUpdate},
	StatusStopping:              {CmdCompleteStop, CmdFailStop},
	StatusStopped:               {CmdStart, CmdRemove, CmdRequestRepair, CmdUpdate},
	StatusRemoving:              {CmdCompleteRemoval, CmdFailRemoval},
	StatusRemoved:               {},
	StatusFailed:                nil, // see AllowedAfterFailure
	StatusRollingBack:           {CmdCompleteRollback, CmdFailRollback},
	StatusRollbackFailed:        {CmdRemove, CmdMarkCleanedUp},
	StatusManualCleanupRequired: {CmdRemove, CmdMarkCleanedUp},
	StatusRepairing:             {CmdCompleteRepair, CmdFailRepair},
	StatusDegraded:              {CmdRetry, CmdStop, CmdRemove},
	StatusUpdating:              {CmdCompleteUpdate, CmdFailUpdate},
	StatusReverting:             {CmdCompleteRevert, CmdFailRevert},
}

// AllowedAfterFailure lists the commands a failed service accepts, by the
// phase it failed in. After a failed start or stop the resources exist, some
// running, some not: start retries, stop brings them all down (plugins stop
// idempotently). After a rolled-back registration nothing exists: the
// registration can be retried (when a node has room again, say), or the
// service removed.
var AllowedAfterFailure = map[Phase][]string{
	PhaseRegister: {CmdRetry, CmdRemove},
	PhaseStart:    {CmdStart, CmdStop, CmdRemove},
	PhaseStop:     {CmdStart, CmdStop, CmdRemove},
	PhaseUpdate:   {CmdUpdate, CmdStop, CmdRemove},
}

// AllowedCommands returns the commands a service in status s accepts;
// failedIn matters only when s is failed.
func AllowedCommands(s Status, failedIn Phase) []string {
	if s == StatusFailed {
		return slices.Clone(AllowedAfterFailure[failedIn])
	}
	return slices.Clone(Allowed[s])
}

// AllowedCommands returns the commands this service accepts now.
func (s Service) AllowedCommands() []string {
	if !s.Exists() {
		return []string{CmdRegister}
	}
	return AllowedCommands(s.Status, s.FailedIn)
}
