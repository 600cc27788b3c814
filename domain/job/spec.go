package job

import (
	"encoding/json"
	"time"

	"cairn/domain/node"
)

// Kind says how the agent runs a job.
type Kind string

const (
	KindAction Kind = "action" // a typed SAL action with JSON arguments
	KindExec   Kind = "exec"   // a command with arguments, environment, stdin
	KindScript Kind = "script" // an inline script run by an interpreter
)

// Spec is what to run. Exactly the fields of its Kind are set.
type Spec struct {
	Kind   Kind            `json:"kind"`
	Action string          `json:"action,omitempty"` // KindAction: SAL action name, e.g. "files.write"
	Args   json.RawMessage `json:"args,omitempty"`   // KindAction: the action's arguments
	// SecretArgs (KindAction) are arguments sealed by the control plane: a
	// JSON object, merged over Args, that the log holds only as ciphertext
	// and only the agent the job is leased to receives in clear. The domain
	// keeps it opaque.
	SecretArgs json.RawMessage `json:"secretArgs,omitempty"`
	Exec       *Exec           `json:"exec,omitempty"`
	Script     *Script         `json:"script,omitempty"`
}

// Sealed reports whether the spec holds sealed values.
func (s Spec) Sealed() bool {
	return len(s.SecretArgs) > 0 || s.Exec != nil && len(s.Exec.SecretEnv) > 0
}

// Exec runs a program directly, without a shell.
type Exec struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env"`
	// SecretEnv are environment variables whose values the control plane
	// sealed (see Spec.SecretArgs), by name.
	SecretEnv map[string]json.RawMessage `json:"secretEnv,omitempty"`
	Stdin     string                     `json:"stdin,omitempty"`
	Workdir   string                     `json:"workdir,omitempty"` // absolute; "" is the agent's default
}

// Script runs Body with Interpreter (e.g. "sh", "bash", "python3").
type Script struct {
	Interpreter string `json:"interpreter"`
	Body        string `json:"body"`
}

// Mode says how a label selector picks nodes.
type Mode string

const (
	ModeAny Mode = "any" // one matching node runs the job
	ModeAll Mode = "all" // every matching node runs it: a fan-out to child jobs
)

// Target says where a job runs: one node by id, or a set of nodes — every
// node, or those of a location, those carrying the Selector's labels and
// meeting the Requirements (all that are given) — of which one (ModeAny)
// or every one (ModeAll) runs it.
type Target struct {
	NodeID   string            `json:"nodeId,omitempty"`
	Selector map[string]string `json:"selector"`
	// Requirements are set-based label tests (in, notin, exists, ...).
	Requirements node.Selector `json:"requirements,omitempty"`
	// Location keeps the nodes of one location.
	Location string `json:"location,omitempty"`
	// Every selects every node, when nothing else narrows the set.
	Every       bool `json:"every,omitempty"`
	Mode        Mode `json:"mode,omitempty"`        // with a set of nodes only
	MaxParallel int  `json:"maxParallel,omitempty"` // with ModeAll only; 0 is no limit
}

// IsSet reports whether the target is a set of nodes rather than one.
func (t Target) IsSet() bool {
	return t.NodeID == "" && (len(t.Selector) > 0 || len(t.Requirements) > 0 || t.Location != "" || t.Every)
}

// Selects reports whether a node belongs to the target's set (or is its
// node).
func (t Target) Selects(n node.Node) bool {
	if t.NodeID != "" {
		return n.ID == t.NodeID
	}
	return (t.Location == "" || n.LocationID == t.Location) && n.Matches(t.Selector) && t.Requirements.Matches(n.Labels)
}

// RetryPolicy says how often a failed attempt is tried again. Retry number n
// waits Backoff·2^(n-1), capped at BackoffCap.
type RetryPolicy struct {
	Max     int           `json:"max"`
	Backoff time.Duration `json:"backoff"`
}

// Result is what an agent reports when a job ends.
type Result struct {
	ExitCode        int             `json:"exitCode"`
	Output          json.RawMessage `json:"output,omitempty"`
	Error           string          `json:"error,omitempty"`
	CPUTimeMS       int64           `json:"cpuTimeMs"`
	PeakMemoryBytes int64           `json:"peakMemoryBytes"`
}

// FanOutCounts tallies how a fan-out's child jobs ended.
type FanOutCounts struct {
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	TimedOut  int `json:"timedOut"`
	Cancelled int `json:"cancelled"`
	Lost      int `json:"lost"`
}

// Total is the number of children counted.
func (c FanOutCounts) Total() int {
	return c.Succeeded + c.Failed + c.TimedOut + c.Cancelled + c.Lost
}

// targetSet is the part of a Target beyond a node id and a label map, as
// read models keep it in one column.
type targetSet struct {
	Requirements node.Selector `json:"requirements,omitempty"`
	Location     string        `json:"location,omitempty"`
	Every        bool          `json:"every,omitempty"`
}

// SetJSON encodes the requirements, location and every of the target; nil
// when it has none.
func (t Target) SetJSON() []byte {
	if len(t.Requirements) == 0 && t.Location == "" && !t.Every {
		return nil
	}
	b, _ := json.Marshal(targetSet{Requirements: t.Requirements, Location: t.Location, Every: t.Every})
	return b
}

// SetFromJSON reads what SetJSON wrote; empty leaves the target as it is.
func (t *Target) SetFromJSON(raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	var s targetSet
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	t.Requirements, t.Location, t.Every = s.Requirements, s.Location, s.Every
	return nil
}
