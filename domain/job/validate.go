package job

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"cairn/domain"
	"cairn/domain/node"
)

// Limits on what a job may carry. Bigger payloads belong in files the job fetches.
const (
	MaxRetries      = 100
	BackoffCap      = time.Hour
	MaxPayloadBytes = 1 << 20 // per action args, script body or stdin
	MaxReasonLength = 1024
)

var (
	actionPattern      = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
	interpreterPattern = regexp.MustCompile(`^[A-Za-z0-9/._+-]{1,255}$`)
	queuePattern       = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$`)
)

func validateSpec(s Spec) error {
	switch s.Kind {
	case KindAction:
		switch {
		case s.Action == "":
			return domain.Invalid("spec.action", "is required for an action job")
		case len(s.Action) > 128 || !actionPattern.MatchString(s.Action):
			return domain.Invalid("spec.action", fmt.Sprintf("%q must be dotted lower-case words, e.g. \"files.write\"", s.Action))
		case len(s.Args) > MaxPayloadBytes:
			return domain.Invalid("spec.args", fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes))
		case len(s.Args) > 0 && !json.Valid(s.Args):
			return domain.Invalid("spec.args", "must be valid JSON")
		case len(s.SecretArgs) > MaxPayloadBytes:
			return domain.Invalid("spec.secretArgs", fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes))
		case len(s.SecretArgs) > 0 && !json.Valid(s.SecretArgs):
			return domain.Invalid("spec.secretArgs", "must be valid JSON")
		case s.Exec != nil:
			return domain.Invalid("spec.exec", "must be empty for an action job")
		case s.Script != nil:
			return domain.Invalid("spec.script", "must be empty for an action job")
		}
	case KindExec:
		if err := onlyKindFields(s, "exec"); err != nil {
			return err
		}
		if s.Exec == nil || len(s.Exec.Argv) == 0 || s.Exec.Argv[0] == "" {
			return domain.Invalid("spec.exec.argv", "must name the program to run")
		}
		for i, arg := range s.Exec.Argv {
			if !utf8.ValidString(arg) || strings.ContainsRune(arg, 0) {
				return domain.Invalid(fmt.Sprintf("spec.exec.argv[%d]", i), "must be UTF-8 without NUL")
			}
		}
		for k, v := range s.Exec.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") || !utf8.ValidString(k) {
				return domain.Invalid("spec.exec.env", fmt.Sprintf("variable name %q must be non-empty UTF-8 without '=' or NUL", k))
			}
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				return domain.Invalid("spec.exec.env", fmt.Sprintf("value of %q must be UTF-8 without NUL", k))
			}
		}
		for k, v := range s.Exec.SecretEnv {
			if k == "" || strings.ContainsAny(k, "=\x00") || !utf8.ValidString(k) {
				return domain.Invalid("spec.exec.secretEnv", fmt.Sprintf("variable name %q must be non-empty UTF-8 without '=' or NUL", k))
			}
			if _, both := s.Exec.Env[k]; both {
				return domain.Invalid("spec.exec.secretEnv", fmt.Sprintf("%q is set in env too: a variable is secret or not", k))
			}
			if !json.Valid(v) || len(v) > MaxPayloadBytes {
				return domain.Invalid("spec.exec.secretEnv", fmt.Sprintf("value of %q must be a sealed value", k))
			}
		}
		if s.Exec.Workdir != "" && !strings.HasPrefix(s.Exec.Workdir, "/") {
			return domain.Invalid("spec.exec.workdir", "must be an absolute path")
		}
		if !utf8.ValidString(s.Exec.Workdir) {
			return domain.Invalid("spec.exec.workdir", "must be UTF-8")
		}
		if !utf8.ValidString(s.Exec.Stdin) {
			return domain.Invalid("spec.exec.stdin", "must be UTF-8 text")
		}
		if len(s.Exec.Stdin) > MaxPayloadBytes {
			return domain.Invalid("spec.exec.stdin", fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes))
		}
	case KindScript:
		if err := onlyKindFields(s, "script"); err != nil {
			return err
		}
		switch {
		case s.Script == nil || s.Script.Interpreter == "":
			return domain.Invalid("spec.script.interpreter", "is required for a script job, e.g. \"sh\" or \"python3\"")
		case !interpreterPattern.MatchString(s.Script.Interpreter):
			return domain.Invalid("spec.script.interpreter", fmt.Sprintf("%q must be a program name or path", s.Script.Interpreter))
		case s.Script.Body == "":
			return domain.Invalid("spec.script.body", "is required for a script job")
		case !utf8.ValidString(s.Script.Body):
			return domain.Invalid("spec.script.body", "must be UTF-8")
		case len(s.Script.Body) > MaxPayloadBytes:
			return domain.Invalid("spec.script.body", fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes))
		}
	default:
		return domain.Invalid("spec.kind", fmt.Sprintf("%q must be one of action, exec, script", s.Kind))
	}
	return nil
}

// onlyKindFields refuses the fields that belong to other kinds.
func onlyKindFields(s Spec, kind string) error {
	switch {
	case s.Action != "":
		return domain.Invalid("spec.action", "must be empty for a "+kind+" job")
	case len(s.Args) > 0:
		return domain.Invalid("spec.args", "must be empty for a "+kind+" job")
	case len(s.SecretArgs) > 0:
		return domain.Invalid("spec.secretArgs", "must be empty for a "+kind+" job")
	case kind != "exec" && s.Exec != nil:
		return domain.Invalid("spec.exec", "must be empty for a "+kind+" job")
	case kind != "script" && s.Script != nil:
		return domain.Invalid("spec.script", "must be empty for a "+kind+" job")
	}
	return nil
}

func validateTarget(t Target, child bool) error {
	set := len(t.Selector) > 0 || len(t.Requirements) > 0 || t.Location != "" || t.Every
	switch {
	case t.NodeID == "" && !set:
		return domain.Invalid("target", "needs a node id, or a set of nodes: every node, a location, a label selector or requirements")
	case t.NodeID != "" && set:
		return domain.Invalid("target", "takes a node id or a set of nodes, not both")
	case t.NodeID != "":
		if err := domain.ValidateID("target.nodeId", t.NodeID); err != nil {
			return err
		}
		if t.Mode != "" {
			return domain.Invalid("target.mode", "applies to a set of nodes only")
		}
	default:
		if child {
			return domain.Invalid("target", "a fan-out's child runs on one node: give its node id")
		}
		if t.Every && (len(t.Selector) > 0 || len(t.Requirements) > 0 || t.Location != "") {
			return domain.Invalid("target.every", "selects every node: leave out the selector, requirements and location, or every")
		}
		if err := domain.FirstError(
			node.ValidateLabels("target.selector", t.Selector),
			t.Requirements.Validate("target.requirements"),
			domain.ValidateOptionalID("target.location", t.Location),
		); err != nil {
			return err
		}
		if t.Mode != ModeAny && t.Mode != ModeAll {
			return domain.Invalid("target.mode", fmt.Sprintf("%q must be \"any\" or \"all\" with a set of nodes", t.Mode))
		}
	}
	switch {
	case t.MaxParallel < 0:
		return domain.Invalid("target.maxParallel", "must not be negative")
	case t.MaxParallel > 0 && t.Mode != ModeAll:
		return domain.Invalid("target.maxParallel", "applies to target mode \"all\" only")
	}
	return nil
}

func validateParent(parentID, jobID string) error {
	switch {
	case parentID == "":
		return nil
	case parentID == jobID:
		return domain.Invalid("parentId", "a job cannot be its own parent")
	}
	return domain.ValidateID("parentId", parentID)
}

func validateDurations(timeout, grace time.Duration) error {
	switch {
	case timeout <= 0:
		return domain.Invalid("timeout", "must be positive")
	case grace < 0:
		return domain.Invalid("grace", "must not be negative")
	}
	return nil
}

func validateRetry(r RetryPolicy) error {
	switch {
	case r.Max < 0 || r.Max > MaxRetries:
		return domain.Invalid("retry.max", fmt.Sprintf("must be between 0 and %d", MaxRetries))
	case r.Backoff < 0 || r.Backoff > BackoffCap:
		return domain.Invalid("retry.backoff", fmt.Sprintf("must be between 0 and %s", BackoffCap))
	}
	return nil
}

func validateResult(r Result) error {
	switch {
	case r.CPUTimeMS < 0:
		return domain.Invalid("result.cpuTimeMs", "must not be negative")
	case r.PeakMemoryBytes < 0:
		return domain.Invalid("result.peakMemoryBytes", "must not be negative")
	case len(r.Output) > MaxPayloadBytes:
		return domain.Invalid("result.output", fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes))
	case len(r.Output) > 0 && !json.Valid(r.Output):
		return domain.Invalid("result.output", "must be valid JSON")
	}
	return domain.ValidateText("result.error", r.Error, MaxPayloadBytes)
}

func validateQueue(q string) error {
	if q != "" && !queuePattern.MatchString(q) {
		return domain.Invalid("queue", fmt.Sprintf("%q must be at most 63 characters of a-z, 0-9, '-', '_', '.'", q))
	}
	return nil
}
