package transport

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"cairn/graph/apierr"
)

// preflight looks at a document before gqlgen validates it, in time linear
// in its size: the document's length and tokens, then, with every fragment
// measured once and remembered, how deep and how many fields it would be
// with its fragments expanded. A fragment bomb (F0 spreads F1 twice, F1
// spreads F2 twice, ...) expands to billions of fields from a kilobyte, and
// validation and cost analysis walk the expanded form; preflight refuses it
// before either runs. Callers without a token get tighter limits.
//
// Clients send the same few documents over and over (an agent's heartbeat,
// a portal's page): a document that passed is remembered, by a digest of
// its text and operation and the budget it passed, so it is not parsed
// again before gqlgen finds it in its own cache of parsed queries.
type preflight struct {
	signedIn, anonymous Budget
	passed              *passedDocuments
}

func newPreflight(signedIn, anonymous Budget) preflight {
	return preflight{signedIn: signedIn, anonymous: anonymous, passed: &passedDocuments{m: map[[32]byte]struct{}{}}}
}

// passedDocumentsMax bounds the documents preflight remembers; when full it
// starts afresh, which costs a re-check of the documents in use.
const passedDocumentsMax = 4096

// passedDocuments are the digests of the documents that passed preflight.
type passedDocuments struct {
	mu sync.Mutex
	m  map[[32]byte]struct{}
}

func (p *passedDocuments) has(k [32]byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.m[k]
	return ok
}

func (p *passedDocuments) add(k [32]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= passedDocumentsMax {
		clear(p.m)
	}
	p.m[k] = struct{}{}
}

// documentKey names a document checked against one of the two budgets.
func documentKey(anonymous bool, rp *graphql.RawParams) [32]byte {
	h := sha256.New()
	if anonymous {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
	h.Write([]byte(rp.OperationName))
	h.Write([]byte{0})
	h.Write([]byte(rp.Query))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// Budget bounds one document.
type Budget struct {
	// Bytes and Tokens bound the document's text.
	Bytes, Tokens int
	// Depth bounds the nesting of selections, fragments expanded
	// (introspection fields are not counted).
	Depth int
	// Fields bounds the fields of the operation with its fragments
	// expanded, aliases and directives included.
	Fields int
	// Complexity bounds the operation's cost (see weighted).
	Complexity int
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = preflight{}

func (preflight) ExtensionName() string                          { return "Preflight" }
func (preflight) Validate(schema graphql.ExecutableSchema) error { return nil }

func (p preflight) budget(ctx context.Context) Budget {
	if isAnonymous(ctx) {
		return p.anonymous
	}
	return p.signedIn
}

// isAnonymous says whether the caller has no token.
func isAnonymous(ctx context.Context) bool { return Principal(ctx).Role == "" }

func (p preflight) MutateOperationParameters(ctx context.Context, rp *graphql.RawParams) *gqlerror.Error {
	b := p.budget(ctx)
	if len(rp.Query) > b.Bytes {
		return refused("QUERY_TOO_LARGE", fmt.Sprintf("the query is %d bytes; at most %d are accepted%s", len(rp.Query), b.Bytes, signInHint(ctx)))
	}
	key := documentKey(isAnonymous(ctx), rp)
	if p.passed.has(key) {
		return nil
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: rp.Query}, b.Tokens)
	if err != nil {
		// gqlgen parses again and reports the syntax error with its place;
		// a document over the token limit is refused here.
		if gerr, ok := err.(*gqlerror.Error); ok && strings.HasPrefix(gerr.Message, "exceeded token limit") {
			return refused("QUERY_TOO_LARGE", fmt.Sprintf("the query has more than %d tokens%s", b.Tokens, signInHint(ctx)))
		}
		return nil
	}
	if err := p.measure(ctx, b, doc, rp.OperationName); err != nil {
		return err
	}
	p.passed.add(key)
	return nil
}

// measure refuses an operation of doc (the one named, or all) that would
// be deeper or have more fields than b allows once its fragments expand.
func (p preflight) measure(ctx context.Context, b Budget, doc *ast.QueryDocument, operation string) *gqlerror.Error {
	m := measurer{frags: map[string]*ast.FragmentDefinition{}, sizes: map[string]size{}, visiting: map[string]bool{}}
	for _, f := range doc.Fragments {
		m.frags[f.Name] = f
	}
	for _, op := range doc.Operations {
		if operation != "" && op.Name != operation {
			continue
		}
		s, cyclic := m.selection(op.SelectionSet)
		switch {
		case cyclic != "":
			return refused("FRAGMENT_CYCLE", fmt.Sprintf("fragment %s spreads itself", cyclic))
		case s.depth > b.Depth:
			return refused("DEPTH_LIMIT_EXCEEDED", fmt.Sprintf("the operation is nested %d levels deep; at most %d are allowed: ask for fewer nested fields, or page with a second query", s.depth, b.Depth),
				"depth", s.depth, "limit", b.Depth)
		case s.fields > int64(b.Fields):
			return refused("FIELD_LIMIT_EXCEEDED", fmt.Sprintf("the operation asks for %s fields with its fragments expanded; at most %d are allowed%s", count(s.fields), b.Fields, signInHint(ctx)),
				"fields", s.fields, "limit", b.Fields)
		}
	}
	return nil
}

// size is a selection set with its fragments expanded: its deepest chain of
// fields and its number of fields, saturating far above any limit.
type size struct {
	depth  int
	fields int64
}

const saturated = int64(1) << 40

// measurer sizes selection sets, each fragment once.
type measurer struct {
	frags    map[string]*ast.FragmentDefinition
	sizes    map[string]size
	visiting map[string]bool
}

// selection returns the size of a set, or the name of a fragment that
// spreads itself.
func (m *measurer) selection(set ast.SelectionSet) (size, string) {
	var out size
	for _, sel := range set {
		var s size
		switch x := sel.(type) {
		case *ast.Field:
			child, cyclic := m.selection(x.SelectionSet)
			if cyclic != "" {
				return out, cyclic
			}
			s = size{depth: 1 + child.depth, fields: 1 + child.fields + int64(len(x.Directives))}
			if len(x.Name) > 1 && x.Name[:2] == "__" {
				s.depth = 0 // introspection is allowed or not as a whole
			}
		case *ast.InlineFragment:
			child, cyclic := m.selection(x.SelectionSet)
			if cyclic != "" {
				return out, cyclic
			}
			s = child
		case *ast.FragmentSpread:
			child, cyclic := m.fragment(x.Name)
			if cyclic != "" {
				return out, cyclic
			}
			s = child
		}
		out.depth = max(out.depth, s.depth)
		out.fields = min(out.fields+s.fields, saturated)
	}
	return out, ""
}

func (m *measurer) fragment(name string) (size, string) {
	if s, ok := m.sizes[name]; ok {
		return s, ""
	}
	f := m.frags[name]
	if f == nil {
		return size{}, "" // validation reports the unknown fragment
	}
	if m.visiting[name] {
		return size{}, name
	}
	m.visiting[name] = true
	s, cyclic := m.selection(f.SelectionSet)
	delete(m.visiting, name)
	if cyclic == "" {
		m.sizes[name] = s
	}
	return s, cyclic
}

// refused is an INVALID_INPUT error with a reason and details (key, value,
// ...), before anything ran.
func refused(reason, msg string, details ...any) *gqlerror.Error {
	ext := map[string]any{"code": apierr.CodeInvalidInput, "reason": reason}
	for i := 0; i+1 < len(details); i += 2 {
		ext[details[i].(string)] = details[i+1]
	}
	return &gqlerror.Error{Message: msg, Extensions: ext}
}

func count(n int64) string {
	if n >= saturated {
		return "more than a trillion"
	}
	return fmt.Sprint(n)
}

func signInHint(ctx context.Context) string {
	if Principal(ctx).Role == "" {
		return " without a token: sign in for larger ones"
	}
	return ""
}
