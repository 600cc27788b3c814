package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

	"cairn/domain"
)

// Limits on what a service carries.
const (
	MaxNameLength  = 128
	MaxJSONBytes   = 1 << 20 // variables, outputs
	MaxCauseLength = 4096
	MaxNoteLength  = 1024
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

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

// validateIDs checks a list of distinct ids.
func validateIDs(field string, ids []string) error {
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := validateID(f, id); err != nil {
			return err
		}
		if seen[id] {
			return invalid(f, fmt.Sprintf("%q is listed twice", id))
		}
		seen[id] = true
	}
	return nil
}

// validateRemaining checks the leftovers of a failed rollback or removal:
// at least one, each a resource of this service.
func (s Service) validateRemaining(remaining []string) error {
	if len(remaining) == 0 {
		return invalid("remaining", "must list the resources left behind; with none, the step succeeded")
	}
	if err := validateIDs("remaining", remaining); err != nil {
		return err
	}
	for i, id := range remaining {
		if !slices.Contains(s.ResourceIDs, id) {
			return invalid(fmt.Sprintf("remaining[%d]", i), fmt.Sprintf("%q is not a resource of service %q", id, s.ID))
		}
	}
	return nil
}

// validateObject checks optional JSON that must be an object when present.
func validateObject(field string, raw json.RawMessage) error {
	switch {
	case len(raw) == 0:
		return nil
	case len(raw) > MaxJSONBytes:
		return invalid(field, fmt.Sprintf("must be at most %d bytes", MaxJSONBytes))
	case !json.Valid(raw):
		return invalid(field, "must be valid JSON")
	case bytes.TrimLeft(raw, " \t\r\n")[0] != '{':
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
		panic("service: canonical called on invalid JSON: " + err.Error())
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
