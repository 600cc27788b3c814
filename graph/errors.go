package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/rs/zerolog"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

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
)

// Error is an error the API reports with a code and a message meant for the
// user. Extensions adds machine-readable details (a field, a cursor).
type Error struct {
	Code       string
	Message    string
	Extensions map[string]any
	cause      error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.cause }

func apiError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func unauthenticated(format string, args ...any) *Error {
	return apiError(CodeUnauthenticated, format, args...)
}

func forbidden(format string, args ...any) *Error {
	return apiError(CodeForbidden, format, args...)
}

func notFound(entity, id string) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf("%s %q does not exist", entity, id),
		cause: &domain.NotFoundError{Entity: entity, ID: id}}
}

func invalidInput(field, format string, args ...any) *Error {
	e := apiError(CodeInvalidInput, format, args...)
	if field != "" {
		e.Message = field + ": " + e.Message
		e.Extensions = map[string]any{"field": field}
	}
	return e
}

// gqlgen's own refusals (parse, validation, complexity) are the caller's
// input being wrong.
var inputCodes = map[string]bool{
	errcode.ValidationFailed:    true,
	errcode.ParseFailed:         true,
	"COMPLEXITY_LIMIT_EXCEEDED": true,
	"PERSISTED_QUERY_NOT_FOUND": true,
}

// presentError gives every error a code and a message a user can act on.
// Errors the API does not know are internal: they are logged with the
// request id and the client sees only that id.
func (s *Server) presentError(ctx context.Context, err error) *gqlerror.Error {
	var gerr *gqlerror.Error
	if errors.As(err, &gerr) && gerr.Err == nil {
		// Raised by gqlgen itself: keep its message and locations.
		out := *gerr
		code, _ := out.Extensions["code"].(string)
		ext := map[string]any{}
		for k, v := range out.Extensions {
			ext[k] = v
		}
		switch {
		case inputCodes[code] || code == CodeInvalidInput:
			ext["code"] = CodeInvalidInput
			if code != CodeInvalidInput {
				ext["reason"] = code
			}
		case isCode(code):
		default:
			return s.internal(ctx, err, out.Path)
		}
		out.Extensions = ext
		return &out
	}

	path := graphql.GetPath(ctx)
	if gerr != nil && gerr.Path != nil {
		path = gerr.Path
	}
	out := &gqlerror.Error{Path: path, Err: err}
	if fc := graphql.GetFieldContext(ctx); fc != nil && fc.Field.Field != nil {
		out.Locations = []gqlerror.Location{{Line: fc.Field.Position.Line, Column: fc.Field.Position.Column}}
	}
	code, msg, ext := classify(err)
	if code == CodeInternal {
		return s.internal(ctx, err, path)
	}
	out.Message = msg
	out.Extensions = map[string]any{"code": code}
	for k, v := range ext {
		out.Extensions[k] = v
	}
	return out
}

func isCode(c string) bool {
	switch c {
	case CodeUnauthenticated, CodeForbidden, CodeNotFound, CodeConflict, CodeInvalidInput, CodeInternal:
		return true
	}
	return false
}

// classify maps an error to its code, message and extensions; CodeInternal
// means the message must not reach the client.
func classify(err error) (code, msg string, ext map[string]any) {
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
	}
	return CodeInternal, "", nil
}

// internal logs err with the request id and hides it from the client.
func (s *Server) internal(ctx context.Context, err error, path ast.Path) *gqlerror.Error {
	id := s.requestID(ctx)
	log := zerolog.Ctx(ctx)
	if log.GetLevel() == zerolog.Disabled {
		log = &s.log
	}
	msg := "internal error: the server logged the cause"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("the request did not finish within %s: ask for less (a smaller first, fewer fields) or retry", s.cfg.RequestTimeout)
	}
	if id != "" {
		msg += " under request id " + id
	}
	log.Error().Err(err).Str("request_id", id).Interface("path", path).Msg("GraphQL request failed")
	ext := map[string]any{"code": CodeInternal}
	if id != "" {
		ext["requestId"] = id
	}
	return &gqlerror.Error{Message: msg, Path: path, Extensions: ext}
}

// recoverPanic turns a resolver's panic into an internal error.
func (s *Server) recoverPanic(ctx context.Context, v any) error {
	return fmt.Errorf("resolver panicked: %v", v)
}
