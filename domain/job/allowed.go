package job

import "slices"

// Command names, as the allowed-commands table and state errors spell them.
const (
	CmdSubmit         = "submit"
	CmdLease          = "lease"
	CmdAcknowledge    = "acknowledge"
	CmdStart          = "start"
	CmdFinish         = "finish"
	CmdExpireLease    = "expire_lease"
	CmdMarkLost       = "mark_lost"
	CmdCancel         = "cancel"
	CmdRetry          = "retry"
	CmdSpawnChildren  = "spawn_children"
	CmdCompleteFanOut = "complete_fan_out"
)

// Commands lists every job command.
var Commands = []string{
	CmdSubmit, CmdLease, CmdAcknowledge, CmdStart, CmdFinish, CmdExpireLease,
	CmdMarkLost, CmdCancel, CmdRetry, CmdSpawnChildren, CmdCompleteFanOut,
}

// Allowed lists the commands an existing job accepts in each status. Submit is
// accepted only by a job that does not exist yet. The deciders consult this
// table (through AllowedCommands), so it is the single source of truth.
//
// Allowed commands that decide nothing: acknowledge of an acknowledged lease
// (the agent retried), and cancel of a job that is already cancelling.
var Allowed = map[Status][]string{
	StatusQueued:     {CmdLease, CmdCancel, CmdSpawnChildren},
	StatusDispatched: {CmdAcknowledge, CmdStart, CmdExpireLease, CmdMarkLost, CmdCancel},
	StatusRunning:    {CmdFinish, CmdMarkLost, CmdCancel, CmdCompleteFanOut},
	StatusCancelling: {CmdFinish, CmdMarkLost, CmdCancel, CmdCompleteFanOut},
	StatusSucceeded:  {},
	StatusFailed:     {CmdRetry},
	StatusTimedOut:   {CmdRetry},
	StatusCancelled:  {},
	StatusLost:       {CmdRetry},
}

// NodeCommands are the commands of a job that runs on one node; a fan-out
// (target mode all) refuses them: its children run instead.
var NodeCommands = []string{
	CmdLease, CmdAcknowledge, CmdStart, CmdFinish, CmdExpireLease, CmdMarkLost, CmdRetry,
}

// FanOutCommands are the commands only a fan-out accepts.
var FanOutCommands = []string{CmdSpawnChildren, CmdCompleteFanOut}

// AllowedCommands returns the commands a job in status s accepts; fanOut says
// whether the job is a fan-out.
func AllowedCommands(s Status, fanOut bool) []string {
	var out []string
	for _, cmd := range Allowed[s] {
		if appliesTo(cmd, fanOut) {
			out = append(out, cmd)
		}
	}
	return out
}

// AllowedCommands returns the commands this job accepts now.
func (j Job) AllowedCommands() []string {
	if !j.Exists() {
		return []string{CmdSubmit}
	}
	return AllowedCommands(j.Status, j.IsFanOut())
}

func appliesTo(cmd string, fanOut bool) bool {
	if fanOut {
		return !slices.Contains(NodeCommands, cmd)
	}
	return !slices.Contains(FanOutCommands, cmd)
}
