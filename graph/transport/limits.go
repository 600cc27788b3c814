package transport

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// weighted makes a connection's selection count once per requested element:
// nodes(first: 500) { jobs(first: 500) { ... } } is 250,000 jobs of work, and
// the complexity limit should see it that way.
type weighted struct{ graphql.ExecutableSchema }

// ownQuery are the fields that read with queries of their own for each
// object they are asked on, instead of through the batching loaders
// (loaders.go; their resolvers say why). Each call costs this much on top of
// its selection, so asking for them on every row of a long list is refused
// before it runs: nodes(first: 500) { ... statistics } is 500 reads. A
// location's capacity reads its nodes and allocations.
var ownQuery = map[string]int{
	"ServerNode.statistics": 20,
	"Job.log":               20,
	"Location.capacity":     20,
}

// defaultPage is what a connection returns when asked with neither first
// nor last; the API's lists default to 50 (docs/api.md).
var defaultPage = map[string]int{"Query.events": 100}

const defaultListPage = 50

func (w weighted) Complexity(ctx context.Context, typeName, field string, childComplexity int, args map[string]any) (int, bool) {
	if c, ok := w.ExecutableSchema.Complexity(ctx, typeName, field, childComplexity, args); ok {
		return c, ok
	}
	n := w.elements(typeName, field, args)
	c := 1 + ownQuery[typeName+"."+field] + childComplexity*n
	if c < 0 || c > 1<<30 { // overflow, or absurd: clamp so the limit refuses it
		c = 1 << 30
	}
	return c, true
}

// elements is how many objects a field returns at most: its page size for a
// connection (first, last, or the list's default), its maxPoints, else 1.
func (w weighted) elements(typeName, field string, args map[string]any) int {
	for _, key := range []string{"first", "last", "maxPoints"} {
		if v, ok := toInt(args[key]); ok {
			return max(v, 1)
		}
	}
	if def := w.Schema().Types[typeName]; def != nil {
		if f := def.Fields.ForName(field); f != nil && strings.HasSuffix(f.Type.Name(), "Connection") {
			if n, ok := defaultPage[typeName+"."+field]; ok {
				return n
			}
			return defaultListPage
		}
	}
	return 1
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
	preflight preflight
	es        graphql.ExecutableSchema
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
	// Preflight bounded the expanded operation, so this walk is bounded too.
	limit := c.preflight.budget(ctx).Complexity
	cost := complexity.Calculate(ctx, c.es, oc.Operation, oc.Variables)
	if cost <= limit {
		return nil
	}
	return refused("COMPLEXITY_LIMIT_EXCEEDED",
		fmt.Sprintf("the operation's complexity is %d; at most %d is allowed: ask for fewer fields or smaller pages (first)%s", cost, limit, signInHint(ctx)),
		"complexity", cost, "limit", limit)
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
