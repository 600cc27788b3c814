package resource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"time"
	"unicode"
	"unicode/utf8"

	"cairn/domain"
)

// Limits on what a resource carries.
const (
	MaxJSONBytes   = 1 << 20 // properties, outputs
	MaxErrorLength = 4096
)

var (
	idPattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	pluginPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	typePattern   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:/-]{0,127}$`)
)

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

func validatePlugin(p string) error {
	switch {
	case p == "":
		return invalid("plugin", "is required")
	case !pluginPattern.MatchString(p):
		return invalid("plugin", fmt.Sprintf("%q must be at most 63 characters of a-z, 0-9, '_', '-', starting with a letter", p))
	}
	return nil
}

func validateType(t string) error {
	switch {
	case t == "":
		return invalid("type", "is required")
	case !typePattern.MatchString(t):
		return invalid("type", fmt.Sprintf("%q must be at most 128 characters of letters, digits, '_', '.', ':', '/', '-', starting with a letter", t))
	}
	return nil
}

// validateDependsOn checks distinct ids that do not include the resource itself.
func validateDependsOn(self string, ids []string) error {
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		field := fmt.Sprintf("dependsOn[%d]", i)
		if err := validateID(field, id); err != nil {
			return err
		}
		if id == self {
			return invalid(field, "a resource cannot depend on itself")
		}
		if seen[id] {
			return invalid(field, fmt.Sprintf("%q is listed twice", id))
		}
		seen[id] = true
	}
	return nil
}

// validateJSON checks optional JSON; object says it must be a JSON object.
func validateJSON(field string, raw json.RawMessage, object bool) error {
	switch {
	case len(raw) == 0:
		return nil
	case len(raw) > MaxJSONBytes:
		return invalid(field, fmt.Sprintf("must be at most %d bytes", MaxJSONBytes))
	case !json.Valid(raw):
		return invalid(field, "must be valid JSON")
	case object && bytes.TrimLeft(raw, " \t\r\n")[0] != '{':
		return invalid(field, "must be a JSON object")
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
		panic("resource: canonical called on invalid JSON: " + err.Error())
	}
	return out
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
