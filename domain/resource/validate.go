package resource

import (
	"fmt"
	"regexp"

	"cairn/domain"
)

// Limits on what a resource carries.
const (
	MaxJSONBytes   = 1 << 20 // properties, outputs
	MaxErrorLength = 4096
)

var (
	pluginPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	typePattern   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:/-]{0,127}$`)
)

func validatePlugin(p string) error {
	switch {
	case p == "":
		return domain.Invalid("plugin", "is required")
	case !pluginPattern.MatchString(p):
		return domain.Invalid("plugin", fmt.Sprintf("%q must be at most 63 characters of a-z, 0-9, '_', '-', starting with a letter", p))
	}
	return nil
}

func validateType(t string) error {
	switch {
	case t == "":
		return domain.Invalid("type", "is required")
	case !typePattern.MatchString(t):
		return domain.Invalid("type", fmt.Sprintf("%q must be at most 128 characters of letters, digits, '_', '.', ':', '/', '-', starting with a letter", t))
	}
	return nil
}

// validateDependsOn checks distinct ids that do not include the resource itself.
func validateDependsOn(self string, ids []string) error {
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		field := fmt.Sprintf("dependsOn[%d]", i)
		if err := domain.ValidateID(field, id); err != nil {
			return err
		}
		if id == self {
			return domain.Invalid(field, "a resource cannot depend on itself")
		}
		if seen[id] {
			return domain.Invalid(field, fmt.Sprintf("%q is listed twice", id))
		}
		seen[id] = true
	}
	return nil
}
