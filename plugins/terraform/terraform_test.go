package terraform_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn/plugins"
	"cairn/plugins/terraform"
)

func newPlugin(t *testing.T) (*terraform.Plugin, string) {
	t.Helper()
	bin, ok := terraform.Find()
	if !ok {
		t.Skip("terraform is not on PATH: the terraform plugin is registered only where the CLI is installed")
	}
	work := t.TempDir()
	p, err := terraform.New(terraform.Config{Binary: bin, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	return p, work
}

// module uses only terraform_data, which is built into Terraform: nothing
// is downloaded.
const module = `{
  "variable": {"greeting": {"type": "string"}, "token": {"type": "string", "sensitive": true}},
  "resource": {"terraform_data": {"note": {"input": "${var.greeting}"}}},
  "output": {
    "greeting": {"value": "${terraform_data.note.output}"},
    "id": {"value": "${terraform_data.note.id}"},
    "token": {"value": "${var.token}", "sensitive": true}
  }
}`

func request(id, greeting string) plugins.Request {
	props, _ := json.Marshal(map[string]any{
		"config":    json.RawMessage(module),
		"variables": map[string]string{"greeting": greeting, "token": "s3cret"},
	})
	return plugins.Request{ResourceID: id, Type: terraform.TypeConfiguration, Properties: props}
}

func TestApplyAndDestroy(t *testing.T) {
	t.Parallel()
	p, work := newPlugin(t)
	ctx := context.Background()
	req := request("0123456789abcdef0123456789abcdef", "hello")
	var first map[string]any
	for i := range 2 {
		out, err := p.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var o map[string]any
		if err := json.Unmarshal(out, &o); err != nil {
			t.Fatal(err)
		}
		if o["greeting"] != "hello" || o["token"] != "(sensitive)" || o["id"] == "" {
			t.Fatalf("outputs %s", out)
		}
		if i == 1 && o["id"] != first["id"] {
			t.Fatalf("a repeated create replaced the resource: %v then %v", first["id"], o["id"])
		}
		first = o
	}
	if out, err := p.Observe(ctx, req); err != nil || !strings.Contains(string(out), "hello") {
		t.Fatalf("observe: %s %v", out, err)
	}
	dir := filepath.Join(work, req.ResourceID)
	for range 2 {
		if _, err := p.Destroy(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("working directory left: %v", err)
	}
	if _, err := p.Observe(ctx, req); !errors.Is(err, plugins.ErrNotFound) {
		t.Fatalf("observe after destroy: %v", err)
	}
}

func TestTerraformErrorsAreReported(t *testing.T) {
	t.Parallel()
	p, _ := newPlugin(t)
	props := json.RawMessage(`{"config": {"resource": {"terraform_data": {"x": {"input": "${var.missing}"}}}}}`)
	_, err := p.Create(context.Background(), plugins.Request{ResourceID: "r-bad", Type: terraform.TypeConfiguration, Properties: props})
	var re *terraform.RunError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("err = %v", err)
	}
	// Nothing was applied: destroy only removes the directory.
	if _, err := p.Destroy(context.Background(), plugins.Request{ResourceID: "r-bad", Type: terraform.TypeConfiguration, Properties: props}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(context.Background(), plugins.Request{ResourceID: "../x", Type: terraform.TypeConfiguration, Properties: props}); err == nil {
		t.Fatal("a resource id naming another directory was accepted")
	}
}
