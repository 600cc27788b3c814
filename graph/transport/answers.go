package transport

import (
	"cairn/auth"
	"context"
	"crypto/sha256"
	"encoding/json"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"golang.org/x/sync/singleflight"
)

// The answer cache serves a query again without running it while the read
// models have not changed: portals poll and many operators look at the same
// lists, and running a list of a hundred nodes through the executor costs
// milliseconds of CPU each time.
//
// An answer is kept under the query, its variables, the caller (principal:
// what it may see) and the projections' generation, which moves after every
// batch a projection commits (projections.Runner.Generation); so an answer is
// never served once a read model it was computed from has changed here. Only
// queries that read nothing but read models are kept: their root fields are
// listed in cacheableRoots, no field anywhere is one of uncachedFields (those
// read tables the projections do not write), and no argument asks to wait
// for a write (consistentWith) or to replay the log (asOf). Answers with
// errors are not kept.

// cacheableRoots are the query fields answered from read models alone.
var cacheableRoots = map[string]bool{
	"nodes": true, "serverNode": true, "locations": true, "location": true,
	"tenants": true, "tenant": true, "templates": true, "template": true,
	"services": true, "service": true,
}

// uncachedFields read something else: node statistics and job logs live in
// their own tables, jobs are read from their streams. node(id:) is not a
// cacheable root: it asks the log which kind an id is.
var uncachedFields = map[string]bool{
	"statistics": true, "log": true, "children": true, "jobs": true, "job": true, "parent": true,
}

// maxCachedAnswer bounds one kept answer.
const maxCachedAnswer = 1 << 20

type answerCache struct {
	gen     Generationer
	answers *lru.Cache[[32]byte, json.RawMessage]
	// running has the callers that miss the same answer together wait for
	// the first of them to compute it: the cache empties whenever a read
	// model changes, and the same query arriving from many portals at that
	// moment would otherwise run once for each.
	running singleflight.Group
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = (*answerCache)(nil)

// newAnswerCache returns nil (no cache) when gen is nil or size is not
// positive.
func newAnswerCache(gen Generationer, size int) *answerCache {
	if gen == nil || size <= 0 {
		return nil
	}
	c, err := lru.New[[32]byte, json.RawMessage](size)
	if err != nil {
		return nil
	}
	return &answerCache{gen: gen, answers: c}
}

func (*answerCache) ExtensionName() string                          { return "AnswerCache" }
func (*answerCache) Validate(schema graphql.ExecutableSchema) error { return nil }

// InterceptOperation serves a kept answer in place of the operation, as its
// only response. It stands in for the whole operation, not for a response:
// the transports that stream (WebSocket, server-sent events) ask for
// responses until told there are no more, which for a query the executor's
// own handler says after its one answer. A kept answer served in place of a
// response was served again at each asking, thousands of times a second
// for as long as the read models held still.
func (c *answerCache) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	key, ok := c.keyOf(ctx)
	if !ok {
		return next(ctx)
	}
	if data, ok := c.answers.Get(key); ok {
		return graphql.OneShot(&graphql.Response{Data: data})
	}
	responses := next(ctx)
	answered := false
	return func(ctx context.Context) *graphql.Response {
		if answered {
			return nil // a query answers once (this schema has no @defer)
		}
		answered = true
		return c.share(key, func() *graphql.Response { return responses(ctx) })
	}
}

// keyOf names the answer the operation in ctx asks for, if it may be kept.
func (c *answerCache) keyOf(ctx context.Context) ([32]byte, bool) {
	if !graphql.HasOperationContext(ctx) {
		return [32]byte{}, false
	}
	oc := graphql.GetOperationContext(ctx)
	sess := sessionFrom(ctx)
	if sess == nil || oc == nil || oc.Operation == nil || oc.Operation.Operation != ast.Query || !cacheable(oc) {
		return [32]byte{}, false
	}
	gen := c.gen.Generation()
	if gen == 0 {
		return [32]byte{}, false
	}
	return answerKey(oc, sess.principal, gen)
}

// share runs the query (run) for the first caller missing the answer under
// key and keeps its answer; the others missing it meanwhile wait for it.
// The first caller runs it on its own goroutine (a panic stays the
// executor's to recover). Each gets a response of its own: interceptors
// outside this one add to theirs.
func (c *answerCache) share(key [32]byte, run func() *graphql.Response) *graphql.Response {
	var own *graphql.Response
	ran := false
	v, _, _ := c.running.Do(string(key[:]), func() (any, error) {
		own, ran = run(), true
		if keepable(own) {
			c.answers.Add(key, own.Data)
		}
		return own, nil
	})
	if ran {
		return own
	}
	if first, _ := v.(*graphql.Response); keepable(first) {
		return &graphql.Response{Data: first.Data}
	}
	// The first caller's answer was not one to share (its errors may be
	// its own, a deadline say): this caller runs the query itself.
	return run()
}

// keepable says whether an answer may be kept and shared: data and nothing
// else, of a bounded size.
func keepable(resp *graphql.Response) bool {
	return resp != nil && len(resp.Errors) == 0 && len(resp.Extensions) == 0 && len(resp.Data) > 0 && len(resp.Data) <= maxCachedAnswer
}

// cacheable reports whether an operation reads read models only.
func cacheable(oc *graphql.OperationContext) bool {
	for _, sel := range oc.Operation.SelectionSet {
		f, ok := sel.(*ast.Field)
		if !ok || !cacheableRoots[f.Name] {
			return false
		}
		if passes(oc, f, "consistentWith") || passes(oc, f, "asOf") {
			return false
		}
		if !readsReadModels(f.SelectionSet, 0) {
			return false
		}
	}
	return true
}

// passes reports whether root field f is given the argument name (a value
// that is not null, or one that cannot be read).
func passes(oc *graphql.OperationContext, f *ast.Field, name string) bool {
	a := f.Arguments.ForName(name)
	if a == nil {
		return false
	}
	v, err := a.Value.Value(oc.Variables)
	return err != nil || v != nil
}

// ReadsOwnWrites reports whether the operation in ctx must read the primary
// database: a mutation or a subscription, or a query that waits for a write
// (consistentWith on any root field). Other queries may read a standby.
func ReadsOwnWrites(ctx context.Context) bool {
	if !graphql.HasOperationContext(ctx) {
		return true
	}
	oc := graphql.GetOperationContext(ctx)
	if oc == nil || oc.Operation == nil || oc.Operation.Operation != ast.Query {
		return true
	}
	for _, sel := range oc.Operation.SelectionSet {
		if f, ok := sel.(*ast.Field); ok && passes(oc, f, "consistentWith") {
			return true
		}
	}
	return false
}

// readsReadModels reports whether no field of the selection reads anything
// but read models.
func readsReadModels(set ast.SelectionSet, depth int) bool {
	if depth > 32 {
		return false
	}
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if uncachedFields[s.Name] || !readsReadModels(s.SelectionSet, depth+1) {
				return false
			}
		case *ast.InlineFragment:
			if !readsReadModels(s.SelectionSet, depth+1) {
				return false
			}
		case *ast.FragmentSpread:
			if s.Definition == nil || !readsReadModels(s.Definition.SelectionSet, depth+1) {
				return false
			}
		}
	}
	return true
}

// answerKey names an answer: the document, operation and variables, the
// caller, and the read models' generation.
func answerKey(oc *graphql.OperationContext, p auth.Principal, gen uint64) ([32]byte, bool) {
	vars, err := json.Marshal(oc.Variables)
	if err != nil {
		return [32]byte{}, false
	}
	h := sha256.New()
	for _, part := range []string{oc.RawQuery, oc.OperationName, string(vars),
		string(p.Kind), p.ID, p.UserID, string(p.Role), p.TenantID, p.NodeID, strconv.FormatUint(gen, 10)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	var key [32]byte
	h.Sum(key[:0])
	return key, true
}
