package tfprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"cairn/graph/client"
)

// Every resource and data source has a schema the framework accepts, with a
// description on every attribute (the registry docs are made from them).
func TestSchemas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := New("test")()
	var ps provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &ps)
	if ps.Diagnostics.HasError() {
		t.Fatal(ps.Diagnostics)
	}
	names := map[string]bool{}
	for _, f := range p.Resources(ctx) {
		r := f()
		var md resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "cairn"}, &md)
		var sr resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &sr)
		if d := sr.Schema.ValidateImplementation(ctx); d.HasError() || sr.Diagnostics.HasError() {
			t.Errorf("%s: %v %v", md.TypeName, d, sr.Diagnostics)
		}
		for name, a := range sr.Schema.Attributes {
			if a.GetDescription() == "" {
				t.Errorf("%s.%s has no description", md.TypeName, name)
			}
		}
		names[md.TypeName] = true
	}
	for _, f := range p.DataSources(ctx) {
		d := f()
		var md datasource.MetadataResponse
		d.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "cairn"}, &md)
		var sr datasource.SchemaResponse
		d.Schema(ctx, datasource.SchemaRequest{}, &sr)
		if diags := sr.Schema.ValidateImplementation(ctx); diags.HasError() {
			t.Errorf("data %s: %v", md.TypeName, diags)
		}
		names["data."+md.TypeName] = true
	}
	for _, want := range []string{"cairn_service", "cairn_template", "cairn_tenant", "cairn_user", "cairn_api_token",
		"cairn_location", "cairn_node_labels", "cairn_schedule", "data.cairn_template", "data.cairn_nodes",
		"data.cairn_service", "data.cairn_location"} {
		if !names[want] {
			t.Errorf("no %s", want)
		}
	}
}

// The endpoint and token come from the configuration, then the
// environment, then the cairn CLI's stored login.
func TestLogin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cairn"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cairn", "config.json"), []byte(`{"server":"http://stored:1","token":"cairn_stored"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, endpoint, token string
		env                   map[string]string
		wantEndpoint, wantTok string
	}{
		{"configured", "http://given:1", "cairn_given", nil, "http://given:1", "cairn_given"},
		{"environment", "", "", map[string]string{EndpointEnv: "http://env:1", TokenEnv: "cairn_env"}, "http://env:1", "cairn_env"},
		{"stored login", "", "", nil, "http://stored:1", "cairn_stored"},
		{"mixed", "http://given:1", "", map[string]string{}, "http://given:1", "cairn_stored"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"XDG_CONFIG_HOME": dir}
			for k, v := range tc.env {
				env[k] = v
			}
			p := &Provider{getenv: func(k string) string { return env[k] }}
			e, tok, err := p.login(tc.endpoint, tc.token)
			if err != nil || e != tc.wantEndpoint || tok != tc.wantTok {
				t.Fatalf("login = %q %q %v, want %q %q", e, tok, err, tc.wantEndpoint, tc.wantTok)
			}
		})
	}
}

// An API error's field names the attribute the diagnostic points at.
func TestErrorsNameTheAttribute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		field string
		want  path.Path
		ok    bool
	}{
		{"name", path.Root("name"), true},
		{"templateVersion", path.Root("version"), true},
		{"variables.port", path.Root("variables").AtMapKey("port"), true},
		{"resources[0].requests", path.Path{}, false},
		{"", path.Path{}, false},
	}
	for _, tc := range tests {
		got, ok := attributeOf(tc.field, serviceFields)
		if ok != tc.ok || ok && !got.Equal(tc.want) {
			t.Errorf("attributeOf(%q) = %v %v, want %v %v", tc.field, got, ok, tc.want, tc.ok)
		}
	}
	var diags diag.Diagnostics
	addAPIError(&diags, "create the service", client.Errors{{Message: "variables.port: must match ^[0-9]+$",
		Extensions: map[string]any{"code": "INVALID_INPUT", "field": "variables.port"}}}, serviceFields)
	if len(diags) != 1 || diags[0].Summary() != "Cannot create the service (INVALID_INPUT)" {
		t.Fatalf("diagnostics %v", diags)
	}
	if wp, ok := diags[0].(diag.DiagnosticWithPath); !ok || !wp.Path().Equal(path.Root("variables").AtMapKey("port")) {
		t.Fatalf("the diagnostic is not on variables[\"port\"]: %v", diags[0])
	}
}

// Variable values travel as text in Terraform and as typed JSON in the API.
func TestVariableConversion(t *testing.T) {
	t.Parallel()
	tests := []struct{ typ, text, want string }{
		{"STRING", "42", `"42"`},
		{"INTEGER", "42", `42`},
		{"BOOLEAN", "true", `true`},
		{"OBJECT", `{"a":1}`, `{"a":1}`},
		{"", "anything", `"anything"`},
	}
	for _, tc := range tests {
		got, err := client.VariableValue(tc.typ, tc.text)
		if err != nil || string(got) != tc.want {
			t.Errorf("VariableValue(%s, %q) = %s %v, want %s", tc.typ, tc.text, got, err, tc.want)
		}
		if back := client.VariableText(got); back != tc.text {
			t.Errorf("VariableText(%s) = %q, want %q", got, back, tc.text)
		}
	}
	if _, err := client.VariableValue("INTEGER", "forty"); err == nil {
		t.Error("forty is an integer?")
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	var none *timeoutsModel
	if d, err := none.wait("create"); err != nil || d != DefaultWait {
		t.Fatalf("default: %v %v", d, err)
	}
	tm := &timeoutsModel{Create: types.StringValue("90s"), Update: types.StringValue("soon")}
	if d, err := tm.wait("create"); err != nil || d != 90*time.Second {
		t.Fatalf("create: %v %v", d, err)
	}
	if _, err := tm.wait("update"); err == nil {
		t.Fatal("soon is a duration?")
	}
}

// A query that declares $cw waits for the highest cursor the provider's
// writes returned, so a data source read right after a resource was made
// sees it; a query that passes its own cw keeps it.
func TestReadsOwnWrites(t *testing.T) {
	t.Parallel()
	var seen []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Query     string
			Variables map[string]any
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Error(err)
		}
		seen = append(seen, req.Variables)
		switch {
		case strings.Contains(req.Query, "createTenant"):
			fmt.Fprint(w, `{"data": {"createTenant": {"tenant": {"id": "acme"}, "cursor": "812-7"}}}`)
		case strings.HasPrefix(req.Query, "mutation"):
			fmt.Fprint(w, `{"data": {"createUser": {"user": {"id": "u1"}, "cursor": "790-9"}}}`)
		default:
			fmt.Fprint(w, `{"data": {"tenant": {"id": "acme"}}}`)
		}
	}))
	defer srv.Close()
	api := &API{client: client.New(srv.URL, "t", srv.Client()), timeout: 5 * time.Second}
	ctx := context.Background()
	read := `query($id: ID!, $cw: Cursor) { tenant(id: $id, consistentWith: $cw) { id } }`
	steps := []struct {
		query string
		vars  map[string]any
		want  any
	}{
		{read, map[string]any{"id": "acme"}, nil},
		{`mutation { createTenant(input: {id: "acme", name: "Acme"}) { tenant { id } cursor } }`, nil, "absent"},
		{read, map[string]any{"id": "acme"}, "812-7"},
		{`mutation { createUser(input: {name: "n", role: OPERATOR}) { user { id } cursor } }`, nil, "absent"},
		{read, map[string]any{"id": "acme"}, "812-7"}, // an older cursor does not move it back
		{read, map[string]any{"id": "acme", "cw": "900-1"}, "900-1"},
	}
	for i, s := range steps {
		var out map[string]any
		if err := api.Do(ctx, s.query, s.vars, &out); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if len(out) == 0 {
			t.Fatalf("step %d: the answer was not decoded", i)
		}
		got, given := seen[i]["cw"]
		if s.want == "absent" {
			if given {
				t.Errorf("step %d: a mutation was sent cw %v", i, got)
			}
			continue
		}
		if !given || got != s.want {
			t.Errorf("step %d: cw = %v (sent: %v), want %v", i, got, given, s.want)
		}
	}
}
