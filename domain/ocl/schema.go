package ocl

import (
	"bytes"
	_ "embed"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed schema.json
var schemaJSON []byte

// SchemaID is the $id of the published descriptor schema.
const SchemaID = "urn:cairn:ocl:v1"

// Schema returns the published JSON Schema (draft 2020-12) of the descriptor
// format, for editors and for vendors' own tooling.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// The compiled schema and the pattern hints never change after init, so they
// are shared by every call without locking.
var (
	descriptorSchema *jsonschema.Schema
	patternHints     map[string]string
)

func init() {
	sch, err := compileSchema(SchemaID, schemaJSON)
	if err != nil {
		panic(fmt.Sprintf("ocl: embedded schema does not compile: %v", err))
	}
	descriptorSchema = sch
	patternHints = hintsFor(schemaJSON)
}

// Plain-language descriptions of the schema's patterns, keyed by the name of
// the definition or property that carries the pattern; a regular expression
// is no help to a vendor who mistyped a name.
var hintByName = map[string]string{
	"dnsLabel":     "must be 1-63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen",
	"identifier":   "must be letters, digits and underscores, not starting with a digit, at most 64 characters",
	"resourceType": "must be lowercase letters and digits, starting with a letter, optionally separated by single '.', '_' or '-'",
	"semver":       "must be a semantic version such as 1.4.2 or 2.0.0-rc.1",
	"labelKey":     "must be letters, digits, '.', '_', '/' and '-', starting and ending with a letter or digit, at most 128 characters",
	"duration":     "must be a duration such as 30s, 1m30s or 500ms",
	"count":        "must be an integer or a single ${var.NAME} expression",
	"port":         "must be a port number or an expression such as ${var.port}",
}

// hintsFor maps each pattern in the schema to the hint for the definition or
// property that holds it.
func hintsFor(raw []byte) map[string]string {
	doc, err := decodeValue(raw)
	if err != nil {
		panic(fmt.Sprintf("ocl: embedded schema is not JSON: %v", err))
	}
	hints := map[string]string{}
	var walk func(v any, name string)
	walk = func(v any, name string) {
		switch t := v.(type) {
		case map[string]any:
			if pat, ok := t["pattern"].(string); ok {
				if hint, ok := hintByName[name]; ok {
					hints[pat] = hint
				}
			}
			for k, e := range t {
				walk(e, k)
			}
		case []any:
			for _, e := range t {
				walk(e, name)
			}
		}
	}
	walk(doc, "")
	return hints
}

// refuseLoader keeps schema compilation pure: a $ref to anything outside the
// document (a file, a URL) fails instead of reaching for the network or disk.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("cannot load %s: schemas must be self-contained", url)
}

func compileSchema(url string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// schemaProblems validates a document against the descriptor schema.
func schemaProblems(doc any) []Problem {
	return validateAgainst(descriptorSchema, doc, "", nil)
}

// validateAgainst validates v and turns the library's error tree into
// Problems under prefix, sorted by location. skip drops problems about a
// value (used to ignore expressions that only have a value at run time).
func validateAgainst(sch *jsonschema.Schema, v any, prefix path, skip func(v any) bool) []Problem {
	err := sch.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []Problem{{Path: string(prefix), Message: err.Error()}}
	}
	col := &collector{root: v}
	col.collect(ve)
	issues := col.out
	out := make([]Problem, 0, len(issues))
	sort.SliceStable(issues, func(i, j int) bool { return lessLocation(issues[i].loc, issues[j].loc) })
	for _, is := range issues {
		if skip != nil {
			if val, found := valueAt(v, is.loc); found && skip(val) {
				continue
			}
		}
		out = append(out, Problem{Path: string(renderLocation(prefix, v, is.loc)), Message: is.msg})
	}
	return dedupe(out)
}

type issue struct {
	loc []string
	msg string
}

// collector flattens the library's error tree into one issue per problem.
type collector struct {
	root any
	out  []issue
}

func (c *collector) add(loc []string, msg string) {
	c.out = append(c.out, issue{loc: loc, msg: msg})
}

func (c *collector) collect(e *jsonschema.ValidationError) {
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		// Point at the missing field itself: "metadata.name: is required".
		for _, m := range k.Missing {
			c.add(appendLoc(loc, m), "is required")
		}
		return
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			c.add(appendLoc(loc, p), "is not a known field")
		}
		return
	case *kind.PropertyNames:
		// The causes judge the name as a string; report them at the entry.
		msg := "is not a valid name"
		if leaf := firstLeaf(e); leaf != nil && leaf != e {
			msg = "invalid name: " + describe(leaf.ErrorKind, k.Property)
		}
		c.add(appendLoc(repairLocation(c.root, loc, k.Property), k.Property), msg)
		return
	case *kind.AnyOf, *kind.OneOf:
		// The branches' own errors contradict each other; say it once.
		c.add(loc, describe(k, nil))
		return
	}
	if len(e.Causes) == 0 {
		val, _ := valueAt(c.root, loc)
		c.add(loc, describe(e.ErrorKind, val))
		return
	}
	for _, cause := range e.Causes {
		c.collect(cause)
	}
}

// repairLocation works around jsonschema v6.0.3 sharing the location slice
// of a propertyNames error with sibling validations, which overwrite its tail
// (its length stays right). Among the objects at that depth holding the key,
// it picks the one agreeing longest with what is left of the location.
func repairLocation(root any, loc []string, key string) []string {
	var (
		best      []string
		bestScore = -1
	)
	var walk func(v any, at []string)
	walk = func(v any, at []string) {
		if len(at) == len(loc) {
			if m, ok := v.(map[string]any); ok {
				if _, has := m[key]; has {
					score := 0
					for score < len(loc) && at[score] == loc[score] {
						score++
					}
					if score > bestScore {
						best, bestScore = slices.Clone(at), score
					}
				}
			}
			return
		}
		switch t := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(t) {
				walk(t[k], append(at, k))
			}
		case []any:
			for i, e := range t {
				walk(e, append(at, strconv.Itoa(i)))
			}
		}
	}
	walk(root, make([]string, 0, len(loc)))
	if best == nil {
		return loc
	}
	return best
}

func firstLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	return e
}

func appendLoc(loc []string, s string) []string {
	out := make([]string, len(loc), len(loc)+1)
	copy(out, loc)
	return append(out, s)
}

var printer = message.NewPrinter(language.English)

// describe says what a schema keyword wants, in words a vendor can act on.
// val is the offending value when known, for the library reports JSON types
// loosely (an integer as "number").
func describe(k jsonschema.ErrorKind, val any) string {
	switch k := k.(type) {
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = withArticle(w)
		}
		got := k.Got
		if val != nil {
			got = jsonType(val)
		}
		return fmt.Sprintf("must be %s, got %s", strings.Join(want, " or "), got)
	case *kind.Const:
		return "must be " + display(k.Want)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = display(w)
		}
		return "must be one of " + strings.Join(want, ", ")
	case *kind.Pattern:
		if hint, ok := patternHints[k.Want]; ok {
			return fmt.Sprintf("%s, got %s", hint, display(k.Got))
		}
		return fmt.Sprintf("must match the pattern %s, got %s", strconv.Quote(k.Want), display(k.Got))
	case *kind.MinLength:
		if k.Want == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("must be at least %s long", plural(k.Want, "character"))
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %s long, got %d", plural(k.Want, "character"), k.Got)
	case *kind.MinItems:
		if k.Want == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("must have at least %s", plural(k.Want, "item"))
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %s, got %d", plural(k.Want, "item"), k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %s", plural(k.Want, "entry"))
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %s, got %d", plural(k.Want, "entry"), k.Got)
	case *kind.Minimum:
		return "must be at least " + ratString(k.Want)
	case *kind.Maximum:
		return "must be at most " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be greater than " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be less than " + ratString(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratString(k.Want)
	case *kind.UniqueItems:
		return fmt.Sprintf("items %d and %d are the same; list each once", k.Duplicates[0], k.Duplicates[1])
	case *kind.FalseSchema:
		return "is not allowed here"
	case *kind.AnyOf:
		return "does not match any of the allowed forms"
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			return "does not match any of the allowed forms"
		}
		return fmt.Sprintf("matches more than one allowed form (%d and %d); make it unambiguous", k.Subschemas[0], k.Subschemas[1])
	}
	return k.LocalizedString(printer)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func withArticle(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func display(v any) string {
	var s string
	switch t := v.(type) {
	case string:
		s = strconv.Quote(t)
	case nil:
		s = "null"
	default:
		s = textOf(v)
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// renderLocation turns a JSON-pointer-like location into a user path,
// consulting the instance to tell array indexes from object keys.
func renderLocation(prefix path, v any, loc []string) path {
	p := prefix
	cur := v
	for _, seg := range loc {
		switch t := cur.(type) {
		case []any:
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 {
				p = p.index(i)
				if i < len(t) {
					cur = t[i]
				} else {
					cur = nil
				}
				continue
			}
			p = p.key(seg)
			cur = nil
		case map[string]any:
			p = p.key(seg)
			cur = t[seg]
		default:
			p = p.key(seg)
			cur = nil
		}
	}
	return p
}

func valueAt(v any, loc []string) (any, bool) {
	cur := v
	for _, seg := range loc {
		switch t := cur.(type) {
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			cur = t[i]
		case map[string]any:
			e, ok := t[seg]
			if !ok {
				return nil, false
			}
			cur = e
		default:
			return nil, false
		}
	}
	return cur, true
}

// lessLocation orders locations as they appear in a document, comparing
// array indexes numerically so resources[10] follows resources[9].
func lessLocation(a, b []string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}
