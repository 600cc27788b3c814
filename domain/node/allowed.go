package node

import "slices"

// Command names, as the allowed-commands table and state errors spell them.
const (
	CmdEnroll       = "enroll"
	CmdConnect      = "connect"
	CmdDisconnect   = "disconnect"
	CmdMarkDown     = "mark_down"
	CmdSetLabels    = "set_labels"
	CmdSetLocation  = "set_location"
	CmdReportFacts  = "report_facts"
	CmdDrain        = "drain"
	CmdUndrain      = "undrain"
	CmdMarkDrained  = "mark_drained"
	CmdDecommission = "decommission"
)

// Commands lists every node command.
var Commands = []string{
	CmdEnroll, CmdConnect, CmdDisconnect, CmdMarkDown, CmdSetLabels, CmdSetLocation,
	CmdReportFacts, CmdDrain, CmdUndrain, CmdMarkDrained, CmdDecommission,
}

// Allowed lists the commands an existing node accepts in each status. Enroll
// is accepted only by a node that does not exist yet. The deciders consult
// this table, so it is the single source of truth.
//
// Some allowed commands change nothing and decide no event:
//   - connect on a connected node (online, draining, drained): a heartbeat or
//     a reconnect within the grace period;
//   - drain on an unconnected node (enrolled, disconnected, down) that is
//     already cordoned, and undrain on one that is not;
//   - set_labels, set_location and report_facts with what the node already has.
var Allowed = map[Status][]string{
	StatusEnrolled: {
		CmdConnect, CmdSetLabels, CmdSetLocation, CmdReportFacts,
		CmdDrain, CmdUndrain, CmdDecommission,
	},
	StatusOnline: {
		CmdConnect, CmdDisconnect, CmdSetLabels, CmdSetLocation, CmdReportFacts,
		CmdDrain, CmdDecommission,
	},
	StatusDraining: {
		CmdConnect, CmdDisconnect, CmdSetLabels, CmdSetLocation, CmdReportFacts,
		CmdUndrain, CmdMarkDrained, CmdDecommission,
	},
	StatusDrained: {
		CmdConnect, CmdDisconnect, CmdSetLabels, CmdSetLocation, CmdReportFacts,
		CmdUndrain, CmdDecommission,
	},
	StatusDisconnected: {
		CmdConnect, CmdMarkDown, CmdSetLabels, CmdSetLocation, CmdReportFacts,
		CmdDrain, CmdUndrain, CmdDecommission,
	},
	StatusDown: {
		CmdConnect, CmdSetLabels, CmdSetLocation, CmdReportFacts,
		CmdDrain, CmdUndrain, CmdDecommission,
	},
	StatusDecommissioned: {},
}

// AllowedCommands returns the commands a node in status s accepts.
func AllowedCommands(s Status) []string { return slices.Clone(Allowed[s]) }

// AllowedCommands returns the commands this node accepts now.
func (n Node) AllowedCommands() []string {
	if !n.Exists() {
		return []string{CmdEnroll}
	}
	return AllowedCommands(n.Status)
}
