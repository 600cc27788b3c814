// Package apierr is the API's errors: the codes clients branch on
// (extensions.code), an error type that carries one, and how any error of
// the layers below maps to a code and a message a user can act on.
package apierr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"cairn/auth"
	"cairn/domain"
	"cairn/eventstore"
	"cairn/graph/live"
)

// Error codes in extensions.code. Clients branch on these, never on messages.
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeNotFound        = "NOT_FOUND"
	CodeConflict        = "CONFLICT"
	CodeInvalidInput    = "INVALID_INPUT"
	CodeInternal        = "INTERNAL"
	// Refusals of a request that is not a GraphQL request at all, or too
	// big, or one too many for its caller.
	CodeBadRequest      = "BAD_REQUEST"
	CodePayloadTooLarge = "PAYLOAD_TOO_LARGE"
	CodeRateLimited     = "RATE_LIMITED"
	// CodeUnavailable: the server cannot reach what it needs (the
	// database) now; the same request may succeed when retried.
	CodeUnavailable = "UNAVAILABLE"
)

// IsCode reports whether c is one of the API's codes.
func IsCode(c string) bool {
	switch c {
	case CodeUnauthenticated, CodeForbidden, CodeNotFound, CodeConflict, CodeInvalidInput, CodeInternal,
		CodeBadRequest, CodePayloadTooLarge, CodeRateLimited, CodeUnavailable:
		return true
	}
	return false
}

// Error is an error the API reports with a code and a message meant for the
// user. Extensions adds machine-readable details (a field, a cursor).
type Error struct {
	Code       string
	Message    string
	Extensions map[string]any
	Cause      error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Cause }

// New is an error with a code and a message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unavailable is an UNAVAILABLE error: retry later.
func Unavailable(format string, args ...any) *Error {
	return New(CodeUnavailable, format, args...)
}

// Unauthenticated is an UNAUTHENTICATED error.
func Unauthenticated(format string, args ...any) *Error {
	return New(CodeUnauthenticated, format, args...)
}

// Forbidden is a FORBIDDEN error.
func Forbidden(format string, args ...any) *Error {
	return New(CodeForbidden, format, args...)
}

// NotFound says an entity does not exist (or is not the caller's to see).
func NotFound(entity, id string) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf("%s %q does not exist", entity, id),
		Cause: &domain.NotFoundError{Entity: entity, ID: id}}
}

// InvalidInput is an INVALID_INPUT error on an argument or input field
// (named in the message and in extensions.field).
func InvalidInput(field, format string, args ...any) *Error {
	e := New(CodeInvalidInput, format, args...)
	if field != "" {
		e.Message = field + ": " + e.Message
		e.Extensions = map[string]any{"field": field}
	}
	return e
}

// Classify maps an error to its code, message and extensions. CodeInternal
// means the error is none the API knows, and its message must not reach
// the client.
func Classify(err error) (code, msg string, ext map[string]any) {
	var api *Error
	var slow *live.SlowConsumerError
	var cursor *eventstore.MalformedCursorError
	var verr *domain.ValidationError
	switch {
	case errors.As(err, &api):
		return api.Code, api.Message, api.Extensions
	case errors.As(err, &slow):
		return CodeConflict, slow.Error(), map[string]any{"reason": "SLOW_CONSUMER", "cursor": slow.Resume.String()}
	case errors.As(err, &cursor):
		return CodeInvalidInput, cursor.Error(), nil
	case errors.Is(err, auth.ErrUnauthenticated):
		// The cause (which token, why) is for the log, not the client.
		return CodeUnauthenticated, auth.ErrUnauthenticated.Error(), nil
	case errors.Is(err, auth.ErrForbidden):
		return CodeForbidden, err.Error(), nil
	case errors.Is(err, live.ErrHubClosed):
		return CodeConflict, err.Error(), map[string]any{"reason": "SHUTTING_DOWN"}
	case errors.Is(err, domain.ErrNotFound):
		return CodeNotFound, err.Error(), nil
	case errors.Is(err, domain.ErrConflict):
		return CodeConflict, err.Error(), nil
	case errors.As(err, &verr):
		if verr.Field != "" {
			return CodeInvalidInput, err.Error(), map[string]any{"field": verr.Field}
		}
		return CodeInvalidInput, err.Error(), nil
	case errors.Is(err, domain.ErrInvalid):
		return CodeInvalidInput, err.Error(), nil
	case databaseAway(err):
		return CodeUnavailable, "the database cannot be reached now; retry the request (a retry with the same commandId is safe)",
			map[string]any{"retryable": true}
	}
	return CodeInternal, "", nil
}

// databaseAway reports errors that mean the database is unreachable or
// restarting rather than that the request was wrong: connection failures,
// and the server's shutdown and "cannot connect now" codes (class 08 and
// 57P).
func databaseAway(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false // the request's own time ran out: not the database's absence
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P")
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}
