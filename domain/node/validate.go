package node

import (
	"fmt"
	"regexp"
	"sort"
	"time"
	"unicode"
	"unicode/utf8"

	"cairn/domain"
)

var (
	idPattern       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	hostnamePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)
	labelKeyPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_./]*[a-z0-9])?$`)
)

// MaxLabelLength bounds label keys and values.
const MaxLabelLength = 63

// ValidateLabels checks label keys and values; field names the input in errors.
// Jobs use it for their label selectors, since those select node labels.
func ValidateLabels(field string, labels map[string]string) error {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the same key first every time
	for _, k := range keys {
		if len(k) > MaxLabelLength || !labelKeyPattern.MatchString(k) {
			return &domain.ValidationError{Field: field, Reason: fmt.Sprintf(
				"key %q must be at most %d characters of a-z, 0-9, '-', '_', '.', '/', starting and ending with a letter or digit",
				k, MaxLabelLength)}
		}
		v := labels[k]
		if len(v) > MaxLabelLength {
			return &domain.ValidationError{Field: field, Reason: fmt.Sprintf("value of %q must be at most %d bytes", k, MaxLabelLength)}
		}
		if !printable(v) {
			return &domain.ValidationError{Field: field, Reason: fmt.Sprintf("value of %q must be printable UTF-8", k)}
		}
	}
	return nil
}

func validateID(field, id string) error {
	if id == "" {
		return &domain.ValidationError{Field: field, Reason: "is required"}
	}
	if !idPattern.MatchString(id) {
		return &domain.ValidationError{Field: field, Reason: fmt.Sprintf(
			"%q must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':', '-', starting with a letter or digit", id)}
	}
	return nil
}

func validateOptionalID(field, id string) error {
	if id == "" {
		return nil
	}
	return validateID(field, id)
}

func validateHostname(h string) error {
	if h == "" {
		return &domain.ValidationError{Field: "hostname", Reason: "is required"}
	}
	if len(h) > 253 || !hostnamePattern.MatchString(h) {
		return &domain.ValidationError{Field: "hostname", Reason: fmt.Sprintf("%q is not a valid DNS host name", h)}
	}
	return nil
}

func validateAt(at time.Time) error {
	if at.IsZero() {
		return &domain.ValidationError{Field: "at", Reason: "is required"}
	}
	return nil
}

func validateText(field, s string, maxLen int) error {
	if len(s) > maxLen {
		return &domain.ValidationError{Field: field, Reason: fmt.Sprintf("must be at most %d bytes", maxLen)}
	}
	if !printable(s) {
		return &domain.ValidationError{Field: field, Reason: "must be printable UTF-8"}
	}
	return nil
}

func printable(s string) bool {
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

// firstError returns the first failed check, so a user fixes one thing at a time
// in the order the command lists its fields.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
