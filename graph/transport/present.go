package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/rs/zerolog"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"cairn/graph/apierr"
)

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
func (h *Handler) presentError(ctx context.Context, err error) *gqlerror.Error {
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
		case inputCodes[code] || code == apierr.CodeInvalidInput:
			ext["code"] = apierr.CodeInvalidInput
			if code != apierr.CodeInvalidInput {
				ext["reason"] = code
			}
		case apierr.IsCode(code):
		default:
			return h.internal(ctx, err, out.Path)
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
	// A resolver's error arrives wrapped by gqlgen, whose Error() prefixes
	// the location and path ("input:1:12: createService ..."): people read
	// the message alone; the path and locations are fields of their own.
	inner := err
	if gerr != nil && gerr.Err != nil {
		inner = gerr.Err
	}
	code, msg, ext := apierr.Classify(inner)
	if code == apierr.CodeInternal {
		return h.internal(ctx, err, path)
	}
	out.Message = msg
	out.Extensions = map[string]any{"code": code}
	for k, v := range ext {
		out.Extensions[k] = v
	}
	return out
}

// internal logs err with the request id and hides it from the client.
func (h *Handler) internal(ctx context.Context, err error, path ast.Path) *gqlerror.Error {
	id := h.requestID(ctx)
	// The request's own logger carries its id already.
	log := zerolog.Ctx(ctx)
	if log.GetLevel() == zerolog.Disabled {
		l := h.log.With().Str("request_id", id).Logger()
		log = &l
	}
	msg := "internal error: the server logged the cause"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("the request did not finish within %s: ask for less (a smaller first, fewer fields) or retry", h.opts.RequestTimeout)
	}
	if id != "" {
		msg += " under request id " + id
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// The caller left before the answer (an agent's long poll ended by
		// its reconnect, say): nothing failed here.
		log.Debug().Err(err).Interface("path", path).Msg("the caller left before the answer")
	} else {
		log.Error().Err(err).Interface("path", path).Msg("GraphQL request failed")
	}
	ext := map[string]any{"code": apierr.CodeInternal}
	if id != "" {
		ext["requestId"] = id
	}
	return &gqlerror.Error{Message: msg, Path: path, Extensions: ext}
}

// recoverPanic turns a resolver's panic into an internal error.
func (h *Handler) recoverPanic(ctx context.Context, v any) error {
	return fmt.Errorf("resolver panicked: %v", v)
}
