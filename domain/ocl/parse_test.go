package ocl

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"cairn/domain"
)

func TestParseSyntaxErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc    string
		format       string
		line, column int
		msg          string
	}{
		{"json trailing comma", "{\n  \"apiVersion\": \"cairn/v1\",\n}", "JSON", 3, 1, "invalid character '}'"},
		{"json duplicate key", "{\"metadata\": {},\n \"metadata\": {}}", "JSON", 2, 11, `duplicate key "metadata"`},
		{"json truncated", "{\"a\": [1, 2", "JSON", 1, 11, "unexpected end of input"},
		{"json trailing data", "{} {}", "JSON", 1, 4, "unexpected data after the descriptor"},
		{"json number out of range", "{\"a\": 1e999}", "JSON", 1, 11, "out of range"},
		{"yaml bad indentation", "apiVersion: cairn/v1\nmetadata:\n  name: x\n   version: 1\n", "YAML", 3, 9, "mapping value is not allowed"},
		{"yaml duplicate key", "a: 1\nb: 2\na: 3\n", "YAML", 3, 1, `mapping key "a" already defined`},
		{"yaml unclosed flow", "resources: [a, b\n", "YAML", 1, 12, "not found"},
		{"yaml two documents", "a: 1\n---\nb: 2\n", "YAML", 2, 1, "found 2 documents"},
		{"yaml infinity", "a: [1, .inf]\n", "YAML", 0, 0, "a[1]: +Inf has no JSON equivalent"},
		{"empty", " \n\t\n", "", 0, 0, "descriptor is empty"},
		{"yaml only comments", "# nothing\n", "YAML", 0, 0, "descriptor is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.doc))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %T %v, want *SyntaxError", err, err)
			}
			if se.Format != tc.format || se.Line != tc.line || se.Column != tc.column || !strings.Contains(se.Message, tc.msg) {
				t.Errorf("got %s %d:%d %q, want %s %d:%d ...%s...", se.Format, se.Line, se.Column, se.Message, tc.format, tc.line, tc.column, tc.msg)
			}
			if !errors.Is(err, domain.ErrInvalid) {
				t.Errorf("not domain.ErrInvalid")
			}
		})
	}
}

func TestParseRefusesHugeAndAliasBombs(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte(" "), MaxDocumentSize+1)
	if _, err := Parse(big); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized: %v", err)
	}
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		p := "*a" + string(rune('0'+i-1))
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(p+", ", 9) + p + "]\n")
	}
	if _, err := Parse([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "aliases") {
		t.Errorf("alias bomb: %v", err)
	}
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if _, err := Parse([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("deep nesting: %v", err)
	}
}

func TestParseShapeErrorsAreProblems(t *testing.T) {
	t.Parallel()
	cases := []struct{ doc, path, msg string }{
		{"[1, 2]", "", "must be an object, got array"},
		{head + "resources: {a: 1}\n", "resources", "must be an array, got object"},
		{head + "resources: [{name: a, plugin: noop, type: thing, dependsOn: b}]\n", "resources[0].dependsOn", "must be an array, got string"},
		{head + "variables: {v: {type: string, required: 'yes'}}\nresources: [{name: a, plugin: noop, type: thing}]\n", "variables.v.required", "must be a boolean, got string"},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.doc))
		if ps := problemsOf(t, err); !hasProblem(ps, tc.path, tc.msg) {
			t.Errorf("%q: got %v, want %s: %s", tc.doc, err, tc.path, tc.msg)
		}
	}
}

const equivYAML = `
apiVersion: cairn/v1
metadata:
  name: db
  version: 2.0.0
variables:
  size: {type: number, default: 1.0}
  tags: {type: object, default: {b: 2, a: "<x>"}}
resources:
  - name: disk
    plugin: agent
    type: directory
    properties: {path: /data, mode: "0700", quota: 1000.0, ratio: 0.50}
`

const equivJSON = `{
  "resources": [{"type": "directory", "plugin": "agent", "name": "disk",
                 "properties": {"quota": 1e3, "ratio": 5e-1, "mode": "0700", "path": "/data"}}],
  "variables": {"tags": {"default": {"a": "<x>", "b": 2.0}, "type": "object"},
                "size": {"type": "number", "default": 1}},
  "metadata": {"version": "2.0.0", "name": "db"},
  "apiVersion": "cairn/v1"
}`

func TestYAMLAndJSONAreEquivalent(t *testing.T) {
	t.Parallel()
	y := mustParse(t, equivYAML)
	j := mustParse(t, equivJSON)
	cy, err := y.CanonicalJSON()
	if err != nil {
		t.Fatal(err)
	}
	cj, _ := j.CanonicalJSON()
	if !bytes.Equal(cy, cj) {
		t.Fatalf("canonical forms differ:\n%s\n%s", cy, cj)
	}
	dy, _ := y.Digest()
	dj, _ := j.Digest()
	if dy != dj || len(dy) != 64 {
		t.Fatalf("digests %q and %q", dy, dj)
	}
	// Parsing the canonical form again is a fixed point.
	again := mustParse(t, string(cy))
	if da, _ := again.Digest(); da != dy {
		t.Errorf("digest of re-parsed canonical form changed")
	}
	if !strings.Contains(string(cy), `"a":"<x>"`) {
		t.Errorf("canonical JSON escapes HTML: %s", cy)
	}
	// Any change in content changes the digest.
	other := mustParse(t, strings.Replace(equivYAML, "/data", "/srv", 1))
	if do, _ := other.Digest(); do == dy {
		t.Errorf("different descriptors share a digest")
	}
}

func TestValidateSeesChangesAfterParse(t *testing.T) {
	t.Parallel()
	d := mustParse(t, head+"resources: [{name: a, plugin: noop, type: thing}]\n")
	if err := d.Validate(nil); err != nil {
		t.Fatal(err)
	}
	d.Resources[0].Name = "Bad Name"
	if ps := problemsOf(t, d.Validate(nil)); !hasProblem(ps, "resources[0].name", "lowercase") {
		t.Errorf("got %v", ps)
	}
	built := &Descriptor{APIVersion: APIVersion, Metadata: Metadata{Name: "x", Version: "1.0.0"},
		Resources: []Resource{{Name: "a", Plugin: "noop", Type: "thing", Properties: raw(`{"n": 1}`)}}}
	if err := built.Validate(catalog); err != nil {
		t.Errorf("descriptor built in code: %v", err)
	}
	if ps := problemsOf(t, (&Descriptor{}).Validate(nil)); !hasProblem(ps, "apiVersion", "is required") || !hasProblem(ps, "metadata.name", "is required") {
		t.Errorf("empty descriptor: %v", ps)
	}
}

func TestSchemaIsPublished(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := json.Unmarshal(Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" || doc["$id"] != SchemaID {
		t.Errorf("$schema %v, $id %v", doc["$schema"], doc["$id"])
	}
	s := Schema()
	s[0] = 'X'
	if Schema()[0] != '{' {
		t.Errorf("Schema returns shared bytes")
	}
}

func TestExtensionFieldsHoldAnchors(t *testing.T) {
	t.Parallel()
	d := mustParse(t, head+`x-common: &common {plugin: noop, type: thing}
resources:
  - {name: a, <<: *common}
  - {name: b, <<: *common, dependsOn: [a]}
`)
	if err := d.Validate(catalog); err != nil {
		t.Fatal(err)
	}
	if d.Resources[1].Plugin != "noop" || d.Resources[1].Type != "thing" {
		t.Errorf("merge key not applied: %+v", d.Resources[1])
	}
	plain := mustParse(t, head+"resources: [{name: a, plugin: noop, type: thing}, {name: b, plugin: noop, type: thing, dependsOn: [a]}]\n")
	d1, _ := d.Digest()
	d2, _ := plain.Digest()
	if d1 != d2 {
		t.Errorf("extension fields changed the digest")
	}
}
