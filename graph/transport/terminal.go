package transport

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// terminalErrors lets a subscription end with an error on every transport:
// the resolver records the error (endWith) and closes its channel, and the
// client receives one last result carrying the error, then completion.
type terminalErrors struct {
	present graphql.ErrorPresenterFunc
	recover graphql.RecoverFunc
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = terminalErrors{}

func (terminalErrors) ExtensionName() string                          { return "TerminalErrors" }
func (terminalErrors) Validate(schema graphql.ExecutableSchema) error { return nil }

type terminalKey struct{}

// terminal is written by the subscription's goroutine and read by the
// transport's, which may give up on its own when the client goes away.
type terminal struct {
	mu  sync.Mutex
	err error
}

func (t *terminal) get() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (te terminalErrors) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		return next(ctx)
	}
	t := &terminal{}
	responses := next(context.WithValue(ctx, terminalKey{}, t))
	done := false
	return func(ctx context.Context) *graphql.Response {
		if done {
			return nil
		}
		resp := responses(ctx)
		if resp != nil {
			return resp
		}
		err := t.get()
		if err == nil {
			return nil
		}
		done = true
		ctx = graphql.WithResponseContext(ctx, te.present, te.recover)
		graphql.AddError(ctx, err)
		return &graphql.Response{Errors: graphql.GetErrors(ctx)}
	}
}

// EndWith records the error a subscription ends with; the caller then closes
// the subscription's channel.
func EndWith(ctx context.Context, err error) {
	if t, ok := ctx.Value(terminalKey{}).(*terminal); ok {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.err == nil {
			t.err = err
		}
	}
}
