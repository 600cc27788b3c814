package template

import "slices"

// Command names, as the allowed-commands table and state errors spell them.
const (
	CmdRegister  = "register"
	CmdPublish   = "publish"
	CmdDeprecate = "deprecate"
)

// Commands lists every template command.
var Commands = []string{CmdRegister, CmdPublish, CmdDeprecate}

// Allowed lists the commands an existing template version accepts in each
// status; register also creates a version that does not exist yet. The
// deciders consult this table, so it is the single source of truth.
//
// One refusal is softened: registering exactly what is registered (the same
// digest, by the same vendor) decides nothing in any status, so a vendor's
// pipeline can re-run safely.
var Allowed = map[Status][]string{
	StatusValidated:  {CmdRegister, CmdPublish},
	StatusPublished:  {CmdDeprecate},
	StatusDeprecated: {},
}

// AllowedCommands returns the commands a version in status s accepts.
func AllowedCommands(s Status) []string { return slices.Clone(Allowed[s]) }

// AllowedCommands returns the commands this version accepts now.
func (t TemplateVersion) AllowedCommands() []string {
	if !t.Exists() {
		return []string{CmdRegister}
	}
	return AllowedCommands(t.Status)
}
