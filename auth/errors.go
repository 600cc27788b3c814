package auth

import (
	"errors"
	"fmt"
)

// ErrUnauthenticated is what a client is told about any token that does not
// authenticate: whether it was malformed, unknown, expired or revoked stays
// in the server's log, so a guesser learns nothing.
var ErrUnauthenticated = errors.New("unauthenticated: the token is missing, malformed, expired or revoked; sign in again or ask for a new token")

// ErrForbidden is the kind of every *ForbiddenError.
var ErrForbidden = errors.New("forbidden")

// UnauthenticatedError says, for the server's log, why a token did not
// authenticate. Its Is makes errors.Is(err, ErrUnauthenticated) true; show
// clients ErrUnauthenticated's message, not this one.
type UnauthenticatedError struct {
	TokenID string // "" when the token did not parse
	Reason  string
}

func (e *UnauthenticatedError) Error() string {
	if e.TokenID == "" {
		return "unauthenticated: " + e.Reason
	}
	return fmt.Sprintf("unauthenticated: token %q: %s", e.TokenID, e.Reason)
}

// Is makes errors.Is(err, ErrUnauthenticated) true.
func (e *UnauthenticatedError) Is(target error) bool { return target == ErrUnauthenticated }

// ForbiddenError refuses an action outside the principal's role or scope.
// Its message is safe to show the principal: it names their own role and
// the action they tried.
type ForbiddenError struct {
	Role   Role
	Action Action
	Reason string
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("forbidden: role %s may not %s: %s", e.Role, e.Action, e.Reason)
}

// Is makes errors.Is(err, ErrForbidden) true.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }
