package projections

import (
	"errors"
	"fmt"
	"strings"

	"cairn/domain"
	"cairn/eventstore"
)

// UnknownProjectionError names a projection that does not exist.
type UnknownProjectionError struct {
	Name  string
	Known []string
}

func (e *UnknownProjectionError) Error() string {
	return fmt.Sprintf("no projection is named %q: known projections are %s", e.Name, strings.Join(e.Known, ", "))
}

// Is makes errors.Is(err, domain.ErrNotFound) true.
func (e *UnknownProjectionError) Is(target error) bool { return target == domain.ErrNotFound }

// UnknownCursorError: a well-formed cursor that names no event of this log.
type UnknownCursorError struct{ Cursor eventstore.Cursor }

func (e *UnknownCursorError) Error() string {
	return fmt.Sprintf("cursor %s names no event of this log: use a cursor returned by this Cairn installation", e.Cursor)
}

// Is makes errors.Is(err, domain.ErrNotFound) true.
func (e *UnknownCursorError) Is(target error) bool { return target == domain.ErrNotFound }

// RegistrationError refuses a projection the runner cannot run.
type RegistrationError struct {
	Name   string
	Reason string
}

func (e *RegistrationError) Error() string {
	return fmt.Sprintf("projection %q: %s", e.Name, e.Reason)
}

// ErrNotRunning is returned by calls that need Run to have started.
var ErrNotRunning = errors.New("projections are not running yet: the runner has not finished setting up")

// errSuperseded stops a build's worker: its checkpoint row was retired or
// moved by someone else.
var errSuperseded = errors.New("projection build superseded")
