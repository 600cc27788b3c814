package jointoken

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"cairn/domain"
)

// MaxReasonLength bounds free-text reasons.
const MaxReasonLength = 1024

var (
	idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	// secretHashPattern accepts a hex digest of 256 to 512 bits: the secrets
	// are random, so a fast hash is enough.
	secretHashPattern = regexp.MustCompile(`^[0-9a-f]{64,128}$`)
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

func validateOptionalID(field, id string) error {
	if id == "" {
		return nil
	}
	return validateID(field, id)
}

func validateSecretHash(h string) error {
	switch {
	case h == "":
		return invalid("secretHash", "is required")
	case !secretHashPattern.MatchString(h):
		return invalid("secretHash", fmt.Sprintf("must be a lower-case hex digest of 64 to 128 characters, not %d characters", len(h)))
	}
	return nil
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

// admit checks that a command addresses the loaded entity, that it exists,
// that the entity's allowed-commands table accepts the command in its status,
// and that the command has a time.
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

func invalid(field, reason string) error {
	return &domain.ValidationError{Field: field, Reason: reason}
}

func quote(s string) string { return strconv.Quote(s) }

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
