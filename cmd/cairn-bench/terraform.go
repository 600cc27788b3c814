package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"cairn/tfprovider"
)

// terraformServices is how many cairn_service resources the apply makes.
const terraformServices = 20

// noteDescriptor is the template the Terraform benchmark deploys: one small
// file kept by the filestore example plugin (an out-of-process plugin).
const noteDescriptor = `apiVersion: cairn/v1
metadata: {name: bench-note, version: 1.0.0, vendor: Bench}
variables:
  greeting: {type: string, default: hello}
resources:
  - name: note
    plugin: filestore
    type: file
    properties: {name: note.txt, content: "$${var.greeting}"}
`

// benchTerraform measures the provider as an operator uses it: cairnd and
// terraform-provider-cairn built from this tree, the terraform CLI with a
// dev_overrides configuration, and `terraform apply` of 20 services from
// nothing to all running, then a plan right after, which must show no
// change. Skipped (no keys) where terraform or python3 is not installed.
func benchTerraform(ctx context.Context, e *env) (result, error) {
	tf, err := exec.LookPath("terraform")
	if err != nil {
		e.log.Warn().Msg("terraform is not on PATH: the Terraform benchmark is skipped")
		return result{}, nil
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		e.log.Warn().Msg("python3 is not on PATH: the Terraform benchmark is skipped")
		return result{}, nil
	}
	work, err := os.MkdirTemp("", "cairn-bench-terraform-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	plugins := filepath.Join(work, "plugins.yaml")
	filestore, err := filepath.Abs("examples/plugins/filestore/filestore.py")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(plugins, fmt.Appendf(nil, "exec:\n  - name: filestore\n    command: [%q, %q, %q]\n",
		python, filestore, filepath.Join(work, "files")), 0o600); err != nil {
		return nil, err
	}
	srv, err := startCairnd(ctx, e, work, "bench_terraform", []string{"./cmd/terraform-provider-cairn"}, "--plugins", plugins)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	url, token, bin := srv.url, srv.token, srv.bin

	cliConfig := filepath.Join(work, "terraformrc")
	if err := os.WriteFile(cliConfig, fmt.Appendf(nil, "provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n",
		tfprovider.Address, bin), 0o600); err != nil {
		return nil, err
	}
	dir := filepath.Join(work, "config")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	mainTF := fmt.Sprintf(`terraform {
  required_providers {
    cairn = { source = %q }
  }
}

provider "cairn" {
  endpoint = %q
  token    = %q
}

resource "cairn_template" "note" {
  descriptor = <<-EOT
%s
  EOT
}

resource "cairn_tenant" "bench" {
  id   = "bench"
  name = "Bench"
}

resource "cairn_service" "note" {
  count     = %d
  name      = "note-${count.index}"
  tenant_id = cairn_tenant.bench.id
  template  = cairn_template.note.name
  version   = cairn_template.note.version
  variables = { greeting = "hello ${count.index}" }
}
`, tfprovider.Address, url, token, indent(noteDescriptor, "    "), terraformServices)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(mainTF), 0o600); err != nil {
		return nil, err
	}
	run := func(args ...string) (time.Duration, int, error) {
		cmd := exec.CommandContext(ctx, tf, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+cliConfig, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return took, exit.ExitCode(), fmt.Errorf("terraform %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return took, 0, err
	}
	apply, _, err := run("apply", "-auto-approve", "-input=false", "-no-color", "-parallelism=20")
	if err != nil {
		return nil, err
	}
	plan, code, err := run("plan", "-detailed-exitcode", "-input=false", "-no-color")
	if code == 2 {
		return nil, fmt.Errorf("the plan right after the apply is not empty: %v", err)
	}
	if err != nil {
		return nil, err
	}
	if _, _, err := run("destroy", "-auto-approve", "-input=false", "-no-color", "-parallelism=20"); err != nil {
		return nil, err
	}
	return result{
		"terraform_apply_20_services_s": round(apply.Seconds(), 2),
		"terraform_noop_plan_s":         round(plan.Seconds(), 2),
	}, nil
}

var firstToken = regexp.MustCompile(`(?m)^\s+(cairn_\S+)\s*$`)

// waitReady waits until cairnd answers /readyz and has printed its first
// administrator token.
func waitReady(ctx context.Context, url string, logs *bytes.Buffer) (string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if m := firstToken.FindStringSubmatch(logs.String()); resp.StatusCode == http.StatusOK && m != nil {
				return m[1], nil
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("cairnd did not become ready with an administrator token:\n%s", logs.String())
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
