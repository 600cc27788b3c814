package transport

import (
	"cairn/graph/apierr"
	"context"
	"fmt"
	"sync"

	"github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// depthLimit refuses operations nested deeper than max levels of selections
// (fragments expanded), before anything runs: a deep query multiplies work
// at each level. Introspection fields are not counted; introspection is
// switched on or off as a whole.
type depthLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

func (depthLimit) ExtensionName() string                          { return "DepthLimit" }
func (depthLimit) Validate(schema graphql.ExecutableSchema) error { return nil }

func (d depthLimit) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	depth := selectionDepth(oc.Operation.SelectionSet, map[string]bool{})
	if depth <= d.max {
		return nil
	}
	return &gqlerror.Error{
		Message: fmt.Sprintf("the operation is nested %d levels deep; at most %d are allowed: ask for fewer nested fields, or page with a second query", depth, d.max),
		Extensions: map[string]any{
			"code": apierr.CodeInvalidInput, "reason": "DEPTH_LIMIT_EXCEEDED", "depth": depth, "limit": d.max,
		},
	}
}

// selectionDepth is the deepest chain of fields under set. inFragment guards
// against fragment cycles (validation refuses them, but this runs on whatever
// it is given).
func selectionDepth(set ast.SelectionSet, inFragment map[string]bool) int {
	deepest := 0
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			if len(s.Name) > 1 && s.Name[:2] == "__" {
				continue
			}
			d = 1 + selectionDepth(s.SelectionSet, inFragment)
		case *ast.InlineFragment:
			d = selectionDepth(s.SelectionSet, inFragment)
		case *ast.FragmentSpread:
			if s.Definition == nil || inFragment[s.Name] {
				continue
			}
			inFragment[s.Name] = true
			d = selectionDepth(s.Definition.SelectionSet, inFragment)
			delete(inFragment, s.Name)
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// weighted makes a connection's selection count once per requested element:
// nodes(first: 500) { jobs(first: 500) { ... } } is 250,000 jobs of work, and
// the complexity limit should see it that way.
type weighted struct{ graphql.ExecutableSchema }

// ownQuery are the fields that read with queries of their own for each
// object they are asked on, instead of through the batching loaders
// (loaders.go; their resolvers say why). Each call costs this much on top of
// its selection, so asking for them on every row of a long list is refused
// before it runs: nodes(first: 500) { ... statistics } is 500 reads.
var ownQuery = map[string]int{
	"Node.statistics": 20,
	"Job.log":         20,
}

func (w weighted) Complexity(ctx context.Context, typeName, field string, childComplexity int, args map[string]any) (int, bool) {
	if c, ok := w.ExecutableSchema.Complexity(ctx, typeName, field, childComplexity, args); ok {
		return c, ok
	}
	n := 1
	for _, key := range []string{"first", "maxPoints"} {
		if v, ok := toInt(args[key]); ok && v > 0 {
			n = v
			break
		}
	}
	c := 1 + ownQuery[typeName+"."+field] + childComplexity*n
	if c < 0 || c > 1<<30 { // overflow, or absurd: clamp so the limit refuses it
		c = 1 << 30
	}
	return c, true
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case int32:
		return int(n), true
	case float64:
		return int(n), true
	}
	return 0, false
}

// complexityLimit refuses operations whose cost (see weighted) exceeds max,
// before anything runs.
type complexityLimit struct {
	max int
	es  graphql.ExecutableSchema
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = (*complexityLimit)(nil)

func (*complexityLimit) ExtensionName() string { return "ComplexityLimit" }

func (c *complexityLimit) Validate(schema graphql.ExecutableSchema) error {
	c.es = schema
	return nil
}

func (c *complexityLimit) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	cost := complexity.Calculate(ctx, c.es, oc.Operation, oc.Variables)
	if cost <= c.max {
		return nil
	}
	return &gqlerror.Error{
		Message: fmt.Sprintf("the operation's complexity is %d; at most %d is allowed: ask for fewer fields or smaller pages (first)", cost, c.max),
		Extensions: map[string]any{
			"code": apierr.CodeInvalidInput, "reason": "COMPLEXITY_LIMIT_EXCEEDED", "complexity": cost, "limit": c.max,
		},
	}
}

// introspection allows __schema and __type (gqlgen refuses them unless an
// extension allows them).
type introspection struct{}

func (introspection) ExtensionName() string                          { return "Introspection" }
func (introspection) Validate(schema graphql.ExecutableSchema) error { return nil }
func (introspection) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	oc.DisableIntrospection = false
	return nil
}

// queryCache keeps parsed queries, bounded: when full it starts afresh,
// which costs a re-parse of the queries in use and nothing else.
type queryCache struct {
	mu  sync.Mutex
	max int
	m   map[string]*ast.QueryDocument
}

func newQueryCache(max int) *queryCache {
	return &queryCache{max: max, m: map[string]*ast.QueryDocument{}}
}

func (c *queryCache) Get(_ context.Context, key string) (*ast.QueryDocument, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *queryCache) Add(_ context.Context, key string, v *ast.QueryDocument) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[key] = v
}
