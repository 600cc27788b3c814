package node

import (
	"fmt"
	"regexp"
	"sort"

	"cairn/domain"
)

var (
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
		if !domain.Printable(v) {
			return &domain.ValidationError{Field: field, Reason: fmt.Sprintf("value of %q must be printable UTF-8", k)}
		}
	}
	return nil
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
