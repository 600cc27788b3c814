package transport

import (
	"cairn/eventstore"
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

type readModelsCursorKey struct{}

// ReadModelsCursor is the read models' position when the request began,
// taken for queries that select readModelsCursor.
func ReadModelsCursor(ctx context.Context) (eventstore.Cursor, bool) {
	c, ok := ctx.Value(readModelsCursorKey{}).(eventstore.Cursor)
	return c, ok
}

// readModelsMark takes the read models' position when a query that asks for
// readModelsCursor begins. The field cannot take it itself: gqlgen resolves
// a query's root fields concurrently, so it could read the position after
// its siblings read the read models and hand out a cursor beyond what they
// saw, and a subscription started after it would miss the changes between.
// The position comes from Deps.ReadModelsPosition.
type readModelsMark struct {
	position func(context.Context) (eventstore.Cursor, error)
}

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = readModelsMark{}

func (readModelsMark) ExtensionName() string                          { return "ReadModelsCursor" }
func (readModelsMark) Validate(schema graphql.ExecutableSchema) error { return nil }

func (m readModelsMark) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if !graphql.HasOperationContext(ctx) {
		return next(ctx)
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Query || !selectsRootField(oc, "readModelsCursor") {
		return next(ctx)
	}
	c, err := m.position(ctx)
	if err != nil {
		return graphql.ErrorResponse(ctx, "the server is still starting: %v", err)
	}
	return next(context.WithValue(ctx, readModelsCursorKey{}, c))
}

// selectsRootField reports whether the operation asks for a root field of
// that name, directly or through fragments, and not skipped by a directive.
func selectsRootField(oc *graphql.OperationContext, name string) bool {
	for _, f := range graphql.CollectFields(oc, oc.Operation.SelectionSet, []string{"Query"}) {
		if f.Name == name {
			return true
		}
	}
	return false
}
