package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// UnknownActionError reports an action or job kind that the catalogue does not
// define.
type UnknownActionError struct {
	Name string
}

func (e *UnknownActionError) Error() string {
	return fmt.Sprintf("unknown SAL action %q: list the available actions to see valid names", e.Name)
}

// InvalidArgumentsError reports arguments that do not match an action's schema.
// Each problem starts with the JSON pointer of the offending value ("/" for
// the document itself), e.g. "/port: maximum: got 70000, want 65535".
type InvalidArgumentsError struct {
	Action   string
	Problems []string
}

func (e *InvalidArgumentsError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %s", e.Action, strings.Join(e.Problems, "; "))
}

// Validator checks arguments against the catalogue. Schemas are compiled once
// by NewValidator; a Validator is safe for concurrent use.
type Validator struct {
	schemas map[string]*jsonschema.Schema
	printer *message.Printer
}

// NewValidator compiles the schemas of every action and job kind.
func NewValidator() (*Validator, error) {
	all := ActionSchemas()
	maps.Copy(all, JobSchemas())

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// The schemas are self-contained: no loader may reach a file or the network.
	c.UseLoader(noLoader{})
	names := slices.Sorted(maps.Keys(all))
	for _, name := range names {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(all[name]))
		if err != nil {
			return nil, fmt.Errorf("catalog: schema of %s is not JSON: %w", name, err)
		}
		if err := c.AddResource(schemaURL(name), doc); err != nil {
			return nil, fmt.Errorf("catalog: add schema of %s: %w", name, err)
		}
	}
	v := &Validator{
		schemas: make(map[string]*jsonschema.Schema, len(all)),
		printer: message.NewPrinter(language.Und),
	}
	for _, name := range names {
		sch, err := c.Compile(schemaURL(name))
		if err != nil {
			return nil, fmt.Errorf("catalog: compile schema of %s: %w", name, err)
		}
		v.schemas[name] = sch
	}
	return v, nil
}

// Has reports whether name is an action or job kind of the catalogue.
func (v *Validator) Has(name string) bool {
	_, ok := v.schemas[name]
	return ok
}

// Validate checks args against the schema of the named action or job kind.
// Empty args and JSON null count as an empty object. It returns *UnknownActionError or
// *InvalidArgumentsError.
func (v *Validator) Validate(name string, args json.RawMessage) error {
	sch, ok := v.schemas[name]
	if !ok {
		return &UnknownActionError{Name: name}
	}
	if isEmpty(args) {
		args = json.RawMessage(`{}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &InvalidArgumentsError{Action: name, Problems: []string{"/: not valid JSON: " + err.Error()}}
	}
	err = sch.Validate(doc)
	if err == nil {
		return nil
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return &InvalidArgumentsError{Action: name, Problems: []string{"/: " + err.Error()}}
	}
	return &InvalidArgumentsError{Action: name, Problems: v.problems(verr)}
}

// problems flattens a validation error tree into its leaves: the inner nodes
// only say "validation failed" and would bury the useful messages.
func (v *Validator) problems(root *jsonschema.ValidationError) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p := pointer(e.InstanceLocation) + ": " + e.ErrorKind.LocalizedString(v.printer)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	walk(root)
	sort.Strings(out)
	return out
}

func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

func schemaURL(name string) string {
	return "urn:cairn:sal:" + name
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("catalog: schemas must be self-contained, refusing to load %s", url)
}

// isEmpty reports args that carry no arguments at all: nothing, or null.
func isEmpty(args json.RawMessage) bool {
	t := bytes.TrimSpace(args)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}
