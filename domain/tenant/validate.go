package tenant

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"cairn/domain"
)

// Limits on names and free text.
const (
	MaxNameLength        = 128
	MaxDescriptionLength = 1024
	MaxReasonLength      = 1024
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

// validateName checks a one-line display name.
func validateName(name string) error {
	switch {
	case name == "":
		return invalid("name", "is required")
	case strings.TrimSpace(name) != name:
		return invalid("name", "must not start or end with spaces")
	case strings.ContainsAny(name, "\n\t"):
		return invalid("name", "must be one line")
	}
	return validateText("name", name, MaxNameLength)
}

func validateAt(at time.Time) error {
	if at.IsZero() {
		return invalid("at", "is required")
	}
	return nil
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

// admit checks that a command addresses the loaded entity, that it exists,
// that the entity's allowed-commands table accepts the command in its status,
// and that the command has a time. The aggregates of this package share it.
func admit[S ~string](entity, loadedID string, status S, table map[S][]string, idField, id, command string, at time.Time) error {
	if status == "" {
		return &domain.NotFoundError{Entity: entity, ID: id}
	}
	if id != loadedID {
		return invalid(idField, fmt.Sprintf("is %q but the loaded %s is %q", id, entity, loadedID))
	}
	if !slices.Contains(table[status], command) {
		return &domain.StateError{Entity: entity, ID: loadedID, Command: command, State: string(status)}
	}
	return validateAt(at)
}
