package tfprovider_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"cairn/graph/client"
	"cairn/internal/testdb"
	"cairn/internal/testproc"
	"cairn/tfprovider"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// noteTemplate is a descriptor whose one resource is a file kept by the
// filestore example plugin (an out-of-process plugin), which updates in
// place.
const noteTemplate = `apiVersion: cairn/v1
metadata: {name: note, version: 1.0.0, vendor: Example}
variables:
  greeting: {type: string, default: hello}
  copies: {type: integer, default: 1}
  secret: {type: string, sensitive: true, required: false}
resources:
  - name: note
    plugin: filestore
    type: file
    properties: {name: note.txt, content: "${var.greeting} x${var.copies}"}
outputs:
  path: {value: "${resource.note.outputs.path}"}
`

var adminToken = regexp.MustCompile(`(?m)^\s+(cairn_\S+)\s*$`)

// cairnd starts a server on a fresh database with the filestore plugin
// keeping its files under root, and returns its URL and an admin token.
func cairnd(t *testing.T, root string) (string, string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the filestore example plugin is a Python program")
	}
	bins := t.TempDir()
	if err := testproc.Build(bins, "cairnd"); err != nil {
		t.Fatal(err)
	}
	plugin, err := filepath.Abs("../examples/plugins/filestore/filestore.py")
	if err != nil {
		t.Fatal(err)
	}
	pluginsFile := filepath.Join(t.TempDir(), "plugins.yaml")
	if err := os.WriteFile(pluginsFile, fmt.Appendf(nil, "exec:\n  - name: filestore\n    command: [%q, %q, %q]\n", python, plugin, root), 0o600); err != nil {
		t.Fatal(err)
	}
	db := testdb.New(t)
	addr := testproc.FreeAddr(t)
	srv := testproc.Start(t, filepath.Join(bins, "cairnd"), []string{"DATABASE_URL=" + db.ConnString}, "serve", "--listen", addr,
		"--data-dir", t.TempDir(), "--log-format", "json", "--plugins", pluginsFile)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cairnd output:\n%s", srv.Output())
		}
		_ = srv.Stop(time.Minute)
	})
	url := "http://" + addr
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if resp, err := http.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if m := adminToken.FindStringSubmatch(srv.Output()); resp.StatusCode == http.StatusOK && m != nil {
				return url, m[1]
			}
		}
		if time.Now().After(deadline) || !srv.Running() {
			t.Fatalf("cairnd did not become ready with an admin token\n%s", srv.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func providers() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){"cairn": providerserver.NewProtocol6WithError(tfprovider.New("test")())}
}

// config is the Terraform configuration of the test: a template, a tenant,
// a location, a user with a token, and two services of the template.
func config(url, token, greeting string) string {
	return fmt.Sprintf(`
provider "cairn" {
  endpoint = %q
  token    = %q
}

resource "cairn_template" "note" {
  descriptor = %q
}

resource "cairn_tenant" "acme" {
  id   = "acme"
  name = "Acme"
}

resource "cairn_location" "par" {
  id          = "par-1"
  name        = "Paris 1"
  description = "first floor"
}

resource "cairn_user" "robot" {
  name      = "deploy robot"
  role      = "TENANT_ADMIN"
  tenant_id = cairn_tenant.acme.id
}

resource "cairn_api_token" "robot" {
  user_id = cairn_user.robot.id
}

resource "cairn_service" "a" {
  name      = "notes-a"
  tenant_id = cairn_tenant.acme.id
  template  = cairn_template.note.name
  version   = cairn_template.note.version
  variables = { greeting = %q, copies = "2" }
  sensitive_variables = { secret = "s3cret" }
}

resource "cairn_service" "b" {
  name      = "notes-b"
  tenant_id = cairn_tenant.acme.id
  template  = cairn_template.note.name
  version   = cairn_template.note.version
  running   = false
}

data "cairn_template" "note" {
  name       = "note"
  depends_on = [cairn_template.note]
}
`, url, token, strings.ReplaceAll(noteTemplate, "${", "$${"), greeting)
}

// TestAcceptance drives the provider with the terraform CLI against a real
// cairnd: create, update in place, import, drift after a change made
// elsewhere, a service removed elsewhere planned again, destroy.
func TestAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: builds and runs cairnd and the terraform CLI")
	}
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Skip("the terraform CLI is not on PATH: the provider's acceptance tests need it")
	}
	root := t.TempDir()
	url, token := cairnd(t, root)
	api := client.New(url, token, nil)
	ctx := context.Background()
	serviceID := func(s *terraform.State) string { return s.RootModule().Resources["cairn_service.a"].Primary.ID }
	var idA string
	fileHas := func(want string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			path := s.RootModule().Resources["cairn_service.a"].Primary.Attributes["outputs.path"]
			b, err := os.ReadFile(path)
			if err != nil || string(b) != want {
				return fmt.Errorf("the note at %q reads %q (%v), want %q", path, b, err, want)
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		IsUnitTest:               true, // runs in make test wherever terraform is installed
		ProtoV6ProviderFactories: providers(),
		Steps: []resource.TestStep{
			{
				Config: config(url, token, "hello"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("cairn_service.a", "status", "RUNNING"),
					resource.TestCheckResourceAttr("cairn_service.a", "revision", "1"),
					resource.TestCheckResourceAttr("cairn_service.b", "status", "REGISTERED"),
					resource.TestCheckResourceAttr("cairn_template.note", "status", "PUBLISHED"),
					resource.TestCheckResourceAttr("cairn_location.par", "status", "ACTIVE"),
					resource.TestCheckResourceAttr("data.cairn_template.note", "variables.copies", "INTEGER"),
					resource.TestCheckResourceAttrSet("cairn_api_token.robot", "token"),
					resource.TestCheckResourceAttr("cairn_api_token.robot", "role", "TENANT_ADMIN"),
					fileHas("hello x2"),
					func(s *terraform.State) error { idA = serviceID(s); return nil },
				),
			},
			{
				// A new greeting is an update in place, not a replacement.
				Config: config(url, token, "bonjour"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("cairn_service.a", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("cairn_service.b", plancheck.ResourceActionNoop),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("cairn_service.a", "revision", "2"),
					resource.TestCheckResourceAttr("cairn_service.a", "status", "RUNNING"),
					fileHas("bonjour x2"),
					func(s *terraform.State) error {
						if id := serviceID(s); id != idA {
							return fmt.Errorf("service a has id %s, was %s: it was replaced", id, idA)
						}
						return nil
					},
				),
			},
			{
				// Import by name within the tenant.
				ResourceName:            "cairn_service.a",
				ImportState:             true,
				ImportStateId:           "acme/notes-a",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"variables", "sensitive_variables", "timeouts", "flavor"},
			},
			{
				// Changed in the portal: the plan shows the difference.
				PreConfig: func() {
					if err := api.Do(ctx, `mutation($id: ID!) { updateService(input: {serviceId: $id, variables: {greeting: "changed elsewhere"}}) { cursor } }`,
						map[string]any{"id": idA}, nil); err != nil {
						t.Fatal(err)
					}
					waitStatus(t, api, idA, "RUNNING", 3)
				},
				Config:             config(url, token, "bonjour"),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Applying puts it back.
				Config: config(url, token, "bonjour"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("cairn_service.a", "revision", "4"),
					fileHas("bonjour x2"),
				),
			},
			{
				// Removed outside Terraform: planned for creation again.
				PreConfig: func() {
					for _, m := range []string{"stopService", "removeService"} {
						if err := api.Do(ctx, `mutation($id: ID!) { `+m+`(input: {serviceId: $id}) { cursor } }`, map[string]any{"id": idA}, nil); err != nil {
							t.Fatal(err)
						}
						waitStatus(t, api, idA, map[string]string{"stopService": "STOPPED", "removeService": "REMOVED"}[m], 4)
					}
				},
				Config: config(url, token, "bonjour"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("cairn_service.a", plancheck.ResourceActionCreate),
				}},
				Check: resource.TestCheckResourceAttr("cairn_service.a", "status", "RUNNING"),
			},
		},
		CheckDestroy: func(s *terraform.State) error {
			entries, err := os.ReadDir(root)
			if err != nil || len(entries) != 0 {
				return fmt.Errorf("left in the plugin's store after destroy: %v %v", entries, err)
			}
			return nil
		},
	})
}

// waitStatus waits until the service is in status at the revision.
func waitStatus(t *testing.T, api *client.Client, id, status string, revision int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var out struct {
			Service *struct {
				Status   string
				Revision int
			}
		}
		err := api.Do(context.Background(), `query($id: ID!) { service(id: $id) { status revision } }`, map[string]any{"id": id}, &out)
		if err == nil && out.Service != nil && out.Service.Status == status && out.Service.Revision == revision {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("service %s: %+v %v, want %s at revision %d", id, out.Service, err, status, revision)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
