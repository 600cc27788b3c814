package agent_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"cairn/agent"
)

// Every document the agent sends is valid against the API's schema, so an
// agent and a control plane built from one tree understand each other.
func TestOperationsMatchSchema(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../graph/schema/*.graphqls")
	if err != nil || len(files) == 0 {
		t.Fatalf("schema files: %v, %v", files, err)
	}
	var sources []*ast.Source
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, &ast.Source{Name: f, Input: string(b)})
	}
	schema, err := gqlparser.LoadSchema(sources...)
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range agent.Operations {
		q, errs := gqlparser.LoadQueryWithRules(schema, doc, nil) // nil: the default rules
		if len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
			continue
		}
		if len(q.Operations) != 1 || q.Operations[0].Name != name {
			t.Errorf("%s: the document's operation is not named %s", name, name)
		}
	}
}
