package node

import (
	"maps"
	"time"

	"cairn/domain"
)

const entity = "node"

// MaxReasonLength bounds free-text reasons.
const MaxReasonLength = 1024

// Enroll creates a node for an agent that traded its join token.
type Enroll struct {
	NodeID     string
	Hostname   string
	LocationID string // optional
	Labels     map[string]string
	At         time.Time
}

// Connect reports that the node's agent is connected (first connection,
// reconnection or heartbeat).
type Connect struct {
	NodeID string
	At     time.Time
}

// Disconnect reports that the agent was silent past the grace period.
type Disconnect struct {
	NodeID string
	At     time.Time
}

// MarkDown reports that a disconnected node stayed away past the down window.
type MarkDown struct {
	NodeID string
	At     time.Time
}

// SetLabels replaces the node's labels with Labels.
type SetLabels struct {
	NodeID string
	Labels map[string]string
	At     time.Time
}

// SetLocation moves the node to LocationID ("" unassigns it).
type SetLocation struct {
	NodeID     string
	LocationID string
	At         time.Time
}

// ReportFacts records the facts the agent found.
type ReportFacts struct {
	NodeID string
	Facts  Facts
	At     time.Time
}

// Drain asks that the node take no new work.
type Drain struct {
	NodeID string
	Reason string
	At     time.Time
}

// Undrain lets a drained or draining node take work again.
type Undrain struct {
	NodeID string
	At     time.Time
}

// MarkDrained reports that a draining node runs no job any more; the caller
// checks that.
type MarkDrained struct {
	NodeID string
	At     time.Time
}

// Decommission retires the node for good.
type Decommission struct {
	NodeID string
	Reason string
	At     time.Time
}

// Enroll decides the enrollment of a node that does not exist yet.
func (n Node) Enroll(c Enroll) ([]domain.Event, error) {
	if n.Exists() {
		return nil, n.refuse(CmdEnroll)
	}
	if err := domain.FirstError(
		domain.ValidateID("nodeId", c.NodeID),
		validateHostname(c.Hostname),
		domain.ValidateOptionalID("locationId", c.LocationID),
		ValidateLabels("labels", c.Labels),
		domain.ValidateAt(c.At),
	); err != nil {
		return nil, err
	}
	return []domain.Event{Enrolled{
		NodeID: c.NodeID, Hostname: c.Hostname, LocationID: c.LocationID,
		Labels: maps.Clone(c.Labels), At: c.At.UTC(),
	}}, nil
}

// Connect brings an enrolled, disconnected or down node online (or back to
// draining, when it was cordoned). On a connected node it decides nothing.
func (n Node) Connect(c Connect) ([]domain.Event, error) {
	if err := n.admit(c.NodeID, CmdConnect, c.At); err != nil {
		return nil, err
	}
	if n.connected() {
		return nil, nil
	}
	return []domain.Event{Connected{NodeID: n.ID, At: c.At.UTC()}}, nil
}

// Disconnect marks a connected node disconnected.
func (n Node) Disconnect(c Disconnect) ([]domain.Event, error) {
	if err := n.admit(c.NodeID, CmdDisconnect, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{Disconnected{NodeID: n.ID, At: c.At.UTC()}}, nil
}

// MarkDown marks a disconnected node down.
func (n Node) MarkDown(c MarkDown) ([]domain.Event, error) {
	if err := n.admit(c.NodeID, CmdMarkDown, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{WentDown{NodeID: n.ID, At: c.At.UTC()}}, nil
}

// SetLabels replaces the labels; the same labels decide nothing.
func (n Node) SetLabels(c SetLabels) ([]domain.Event, error) {
	if err := n.admit(c.NodeID, CmdSetLabels, c.At); err != nil {
		return nil, err
	}
	if err := ValidateLabels("labels", c.Labels); err != nil {
		return nil, err
	}
	if maps.Equal(n.Labels, c.Labels) {
		return nil, nil
	}
	return []domain.Event{LabelsSet{NodeID: n.ID, Labels: maps.Clone(c.Labels), At: c.At.UTC()}}, nil
}

// SetLocation moves the node; the same location decides nothing.
func (n Node) SetLocation(c SetLocation) ([]domain.Event, error) {
	if err := n.admit(c.NodeID, CmdSetLocation, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateOptionalID("locationId", c.LocationID); err != nil {
		return nil, err
	}
	if n.LocationID == c.LocationID {
		return nil, nil
	}
	return []domain.Event{LocationSet{NodeID: n.ID, LocationID: c.LocationID, At: c.At.UTC()}}, nil
}

// ReportFacts records new facts; unchanged facts decide nothing, so periodic
// reports do not grow the stream.
func (n Node) ReportFacts(c ReportFacts) ([]domain.Event, error) {
	if err := n.admit(c.NodeID, CmdReportFacts, c.At); err != nil {
		return nil, err
	}
	if err := validateFacts(c.Facts); err != nil {
		return nil, err
	}
	if !n.FactsAt.IsZero() && n.Facts.Equal(c.Facts) {
		return nil, nil
	}
	return []domain.Event{FactsReported{NodeID: n.ID, Facts: c.Facts.clone(), At: c.At.UTC()}}, nil
}

// Drain stops new work for an online node (it becomes draining). On a node
// that is not connected it only records the intent (cordons it), so that the
// node comes back draining; if it is already cordoned that decides nothing.
func (n Node) Drain(c Drain) ([]domain.Event, error) {
	if err := n.admit(c.NodeID, CmdDrain, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateLine("reason", c.Reason, MaxReasonLength); err != nil {
		return nil, err
	}
	if n.Cordoned {
		return nil, nil
	}
	return []domain.Event{DrainRequested{NodeID: n.ID, Reason: c.Reason, At: c.At.UTC()}}, nil
}

// Undrain returns a draining or drained node online. On a node that is not
// connected it lifts the cordon; if there is none that decides nothing.
func (n Node) Undrain(c Undrain) ([]domain.Event, error) {
	if err := n.admit(c.NodeID, CmdUndrain, c.At); err != nil {
		return nil, err
	}
	if !n.Cordoned {
		return nil, nil
	}
	return []domain.Event{Undrained{NodeID: n.ID, At: c.At.UTC()}}, nil
}

// MarkDrained moves a draining node to drained.
func (n Node) MarkDrained(c MarkDrained) ([]domain.Event, error) {
	if err := n.admit(c.NodeID, CmdMarkDrained, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{Drained{NodeID: n.ID, At: c.At.UTC()}}, nil
}

// Decommission retires any node that is not decommissioned already.
func (n Node) Decommission(c Decommission) ([]domain.Event, error) {
	if err := n.admit(c.NodeID, CmdDecommission, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateLine("reason", c.Reason, MaxReasonLength); err != nil {
		return nil, err
	}
	return []domain.Event{Decommissioned{NodeID: n.ID, Reason: c.Reason, At: c.At.UTC()}}, nil
}

func (n Node) connected() bool {
	return n.Status == StatusOnline || n.Status == StatusDraining || n.Status == StatusDrained
}

// admit checks that the command addresses this existing node, that the
// allowed-commands table accepts it in the node's status, and that it has a time.
func (n Node) admit(id, command string, at time.Time) error {
	return domain.Admit(entity, n.ID, n.Status, Allowed, "nodeId", id, command, at)
}

func (n Node) refuse(command string) error {
	return &domain.StateError{Entity: entity, ID: n.ID, Command: command, State: string(n.Status)}
}
