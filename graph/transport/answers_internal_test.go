package transport

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"cairn/auth"
)

type fixedGeneration uint64

func (g fixedGeneration) Generation() uint64 { return uint64(g) }

// cacheableQuery is the context of a query the cache may keep, asked by a
// user.
func cacheableQuery() context.Context {
	return graphql.WithOperationContext(
		withSession(context.Background(), newSession(auth.Principal{Kind: auth.KindUser, ID: "u1"}, "", "")),
		&graphql.OperationContext{RawQuery: "{ nodes { id } }", Operation: &ast.OperationDefinition{
			Operation: ast.Query, SelectionSet: ast.SelectionSet{&ast.Field{Name: "nodes"}}}})
}

// operation is an operation whose responses, as the executor's for a query,
// are one answer (run's) and then nil.
func operation(run graphql.ResponseHandler) graphql.OperationHandler {
	return func(context.Context) graphql.ResponseHandler {
		answered := false
		return func(ctx context.Context) *graphql.Response {
			if answered {
				return nil
			}
			answered = true
			return run(ctx)
		}
	}
}

// A query answers once, whether its answer was kept or not: the transports
// that stream ask for responses until there are no more, and a kept answer
// once came back at each asking, thousands of times a second.
func TestAnswerCacheAnswersOnce(t *testing.T) {
	t.Parallel()
	ctx := cacheableQuery()
	c := newAnswerCache(fixedGeneration(7), 16)
	var runs atomic.Int32
	next := operation(func(context.Context) *graphql.Response {
		runs.Add(1)
		return &graphql.Response{Data: json.RawMessage(`{"nodes":[]}`)}
	})
	for _, ask := range []string{"kept", "served from the cache"} {
		responses := c.InterceptOperation(ctx, next)
		n := 0
		for ; n < 10 && responses(ctx) != nil; n++ {
		}
		if n != 1 {
			t.Errorf("the answer %s came %d times, want once", ask, n)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the query ran %d times, want once (the second answer from the cache)", n)
	}
}

// Callers that miss the same answer together run the query once: the others
// wait for the first and each get a response of their own. When the first
// caller's answer carries errors, which may be its own (a deadline), each
// other caller runs the query itself.
func TestAnswerCacheMissesTogetherRunOnce(t *testing.T) {
	t.Parallel()
	const callers = 20
	ctx := cacheableQuery()
	answer := json.RawMessage(`{"nodes":[]}`)
	for _, tc := range []struct {
		name       string
		firstFails bool
		wantErrors int
	}{
		{"the first answer is shared", false, 0},
		{"the first answer failed", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newAnswerCache(fixedGeneration(7), 16)
			var runs atomic.Int32
			release := make(chan struct{})
			next := func(context.Context) *graphql.Response {
				if runs.Add(1) == 1 {
					<-release
					if tc.firstFails {
						return &graphql.Response{Errors: gqlerror.List{gqlerror.Errorf("context deadline exceeded")}}
					}
				}
				return &graphql.Response{Data: answer}
			}
			got := make([]*graphql.Response, callers)
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() { got[i] = c.InterceptOperation(ctx, operation(next))(ctx) })
			}
			for runs.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // the others join the wait
			close(release)
			wg.Wait()
			failed := 0
			for i, r := range got {
				switch {
				case r == nil:
					t.Fatalf("caller %d got no response", i)
				case len(r.Errors) > 0:
					failed++
				case string(r.Data) != string(answer):
					t.Errorf("caller %d got %s, want %s", i, r.Data, answer)
				}
				for j := range i {
					if got[j] == r {
						t.Fatalf("callers %d and %d got the same response object", j, i)
					}
				}
			}
			if failed != tc.wantErrors {
				t.Errorf("%d callers got errors, want %d", failed, tc.wantErrors)
			}
			if n := runs.Load(); !tc.firstFails && n != 1 {
				t.Errorf("the query ran %d times for %d callers missing together, want once", n, callers)
			}
			if n := runs.Load(); tc.firstFails && n != callers {
				t.Errorf("the query ran %d times after the first answer failed, want once for each of %d callers", n, callers)
			}
		})
	}
}
