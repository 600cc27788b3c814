package ocl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Parse reads a descriptor written in JSON or YAML. A document whose first
// significant character is "{" or "[" is read as JSON, anything else as YAML;
// both become the same JSON model, so they describe, validate and digest
// alike.
//
// Malformed input yields a *SyntaxError with the line and column. A document
// whose shape cannot be represented (a string where the resources list goes,
// say) yields a *ValidationError listing the schema problems. Any other schema
// or consistency problem is left for Validate, which reports them all at once.
func Parse(data []byte) (*Descriptor, error) {
	tree, err := parseTree(data)
	if err != nil {
		return nil, err
	}
	return fromTree(tree)
}

// ParseDocument reads any document of Cairn's written in JSON or YAML (a
// descriptor, a blueprint) into canonical JSON, with the same limits and
// errors as Parse: hostile input gets a *SyntaxError, never a panic.
func ParseDocument(data []byte) (json.RawMessage, error) {
	tree, err := parseTree(data)
	if err != nil {
		return nil, err
	}
	return encodeCanonical(tree), nil
}

func parseTree(data []byte) (any, error) {
	if len(data) > MaxDocumentSize {
		return nil, &SyntaxError{Message: fmt.Sprintf("descriptor is %d bytes; the limit is %d", len(data), MaxDocumentSize)}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	body := bytes.TrimLeft(data, " \t\r\n")
	if len(body) == 0 {
		return nil, &SyntaxError{Message: "descriptor is empty"}
	}
	var (
		tree any
		err  error
	)
	if body[0] == '{' || body[0] == '[' {
		tree, err = parseJSON(data)
	} else {
		tree, err = parseYAML(data)
	}
	if err != nil {
		return nil, err
	}
	return tree, nil
}

// fromTree builds the Descriptor from the JSON model of a document.
func fromTree(tree any) (*Descriptor, error) {
	if _, ok := tree.(map[string]any); !ok {
		return nil, &ValidationError{Problems: schemaProblems(tree)}
	}
	d := &Descriptor{}
	if err := json.Unmarshal(encodeCanonical(tree), d); err != nil {
		// The schema forbids every shape the struct cannot hold, so its
		// problems explain the failure better than encoding/json does.
		ps := schemaProblems(tree)
		if len(ps) == 0 {
			ps = []Problem{decodeProblem(err)}
		}
		return nil, &ValidationError{Problems: ps}
	}
	d.source = tree
	d.parsedAs, _ = json.Marshal(d) // a freshly decoded struct always encodes
	return d, nil
}

func decodeProblem(err error) Problem {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return Problem{Path: te.Field, Message: fmt.Sprintf("must not be %s", te.Value)}
	}
	return Problem{Message: err.Error()}
}

// --- JSON ---

// jsonParser walks the token stream itself, rather than decoding into any,
// to refuse duplicate keys (encoding/json silently keeps the last) and to
// report positions as line and column.
type jsonParser struct {
	dec    *json.Decoder
	data   []byte
	values int
}

func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &jsonParser{dec: dec, data: data}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, p.errAt(dec.InputOffset(), "unexpected data after the descriptor")
	}
	return v, nil
}

func (p *jsonParser) value(depth int) (any, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.wrap(err)
	}
	p.values++
	if p.values > maxValues {
		return nil, p.errAt(p.dec.InputOffset(), fmt.Sprintf("more than %d values", maxValues))
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return nil, p.errAt(p.dec.InputOffset(), fmt.Sprintf("nested deeper than %d levels", maxDepth))
		}
		if t == '{' {
			return p.object(depth)
		}
		return p.array(depth)
	case json.Number:
		n, err := canonicalNumber(string(t))
		if err != nil {
			return nil, p.errAt(p.dec.InputOffset(), err.Error())
		}
		return n, nil
	default: // string, bool, nil
		return t, nil
	}
}

func (p *jsonParser) object(depth int) (any, error) {
	m := map[string]any{}
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return nil, p.wrap(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, p.errAt(p.dec.InputOffset(), "object key must be a string")
		}
		if _, dup := m[key]; dup {
			return nil, p.errAt(p.dec.InputOffset(), fmt.Sprintf("duplicate key %q", key))
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
	if _, err := p.dec.Token(); err != nil { // the closing brace
		return nil, p.wrap(err)
	}
	return m, nil
}

func (p *jsonParser) array(depth int) (any, error) {
	s := []any{}
	for p.dec.More() {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		s = append(s, v)
	}
	if _, err := p.dec.Token(); err != nil { // the closing bracket
		return nil, p.wrap(err)
	}
	return s, nil
}

func (p *jsonParser) wrap(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return p.errAt(se.Offset, se.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return p.errAt(int64(len(p.data)), "unexpected end of input")
	}
	return p.errAt(p.dec.InputOffset(), err.Error())
}

// errAt reports a problem at the byte before offset off, which is where
// encoding/json stops when it notices one, or at the next significant
// character when that byte is white space.
func (p *jsonParser) errAt(off int64, msg string) error {
	pos := max(off-1, 0)
	for pos < int64(len(p.data))-1 && isJSONSpace(p.data[pos]) {
		pos++
	}
	line, col := lineColumn(p.data, pos)
	return &SyntaxError{Format: "JSON", Line: line, Column: col, Message: msg}
}

func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// lineColumn converts a byte offset into 1-based line and column, counting
// columns in characters.
func lineColumn(data []byte, off int64) (int, int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}

// --- YAML ---

func parseYAML(data []byte) (tree any, err error) {
	// The YAML library has panicked on malformed input in past releases; a
	// descriptor upload must never take the control plane down with it.
	defer func() {
		if r := recover(); r != nil {
			tree, err = nil, &SyntaxError{Format: "YAML", Message: fmt.Sprintf("cannot parse: %v", r)}
		}
	}()
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(err)
	}
	var docs []*ast.DocumentNode
	for _, doc := range file.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc)
		}
	}
	switch len(docs) {
	case 0:
		return nil, &SyntaxError{Format: "YAML", Message: "descriptor is empty"}
	case 1:
	default:
		se := &SyntaxError{Format: "YAML", Message: fmt.Sprintf("found %d documents; a descriptor is a single document", len(docs))}
		tok := docs[1].Start // the "---" that opens the second document
		if tok == nil {
			tok = docs[1].Body.GetToken()
		}
		if tok != nil && tok.Position != nil {
			se.Line, se.Column = tok.Position.Line, tok.Position.Column
		}
		return nil, se
	}
	var raw any
	if err := yaml.NodeToValue(docs[0].Body, &raw); err != nil {
		return nil, yamlError(err)
	}
	c := &yamlConverter{}
	return c.convert(raw, "", 0)
}

func yamlError(err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		se := &SyntaxError{Format: "YAML", Message: ye.GetMessage()}
		if tok := ye.GetToken(); tok != nil && tok.Position != nil {
			se.Line, se.Column = tok.Position.Line, tok.Position.Column
		}
		return se
	}
	return &SyntaxError{Format: "YAML", Message: err.Error()}
}

// yamlConverter turns decoded YAML into the JSON model. YAML aliases arrive as
// shared values, so the walk counts what it visits to stop exponential
// expansion.
type yamlConverter struct {
	values int
}

func (c *yamlConverter) convert(v any, at path, depth int) (any, error) {
	c.values++
	if c.values > maxValues {
		return nil, &SyntaxError{Format: "YAML", Message: fmt.Sprintf("more than %d values once aliases are expanded", maxValues)}
	}
	if depth > maxDepth {
		return nil, &SyntaxError{Format: "YAML", Message: fmt.Sprintf("%s: nested deeper than %d levels", displayPath(at), maxDepth)}
	}
	switch t := v.(type) {
	case nil, bool, string:
		return t, nil
	case float32:
		return c.float(float64(t), at)
	case float64:
		return c.float(t, at)
	case time.Time:
		return t.Format(time.RFC3339Nano), nil
	case []byte:
		return base64.StdEncoding.EncodeToString(t), nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			ce, err := c.convert(e, at.index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = ce
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			ce, err := c.convert(e, at.key(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = ce
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			ks := fmt.Sprint(k)
			if _, dup := out[ks]; dup {
				return nil, &SyntaxError{Format: "YAML", Message: fmt.Sprintf("%s: duplicate key %q", displayPath(at), ks)}
			}
			ce, err := c.convert(e, at.key(ks), depth+1)
			if err != nil {
				return nil, err
			}
			out[ks] = ce
		}
		return out, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return json.Number(strconv.FormatInt(rv.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return json.Number(strconv.FormatUint(rv.Uint(), 10)), nil
	}
	return nil, &SyntaxError{Format: "YAML", Message: fmt.Sprintf("%s: a %T value has no JSON equivalent", displayPath(at), v)}
}

func (c *yamlConverter) float(f float64, at path) (any, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &SyntaxError{Format: "YAML", Message: fmt.Sprintf("%s: %v has no JSON equivalent", displayPath(at), f)}
	}
	return floatNumber(f), nil
}

func displayPath(p path) string {
	if p == "" {
		return "document"
	}
	return string(p)
}
