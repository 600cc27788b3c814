package ocl

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Expression syntax (docs/ocl.md has the user's view):
//
//	${var.NAME}                          a variable's value
//	${resource.NAME.outputs.KEY}         an output of an uncounted resource
//	${resource.NAME[I].outputs.KEY}      an output of instance I of a counted resource;
//	                                     I is digits or count.index
//	${service.id}  ${service.tenant}     the service instance being deployed
//	${count.index}                       the instance index inside a counted resource
//	$${                                  a literal "${"
//
// A string that is exactly one expression takes the referenced value with its
// JSON type; an expression inside a longer string is interpolated as text.
// Expressions are recognised in string values only, never in object keys.

type refKind uint8

const (
	refVar refKind = iota + 1
	refResource
	refServiceID
	refServiceTenant
	refCountIndex
)

// indexMode says how a resource reference picks an instance.
type indexMode uint8

const (
	indexNone    indexMode = iota // resource.web.outputs.x
	indexLiteral                  // resource.web[2].outputs.x
	indexCount                    // resource.web[count.index].outputs.x
)

type ref struct {
	kind  refKind
	name  string // variable or resource name
	mode  indexMode
	index int
	key   string // output key
}

func (r ref) String() string {
	switch r.kind {
	case refVar:
		return "var." + r.name
	case refServiceID:
		return "service.id"
	case refServiceTenant:
		return "service.tenant"
	case refCountIndex:
		return "count.index"
	}
	s := "resource." + r.name
	switch r.mode {
	case indexLiteral:
		s += "[" + strconv.Itoa(r.index) + "]"
	case indexCount:
		s += "[count.index]"
	}
	return s + ".outputs." + r.key
}

// segment is literal text (already unescaped) or one reference.
type segment struct {
	text string
	ref  *ref
}

type template []segment

// single returns the reference when the string is exactly one expression.
func (t template) single() (ref, bool) {
	if len(t) == 1 && t[0].ref != nil {
		return *t[0].ref, true
	}
	return ref{}, false
}

func (t template) refs() []ref {
	var out []ref
	for _, s := range t {
		if s.ref != nil {
			out = append(out, *s.ref)
		}
	}
	return out
}

// exprError explains why a string is not a valid template.
type exprError struct {
	reason string
}

func (e *exprError) Error() string { return e.reason }

const refForms = "var.NAME, resource.NAME.outputs.KEY, resource.NAME[INDEX].outputs.KEY, service.id, service.tenant or count.index"

// parseTemplate splits s into literal text and references.
func parseTemplate(s string) (template, error) {
	if !strings.Contains(s, "$") {
		return template{{text: s}}, nil
	}
	var (
		out template
		lit strings.Builder
	)
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, segment{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return nil, &exprError{reason: fmt.Sprintf("expression at character %d is not closed with \"}\"; write \"$${\" for a literal \"${\"", i+1)}
			}
			body := s[i+2 : i+2+end]
			r, err := parseRef(body)
			if err != nil {
				return nil, err
			}
			flush()
			out = append(out, segment{ref: &r})
			i += 2 + end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	if len(out) == 0 {
		out = template{{text: ""}}
	}
	return out, nil
}

var (
	identRe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	labelRe     = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)
	outputKeyRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,127}$`)
)

// exprSpace is the white space allowed around a reference: the same set as
// \s in the schema's count pattern.
const exprSpace = " \t\n\f\r"

func parseRef(body string) (ref, error) {
	text := strings.Trim(body, exprSpace)
	bad := func(why string) (ref, error) {
		return ref{}, &exprError{reason: fmt.Sprintf("invalid expression ${%s}: %s", body, why)}
	}
	switch {
	case text == "":
		return bad("it is empty; expected " + refForms)
	case text == "service.id":
		return ref{kind: refServiceID}, nil
	case text == "service.tenant":
		return ref{kind: refServiceTenant}, nil
	case text == "count.index":
		return ref{kind: refCountIndex}, nil
	case strings.HasPrefix(text, "var."):
		name := text[len("var."):]
		if !identRe.MatchString(name) {
			return bad("a variable name is letters, digits and underscores, not starting with a digit")
		}
		return ref{kind: refVar, name: name}, nil
	case strings.HasPrefix(text, "resource."):
		return parseResourceRef(text[len("resource."):], bad)
	}
	return bad("expected " + refForms)
}

func parseResourceRef(rest string, bad func(string) (ref, error)) (ref, error) {
	r := ref{kind: refResource}
	n := strings.IndexAny(rest, ".[")
	if n < 0 {
		return bad("expected resource.NAME.outputs.KEY")
	}
	r.name = rest[:n]
	if !labelRe.MatchString(r.name) {
		return bad(fmt.Sprintf("%q is not a resource name", r.name))
	}
	rest = rest[n:]
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return bad("index is not closed with \"]\"")
		}
		idx := strings.Trim(rest[1:end], exprSpace)
		switch {
		case idx == "count.index":
			r.mode = indexCount
		case isIntegerLiteral(idx) && !strings.HasPrefix(idx, "-"):
			i, err := strconv.Atoi(idx)
			if err != nil || i >= MaxCount {
				return bad(fmt.Sprintf("index %s is out of range; a resource has at most %d instances", idx, MaxCount))
			}
			r.mode, r.index = indexLiteral, i
		default:
			return bad("an index is a non-negative integer or count.index")
		}
		rest = rest[end+1:]
	}
	key, ok := strings.CutPrefix(rest, ".outputs.")
	if !ok {
		return bad("expected .outputs.KEY after the resource")
	}
	if !outputKeyRe.MatchString(key) {
		return bad(fmt.Sprintf("%q is not an output key: letters, digits, '_' and '-', not starting with a digit", key))
	}
	r.key = key
	return r, nil
}

// escapeText protects literal text that will be parsed as a template again:
// after it, "${" in the text reads back as text, never as an expression.
func escapeText(s string) string {
	return strings.ReplaceAll(s, "${", "$${")
}

// escapeValue applies escapeText to every string in a model value, so that a
// variable holding "${...}" cannot smuggle an expression into a plan.
func escapeValue(v any) any {
	switch t := v.(type) {
	case string:
		return escapeText(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = escapeValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = escapeValue(e)
		}
		return out
	}
	return v
}

// containsExpression reports whether a model value is a string that will only
// have its final value at run time.
func containsExpression(v any) bool {
	s, ok := v.(string)
	if !ok || !strings.Contains(s, "${") {
		return false
	}
	t, err := parseTemplate(s)
	return err != nil || len(t.refs()) > 0
}

// walkStrings calls fn for every string value in v with its path, in a stable
// order, and replaces the string with what fn returns.
func walkStrings(v any, at path, fn func(at path, s string) (any, error)) (any, error) {
	switch t := v.(type) {
	case string:
		return fn(at, t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			n, err := walkStrings(e, at.index(i), fn)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for _, k := range sortedKeys(t) {
			n, err := walkStrings(t[k], at.key(k), fn)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	}
	return v, nil
}

// ResolveProperties fills the resource output references that Plan left in a
// node's properties (or in an output's value), once the referenced resources
// exist. outputs looks up one output; index is -1 for a resource without a
// count. A string that is exactly one reference takes the output's JSON value;
// a reference inside a longer string is replaced by the output as text
// (strings as themselves, null as nothing, anything else as compact JSON).
//
// Always pass planned properties through ResolveProperties before a plugin
// sees them, even when they hold no reference: it also turns "$${" back into
// "${". A missing output is a *MissingOutputError.
func ResolveProperties(props json.RawMessage, outputs func(resource string, index int, key string) (json.RawMessage, bool)) (json.RawMessage, error) {
	if len(props) == 0 {
		return props, nil
	}
	v, err := decodeValue(props)
	if err != nil {
		return nil, fmt.Errorf("properties are not valid JSON: %w", err)
	}
	out, err := walkStrings(v, "", func(at path, s string) (any, error) {
		t, err := parseTemplate(s)
		if err != nil {
			return nil, &ValidationError{Problems: []Problem{{Path: string(at), Message: err.Error()}}}
		}
		lookup := func(r ref) (any, error) {
			if r.kind != refResource || r.mode == indexCount {
				return nil, &ValidationError{Problems: []Problem{{Path: string(at), Message: fmt.Sprintf("${%s} should have been substituted by Plan", r)}}}
			}
			idx := -1
			if r.mode == indexLiteral {
				idx = r.index
			}
			raw, ok := outputs(r.name, idx, r.key)
			if !ok {
				return nil, &MissingOutputError{Path: string(at), Resource: r.name, Index: idx, Key: r.key}
			}
			val, err := decodeValue(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: output %q of %s is not valid JSON: %w", at, r.key, instanceName(r.name, idx), err)
			}
			return val, nil
		}
		if r, ok := t.single(); ok {
			return lookup(r)
		}
		var b strings.Builder
		for _, seg := range t {
			if seg.ref == nil {
				b.WriteString(seg.text)
				continue
			}
			val, err := lookup(*seg.ref)
			if err != nil {
				return nil, err
			}
			b.WriteString(textOf(val))
		}
		return b.String(), nil
	})
	if err != nil {
		return nil, err
	}
	return encodeCanonical(out), nil
}
