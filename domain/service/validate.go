package service

import (
	"fmt"
	"slices"

	"cairn/domain"
)

// Limits on what a service carries.
const (
	MaxNameLength  = 128
	MaxJSONBytes   = 1 << 20 // variables, outputs
	MaxCauseLength = 4096
	MaxNoteLength  = 1024
)

// validateRemaining checks the leftovers of a failed rollback or removal:
// at least one, each a resource of this service.
func (s Service) validateRemaining(remaining []string) error {
	if len(remaining) == 0 {
		return domain.Invalid("remaining", "must list the resources left behind; with none, the step succeeded")
	}
	if err := domain.ValidateIDs("remaining", remaining); err != nil {
		return err
	}
	for i, id := range remaining {
		if !slices.Contains(s.ResourceIDs, id) {
			return domain.Invalid(fmt.Sprintf("remaining[%d]", i), fmt.Sprintf("%q is not a resource of service %q", id, s.ID))
		}
	}
	return nil
}
