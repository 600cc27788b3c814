package resource

import "slices"

// Command names, as the allowed-commands table and state errors spell them.
const (
	CmdPlan            = "plan"
	CmdBeginCreate     = "begin_create"
	CmdCompleteCreate  = "complete_create"
	CmdBeginStart      = "begin_start"
	CmdCompleteStart   = "complete_start"
	CmdBeginStop       = "begin_stop"
	CmdCompleteStop    = "complete_stop"
	CmdBeginDestroy    = "begin_destroy"
	CmdCompleteDestroy = "complete_destroy"
	CmdFail            = "fail"
	CmdBeginRepair     = "begin_repair"
	CmdBeginUpdate     = "begin_update"
	CmdCompleteUpdate  = "complete_update"
)

// Commands lists every resource command.
var Commands = []string{
	CmdPlan, CmdBeginCreate, CmdCompleteCreate, CmdBeginStart, CmdCompleteStart,
	CmdBeginStop, CmdCompleteStop, CmdBeginDestroy, CmdCompleteDestroy, CmdFail, CmdBeginRepair,
	CmdBeginUpdate, CmdCompleteUpdate,
}

// Allowed lists the commands an existing resource accepts in each status,
// except failed, whose commands depend on the phase it failed in (see
// AllowedAfterFailure). Plan is accepted only by a resource that does not
// exist yet. The deciders consult these tables, so they are the single source
// of truth.
//
// begin_destroy is accepted while pending (nothing to destroy; the plugin's
// destroy is idempotent, and the resource ends destroyed rather than dangling)
// and while creating (a rollback after a crash mid-create must destroy what
// the plugin may have made).
var Allowed = map[Status][]string{
	StatusPending:    {CmdBeginCreate, CmdBeginDestroy},
	StatusCreating:   {CmdCompleteCreate, CmdFail, CmdBeginDestroy},
	StatusCreated:    {CmdBeginStart, CmdBeginDestroy, CmdBeginRepair, CmdBeginUpdate},
	StatusStarting:   {CmdCompleteStart, CmdFail},
	StatusRunning:    {CmdBeginStop, CmdBeginRepair, CmdBeginUpdate},
	StatusStopping:   {CmdCompleteStop, CmdFail},
	StatusStopped:    {CmdBeginStart, CmdBeginDestroy, CmdBeginRepair, CmdBeginUpdate},
	StatusUpdating:   {CmdCompleteUpdate, CmdFail},
	StatusDestroying: {CmdCompleteDestroy, CmdFail},
	StatusDestroyed:  {CmdPlan}, // planned again when its service's registration is retried
	StatusFailed:     nil,       // see AllowedAfterFailure
}

// AllowedAfterFailure lists the commands a failed resource accepts, by the
// phase it failed in: the failed call may be retried, and anything may be
// destroyed. A resource that failed to start or stop may be started or
// stopped, since it exists and may be half-running.
var AllowedAfterFailure = map[Phase][]string{
	PhaseCreate:  {CmdBeginCreate, CmdBeginDestroy, CmdBeginRepair},
	PhaseStart:   {CmdBeginStart, CmdBeginStop, CmdBeginDestroy, CmdBeginRepair},
	PhaseStop:    {CmdBeginStart, CmdBeginStop, CmdBeginDestroy, CmdBeginRepair},
	PhaseUpdate:  {CmdBeginUpdate, CmdBeginStop, CmdBeginDestroy, CmdBeginRepair},
	PhaseDestroy: {CmdBeginDestroy},
}

// AllowedCommands returns the commands a resource in status s accepts;
// failedIn matters only when s is failed.
func AllowedCommands(s Status, failedIn Phase) []string {
	if s == StatusFailed {
		return slices.Clone(AllowedAfterFailure[failedIn])
	}
	return slices.Clone(Allowed[s])
}

// AllowedCommands returns the commands this resource accepts now.
func (r Resource) AllowedCommands() []string {
	if !r.Exists() {
		return []string{CmdPlan}
	}
	return AllowedCommands(r.Status, r.FailedIn)
}
