package job

import (
	"encoding/json"
	"time"
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

// Target says where a job runs: one node by id, or the nodes a label selector
// picks. Exactly one of NodeID and Selector is set.
type Target struct {
	NodeID      string            `json:"nodeId,omitempty"`
	Selector    map[string]string `json:"selector"`
	Mode        Mode              `json:"mode,omitempty"`        // with Selector only
	MaxParallel int               `json:"maxParallel,omitempty"` // with ModeAll only; 0 is no limit
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
