package ocl

import (
	"fmt"
	"strconv"
	"strings"

	"cairn/domain"
)

// Problem is one thing wrong with a descriptor or with the values given for
// it. Path points at the offending field, e.g. "resources[2].properties.port";
// it is empty when the problem concerns the document as a whole.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// ValidationError carries every problem found, not just the first, so that a
// vendor can fix a descriptor in one round trip.
type ValidationError struct {
	Problems []Problem `json:"problems"`
}

func (e *ValidationError) Error() string {
	switch len(e.Problems) {
	case 0:
		return "invalid descriptor"
	case 1:
		return e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Is makes errors.Is(err, domain.ErrInvalid) true, so the API reports it as
// invalid input.
func (e *ValidationError) Is(target error) bool { return target == domain.ErrInvalid }

// SyntaxError reports input that is not well-formed JSON or YAML. Line and
// Column are 1-based and zero when the parser could not tell.
type SyntaxError struct {
	Format  string // "JSON" or "YAML"
	Line    int
	Column  int
	Message string
}

func (e *SyntaxError) Error() string {
	var b strings.Builder
	if e.Format != "" {
		b.WriteString(e.Format)
		b.WriteString(" ")
	}
	switch {
	case e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	case e.Format != "":
		b.WriteString("input: ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Is makes errors.Is(err, domain.ErrInvalid) true.
func (e *SyntaxError) Is(target error) bool { return target == domain.ErrInvalid }

// MissingOutputError is returned by ResolveProperties when a referenced
// resource has not (yet) produced the output. The orchestrator treats it as a
// bug in ordering or in the plugin, never as a user error.
type MissingOutputError struct {
	Path     string // where the reference sits in the properties
	Resource string
	Index    int // -1 when the resource has no count
	Key      string
}

func (e *MissingOutputError) Error() string {
	inst := instanceName(e.Resource, e.Index)
	msg := fmt.Sprintf("resource %q has no output %q", inst, e.Key)
	if e.Path != "" {
		return e.Path + ": " + msg
	}
	return msg
}

// problems accumulates Problems in the order checks find them.
type problems []Problem

func (ps *problems) add(p path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: string(p), Message: fmt.Sprintf(format, args...)})
}

// err returns nil when nothing was found, so callers can return it directly.
func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: dedupe(ps)}
}

func dedupe(ps []Problem) []Problem {
	seen := make(map[Problem]bool, len(ps))
	out := make([]Problem, 0, len(ps))
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// path renders field locations the way users read them:
// resources[2].properties.port, labels["app.kubernetes.io/name"].
type path string

func (p path) key(k string) path {
	if isPlainKey(k) {
		if p == "" {
			return path(k)
		}
		return p + "." + path(k)
	}
	return p + "[" + path(strconv.Quote(k)) + "]"
}

func (p path) index(i int) path {
	return p + "[" + path(strconv.Itoa(i)) + "]"
}

func isPlainKey(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		switch {
		case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		case i > 0 && (c == '-' || (c >= '0' && c <= '9')):
		default:
			return false
		}
	}
	return true
}
