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

// Callers that miss the same answer together run the query once: the others
// wait for the first and each get a response of their own. When the first
// caller's answer carries errors, which may be its own (a deadline), each
// other caller runs the query itself.
func TestAnswerCacheMissesTogetherRunOnce(t *testing.T) {
	t.Parallel()
	const callers = 20
	ctx := graphql.WithOperationContext(
		withSession(context.Background(), newSession(auth.Principal{Kind: auth.KindUser, ID: "u1"}, "", "")),
		&graphql.OperationContext{RawQuery: "{ nodes { id } }", Operation: &ast.OperationDefinition{
			Operation: ast.Query, SelectionSet: ast.SelectionSet{&ast.Field{Name: "nodes"}}}})
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
				wg.Go(func() { got[i] = c.InterceptResponse(ctx, next) })
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
