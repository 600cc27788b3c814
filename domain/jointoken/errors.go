package jointoken

import (
	"fmt"
	"time"

	"cairn/domain"
)

// UsedError refuses a join token that already enrolled a node: join tokens
// are single-use, so a second agent cannot enroll with a copy.
type UsedError struct {
	TokenID string
	NodeID  string // the node it enrolled
}

func (e *UsedError) Error() string {
	return fmt.Sprintf("join token %q was already used to enroll node %q; ask an operator for a new join token", e.TokenID, e.NodeID)
}

// Is makes errors.Is(err, domain.ErrConflict) true.
func (e *UsedError) Is(target error) bool { return target == domain.ErrConflict }

// ExpiredError refuses a join token past its expiry.
type ExpiredError struct {
	TokenID   string
	ExpiredAt time.Time
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("join token %q expired at %s; ask an operator for a new join token", e.TokenID, e.ExpiredAt.Format(time.RFC3339))
}

// Is makes errors.Is(err, domain.ErrConflict) true.
func (e *ExpiredError) Is(target error) bool { return target == domain.ErrConflict }
