package domain

import (
	"errors"
	"fmt"
)

// Sentinel kinds that adapters branch on (the API maps them to error codes).
var (
	// ErrConflict: the command is not allowed in the entity's current state.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the command's input is malformed or breaks a rule.
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound: the entity the command addresses does not exist.
	ErrNotFound = errors.New("not found")
)

// StateError refuses a command that the entity's state forbids. It names the
// entity, the command and the state so a user knows what to do next.
type StateError struct {
	Entity  string // "node", "job", "service", ...
	ID      string
	Command string // "drain", "cancel", ...
	State   string // the current state, e.g. "decommissioned"
}

func (e *StateError) Error() string {
	return fmt.Sprintf("cannot %s %s %q: it is %s", e.Command, e.Entity, e.ID, e.State)
}

// Is makes errors.Is(err, ErrConflict) true for state errors.
func (e *StateError) Is(target error) bool { return target == ErrConflict }

// IDTakenError refuses a caller-chosen id that an object of another kind
// already has: ids are unique across kinds, so any id names one object.
type IDTakenError struct {
	Entity  string // the kind being created
	ID      string
	TakenBy string // the kind that has the id
}

func (e *IDTakenError) Error() string {
	return fmt.Sprintf("cannot create %s %q: a %s already has that id, and ids are unique across every kind of object; choose another id", e.Entity, e.ID, e.TakenBy)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *IDTakenError) Is(target error) bool { return target == ErrConflict }

// ValidationError reports a command input that breaks a rule.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true for validation errors.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// NotFoundError reports a command addressed to an entity that does not exist.
type NotFoundError struct {
	Entity string
	ID     string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %q does not exist", e.Entity, e.ID)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Reason is a validation error's reason without its field (for a caller
// that names the field its own way), or any other error's message.
func Reason(err error) string {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	return err.Error()
}
