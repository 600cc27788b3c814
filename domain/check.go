package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The checks every aggregate shares. Each returns a *ValidationError naming
// the field, or nil, so a decider lists its fields' checks in order and
// reports the first that fails (FirstError): a user fixes one thing at a
// time, in the order the command lists its fields.

// MaxIDLength is the longest id of any entity.
const MaxIDLength = 128

// Invalid is a validation error on field.
func Invalid(field, reason string) error {
	return &ValidationError{Field: field, Reason: reason}
}

// FirstError returns the first failed check.
func FirstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ValidateID checks an entity id: 1 to MaxIDLength characters of A-Z, a-z,
// 0-9, '.', '_', ':', '-', starting with a letter or digit.
func ValidateID(field, id string) error {
	return ValidateIDUpTo(field, id, MaxIDLength)
}

// ValidateIDUpTo is ValidateID for ids that must be shorter, because
// something is appended to them to make other ids.
func ValidateIDUpTo(field, id string, maxLen int) error {
	if id == "" {
		return Invalid(field, "is required")
	}
	if !isID(id, maxLen) {
		return Invalid(field, fmt.Sprintf(
			"%q must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_', ':', '-', starting with a letter or digit", id, maxLen))
	}
	return nil
}

func isID(id string, maxLen int) bool {
	if len(id) > maxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != ':' && c != '-') {
			return false
		}
	}
	return true
}

// ValidateOptionalID is ValidateID for an id that may be left out.
func ValidateOptionalID(field, id string) error {
	if id == "" {
		return nil
	}
	return ValidateID(field, id)
}

// ValidateIDs checks a list of distinct ids, naming the element at fault
// (field[i]).
func ValidateIDs(field string, ids []string) error {
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := ValidateID(f, id); err != nil {
			return err
		}
		if seen[id] {
			return Invalid(f, fmt.Sprintf("%q is listed twice", id))
		}
		seen[id] = true
	}
	return nil
}

// ValidateAt checks that a command carries the time it was decided at.
func ValidateAt(at time.Time) error {
	if at.IsZero() {
		return Invalid("at", "is required")
	}
	return nil
}

// ValidateText checks free text of at most maxLen bytes: UTF-8 without
// control characters other than newlines and tabs.
func ValidateText(field, s string, maxLen int) error {
	if len(s) > maxLen {
		return Invalid(field, fmt.Sprintf("must be at most %d bytes", maxLen))
	}
	if !utf8.ValidString(s) {
		return Invalid(field, "must be UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return Invalid(field, "must not contain control characters")
		}
	}
	return nil
}

// ValidateRequiredText is ValidateText for text that must be given.
func ValidateRequiredText(field, s string, maxLen int) error {
	if s == "" {
		return Invalid(field, "is required")
	}
	return ValidateText(field, s, maxLen)
}

// ValidateLine checks a value that shows on one line (a label, a fact): at
// most maxLen bytes of printable UTF-8, no control characters at all.
func ValidateLine(field, s string, maxLen int) error {
	if len(s) > maxLen {
		return Invalid(field, fmt.Sprintf("must be at most %d bytes", maxLen))
	}
	if !Printable(s) {
		return Invalid(field, "must be printable UTF-8")
	}
	return nil
}

// Printable reports whether s is UTF-8 without control characters.
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// ValidateName checks a display name: given, one line, no surrounding
// spaces, at most maxLen bytes.
func ValidateName(field, name string, maxLen int) error {
	switch {
	case name == "":
		return Invalid(field, "is required")
	case strings.TrimSpace(name) != name:
		return Invalid(field, "must not start or end with spaces")
	case strings.ContainsAny(name, "\n\t"):
		return Invalid(field, "must be one line")
	}
	return ValidateText(field, name, maxLen)
}

// ValidateJSON checks optional JSON of at most maxBytes; with object, it
// must be a JSON object.
func ValidateJSON(field string, raw json.RawMessage, maxBytes int, object bool) error {
	switch {
	case len(raw) == 0:
		return nil
	case len(raw) > maxBytes:
		return Invalid(field, fmt.Sprintf("must be at most %d bytes", maxBytes))
	case !json.Valid(raw):
		return Invalid(field, "must be valid JSON")
	case object && bytes.TrimLeft(raw, " \t\r\n")[0] != '{':
		return Invalid(field, "must be a JSON object")
	}
	return nil
}

// CanonicalJSON returns valid JSON as the event log stores it (compact,
// HTML characters escaped), so a decided event folds exactly like its
// stored copy. It panics on invalid JSON: validate first.
func CanonicalJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	out, err := json.Marshal(raw)
	if err != nil {
		panic("domain: CanonicalJSON called on invalid JSON: " + err.Error())
	}
	return out
}

// ValidateSecretHash checks the stored hash of a random secret (a token, a
// join token): a lower-case hex digest of 256 to 512 bits. The secrets are
// random, so a fast hash is enough.
func ValidateSecretHash(field, h string) error {
	switch {
	case h == "":
		return Invalid(field, "is required")
	case !isLowerHex(h) || len(h) < 64 || len(h) > 128:
		return Invalid(field, fmt.Sprintf("must be a lower-case hex digest of 64 to 128 characters, not %d characters", len(h)))
	}
	return nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Admit checks that a command addresses the loaded entity, that it exists,
// that the entity's table of allowed commands accepts the command in its
// status, and that the command has a time.
func Admit[S ~string](entity, loadedID string, status S, table map[S][]string, idField, id, command string, at time.Time) error {
	if status == "" {
		return &NotFoundError{Entity: entity, ID: id}
	}
	if id != loadedID {
		return Invalid(idField, fmt.Sprintf("is %q but the loaded %s is %q", id, entity, loadedID))
	}
	if !slices.Contains(table[status], command) {
		return &StateError{Entity: entity, ID: loadedID, Command: command, State: string(status)}
	}
	return ValidateAt(at)
}
