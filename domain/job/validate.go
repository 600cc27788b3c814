package job

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
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
	idPattern          = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	actionPattern      = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
	interpreterPattern = regexp.MustCompile(`^[A-Za-z0-9/._+-]{1,255}$`)
	queuePattern       = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$`)
)

func validateSpec(s Spec) error {
	switch s.Kind {
	case KindAction:
		switch {
		case s.Action == "":
			return invalid("spec.action", "is required for an action job")
		case len(s.Action) > 128 || !actionPattern.MatchString(s.Action):
			return invalid("spec.action", fmt.Sprintf("%q must be dotted lower-case words, e.g. \"files.write\"", s.Action))
		case len(s.Args) > MaxPayloadBytes:
			return invalid("spec.args", fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes))
		case len(s.Args) > 0 && !json.Valid(s.Args):
			return invalid("spec.args", "must be valid JSON")
		case s.Exec != nil:
			return invalid("spec.exec", "must be empty for an action job")
		case s.Script != nil:
			return invalid("spec.script", "must be empty for an action job")
		}
	case KindExec:
		if err := onlyKindFields(s, "exec"); err != nil {
			return err
		}
		if s.Exec == nil || len(s.Exec.Argv) == 0 || s.Exec.Argv[0] == "" {
			return invalid("spec.exec.argv", "must name the program to run")
		}
		for i, arg := range s.Exec.Argv {
			if !utf8.ValidString(arg) || strings.ContainsRune(arg, 0) {
				return invalid(fmt.Sprintf("spec.exec.argv[%d]", i), "must be UTF-8 without NUL")
			}
		}
		for k, v := range s.Exec.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") || !utf8.ValidString(k) {
				return invalid("spec.exec.env", fmt.Sprintf("variable name %q must be non-empty UTF-8 without '=' or NUL", k))
			}
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				return invalid("spec.exec.env", fmt.Sprintf("value of %q must be UTF-8 without NUL", k))
			}
		}
		if s.Exec.Workdir != "" && !strings.HasPrefix(s.Exec.Workdir, "/") {
			return invalid("spec.exec.workdir", "must be an absolute path")
		}
		if !utf8.ValidString(s.Exec.Workdir) {
			return invalid("spec.exec.workdir", "must be UTF-8")
		}
		if !utf8.ValidString(s.Exec.Stdin) {
			return invalid("spec.exec.stdin", "must be UTF-8 text")
		}
		if len(s.Exec.Stdin) > MaxPayloadBytes {
			return invalid("spec.exec.stdin", fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes))
		}
	case KindScript:
		if err := onlyKindFields(s, "script"); err != nil {
			return err
		}
		switch {
		case s.Script == nil || s.Script.Interpreter == "":
			return invalid("spec.script.interpreter", "is required for a script job, e.g. \"sh\" or \"python3\"")
		case !interpreterPattern.MatchString(s.Script.Interpreter):
			return invalid("spec.script.interpreter", fmt.Sprintf("%q must be a program name or path", s.Script.Interpreter))
		case s.Script.Body == "":
			return invalid("spec.script.body", "is required for a script job")
		case !utf8.ValidString(s.Script.Body):
			return invalid("spec.script.body", "must be UTF-8")
		case len(s.Script.Body) > MaxPayloadBytes:
			return invalid("spec.script.body", fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes))
		}
	default:
		return invalid("spec.kind", fmt.Sprintf("%q must be one of action, exec, script", s.Kind))
	}
	return nil
}

// onlyKindFields refuses the fields that belong to other kinds.
func onlyKindFields(s Spec, kind string) error {
	switch {
	case s.Action != "":
		return invalid("spec.action", "must be empty for a "+kind+" job")
	case len(s.Args) > 0:
		return invalid("spec.args", "must be empty for a "+kind+" job")
	case kind != "exec" && s.Exec != nil:
		return invalid("spec.exec", "must be empty for a "+kind+" job")
	case kind != "script" && s.Script != nil:
		return invalid("spec.script", "must be empty for a "+kind+" job")
	}
	return nil
}

func validateTarget(t Target, child bool) error {
	switch {
	case t.NodeID == "" && len(t.Selector) == 0:
		return invalid("target", "needs a node id or a label selector")
	case t.NodeID != "" && len(t.Selector) > 0:
		return invalid("target", "takes a node id or a label selector, not both")
	case t.NodeID != "":
		if err := validateID("target.nodeId", t.NodeID); err != nil {
			return err
		}
		if t.Mode != "" {
			return invalid("target.mode", "applies to a label selector only")
		}
	default:
		if child {
			return invalid("target", "a fan-out's child runs on one node: give its node id")
		}
		if err := node.ValidateLabels("target.selector", t.Selector); err != nil {
			return err
		}
		if t.Mode != ModeAny && t.Mode != ModeAll {
			return invalid("target.mode", fmt.Sprintf("%q must be \"any\" or \"all\" with a label selector", t.Mode))
		}
	}
	switch {
	case t.MaxParallel < 0:
		return invalid("target.maxParallel", "must not be negative")
	case t.MaxParallel > 0 && t.Mode != ModeAll:
		return invalid("target.maxParallel", "applies to target mode \"all\" only")
	}
	return nil
}

func validateParent(parentID, jobID string) error {
	switch {
	case parentID == "":
		return nil
	case parentID == jobID:
		return invalid("parentId", "a job cannot be its own parent")
	}
	return validateID("parentId", parentID)
}

func validateDurations(timeout, grace time.Duration) error {
	switch {
	case timeout <= 0:
		return invalid("timeout", "must be positive")
	case grace < 0:
		return invalid("grace", "must not be negative")
	}
	return nil
}

func validateRetry(r RetryPolicy) error {
	switch {
	case r.Max < 0 || r.Max > MaxRetries:
		return invalid("retry.max", fmt.Sprintf("must be between 0 and %d", MaxRetries))
	case r.Backoff < 0 || r.Backoff > BackoffCap:
		return invalid("retry.backoff", fmt.Sprintf("must be between 0 and %s", BackoffCap))
	}
	return nil
}

func validateResult(r Result) error {
	switch {
	case r.CPUTimeMS < 0:
		return invalid("result.cpuTimeMs", "must not be negative")
	case r.PeakMemoryBytes < 0:
		return invalid("result.peakMemoryBytes", "must not be negative")
	case len(r.Output) > MaxPayloadBytes:
		return invalid("result.output", fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes))
	case len(r.Output) > 0 && !json.Valid(r.Output):
		return invalid("result.output", "must be valid JSON")
	}
	return validateText("result.error", r.Error, MaxPayloadBytes)
}

func validateQueue(q string) error {
	if q != "" && !queuePattern.MatchString(q) {
		return invalid("queue", fmt.Sprintf("%q must be at most 63 characters of a-z, 0-9, '-', '_', '.'", q))
	}
	return nil
}

func validateID(field, id string) error {
	if id == "" {
		return invalid(field, "is required")
	}
	if !idPattern.MatchString(id) {
		return invalid(field, fmt.Sprintf(
			"%q must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':', '-', starting with a letter or digit", id))
	}
	return nil
}

func validateAt(at time.Time) error {
	if at.IsZero() {
		return invalid("at", "is required")
	}
	return nil
}

func validateRequiredText(field, s string, maxLen int) error {
	if s == "" {
		return invalid(field, "is required")
	}
	return validateText(field, s, maxLen)
}

func validateText(field, s string, maxLen int) error {
	if len(s) > maxLen {
		return invalid(field, fmt.Sprintf("must be at most %d bytes", maxLen))
	}
	if !utf8.ValidString(s) {
		return invalid(field, "must be UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return invalid(field, "must not contain control characters")
		}
	}
	return nil
}

// canonical returns valid JSON as the event log stores it (compact, HTML
// characters escaped), so a decided event folds exactly like its stored copy.
func canonical(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	out, err := json.Marshal(raw)
	if err != nil {
		panic("job: canonical called on invalid JSON: " + err.Error())
	}
	return out
}

func invalid(field, reason string) error {
	return &domain.ValidationError{Field: field, Reason: reason}
}

// firstError returns the first failed check, in the order the command lists
// its fields.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
