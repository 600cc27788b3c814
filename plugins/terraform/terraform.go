// Package terraform is the plugin for descriptors that embed Terraform
// configuration: each resource is one Terraform root module, kept in a
// working directory of its own (named by the resource id), applied on create
// and destroyed on destroy with the Terraform CLI.
//
// The plugin exists only where the CLI does: Find reports whether it is on
// PATH, and the server registers the plugin only then. Terraform's own
// idempotence is what makes repeated calls safe: applying a configuration
// that is already in place changes nothing.
package terraform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"cairn/plugins"
)

// TypeConfiguration is the resource type: a Terraform root module.
const TypeConfiguration = "configuration"

// Files the plugin writes in a resource's working directory.
const (
	configFile    = "main.tf.json"
	variablesFile = "terraform.tfvars.json"
	stateFile     = "terraform.tfstate"
)

// Find returns the path of the terraform CLI on PATH.
func Find() (string, bool) {
	p, err := osexec.LookPath("terraform")
	return p, err == nil
}

// Config configures the plugin.
type Config struct {
	// Binary is the terraform CLI; see Find.
	Binary string
	// WorkDir holds one working directory per resource (with its state:
	// keep it on durable storage, and back it up like a database).
	WorkDir string
	// Env is added to Cairn's environment for every terraform run, e.g.
	// TF_PLUGIN_CACHE_DIR or a TF_CLI_CONFIG_FILE with provider mirrors.
	Env []string
	// StopGrace is how long terraform may take to stop after an interrupt
	// when a call is cancelled; default 30 s.
	StopGrace time.Duration
}

// Plugin runs terraform. It is safe for concurrent use: calls on one
// resource are serialised, calls on different resources run in parallel.
type Plugin struct {
	cfg Config

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// New checks the configuration.
func New(cfg Config) (*Plugin, error) {
	if cfg.Binary == "" {
		return nil, errors.New("terraform plugin: no terraform binary: install the Terraform CLI or leave the plugin out")
	}
	if _, err := os.Stat(cfg.Binary); err != nil {
		return nil, fmt.Errorf("terraform plugin: %w", err)
	}
	if cfg.WorkDir == "" {
		return nil, errors.New("terraform plugin: no working directory")
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o700); err != nil {
		return nil, fmt.Errorf("terraform plugin: %w", err)
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 30 * time.Second
	}
	return &Plugin{cfg: cfg, locks: map[string]*sync.Mutex{}}, nil
}

// ResourceTypes implements plugins.Plugin.
func (p *Plugin) ResourceTypes() []plugins.ResourceType {
	return []plugins.ResourceType{{
		Name: TypeConfiguration,
		Description: "A Terraform root module in JSON syntax, applied on create and destroyed on destroy; its outputs become the resource's. " +
			"Write Terraform's own interpolations as $${...} so that the descriptor does not read them as its expressions.",
		Schema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"required":["config"],` +
			`"properties":{"config":{"type":"object","minProperties":1,"description":"the module as Terraform JSON (main.tf.json)"},` +
			`"variables":{"type":"object","description":"values of the module's input variables (terraform.tfvars.json)"}}}`),
		UpdateInPlace: true,
	}}
}

type props struct {
	Config    json.RawMessage `json:"config"`
	Variables json.RawMessage `json:"variables,omitempty"`
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// dir is the resource's working directory.
func (p *Plugin) dir(id string) (string, error) {
	if !idPattern.MatchString(id) {
		return "", fmt.Errorf("resource id %q cannot name a directory", id)
	}
	return filepath.Join(p.cfg.WorkDir, id), nil
}

func (p *Plugin) lock(id string) func() {
	p.mu.Lock()
	l, ok := p.locks[id]
	if !ok {
		l = &sync.Mutex{}
		p.locks[id] = l
	}
	p.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Create implements plugins.Plugin: write the module and apply it.
func (p *Plugin) Create(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	defer p.lock(r.ResourceID)()
	dir, err := p.write(r)
	if err != nil {
		return nil, err
	}
	if err := p.run(ctx, dir, "init", "-input=false", "-no-color"); err != nil {
		return nil, err
	}
	if err := p.run(ctx, dir, "apply", "-auto-approve", "-input=false", "-no-color"); err != nil {
		return nil, err
	}
	return p.outputs(ctx, dir)
}

// Update implements plugins.Plugin: the module is written again and
// applied, so Terraform's own plan decides what changes in place.
func (p *Plugin) Update(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	return p.Create(ctx, r)
}

// Start implements plugins.Plugin: a module has nothing to start; the
// answer is its current outputs.
func (p *Plugin) Start(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	return p.Observe(ctx, r)
}

// Stop implements plugins.Plugin, like Start.
func (p *Plugin) Stop(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	return p.Observe(ctx, r)
}

// Destroy implements plugins.Plugin: destroy what the state holds, then
// remove the working directory. A resource never applied (or already
// destroyed) has no state, and only its directory is removed.
func (p *Plugin) Destroy(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	defer p.lock(r.ResourceID)()
	dir, err := p.dir(r.ResourceID)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err == nil {
		// Write the module again: destroy needs its provider requirements,
		// and the files may be gone while the state is not.
		if _, err := p.write(r); err != nil {
			return nil, err
		}
		if err := p.run(ctx, dir, "init", "-input=false", "-no-color"); err != nil {
			return nil, err
		}
		if err := p.run(ctx, dir, "destroy", "-auto-approve", "-input=false", "-no-color"); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("remove the working directory: %w", err)
	}
	return nil, nil
}

// Observe implements plugins.Plugin: the module's outputs, or ErrNotFound
// when it was never applied.
func (p *Plugin) Observe(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	defer p.lock(r.ResourceID)()
	dir, err := p.dir(r.ResourceID)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no Terraform state for resource %s: %w", r.ResourceID, plugins.ErrNotFound)
	}
	return p.outputs(ctx, dir)
}

// write puts the module and its variables in the working directory.
func (p *Plugin) write(r plugins.Request) (string, error) {
	dir, err := p.dir(r.ResourceID)
	if err != nil {
		return "", err
	}
	var pr props
	if err := json.Unmarshal(r.Properties, &pr); err != nil || len(pr.Config) == 0 {
		return "", errors.New(`properties must be {"config": {…Terraform JSON…}, "variables": {…}}`)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	files := map[string][]byte{configFile: pr.Config}
	if len(pr.Variables) > 0 {
		files[variablesFile] = pr.Variables
	} else if err := os.Remove(filepath.Join(dir, variablesFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	for name, data := range files {
		if err := writeAtomic(filepath.Join(dir, name), data); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// outputs reads the module's outputs as {name: value}. Outputs Terraform
// marks sensitive are given as "(sensitive)": outputs are recorded in the
// event log, which must not hold secrets.
func (p *Plugin) outputs(ctx context.Context, dir string) (json.RawMessage, error) {
	out, err := p.output(ctx, dir, "output", "-json", "-no-color")
	if err != nil {
		return nil, err
	}
	var all map[string]struct {
		Sensitive bool            `json:"sensitive"`
		Value     json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(out, &all); err != nil {
		return nil, fmt.Errorf("terraform output -json gave %q: %w", snippet(out), err)
	}
	res := make(map[string]json.RawMessage, len(all))
	for name, o := range all {
		if o.Sensitive {
			res[name] = json.RawMessage(`"(sensitive)"`)
			continue
		}
		res[name] = o.Value
	}
	return json.Marshal(res)
}

// RunError is a terraform command that failed, with the end of what it
// printed (where Terraform explains itself).
type RunError struct {
	Args   []string
	Err    error
	Output string
}

func (e *RunError) Error() string {
	return fmt.Sprintf("terraform %s failed (%v): %s", strings.Join(e.Args, " "), e.Err, e.Output)
}

func (e *RunError) Unwrap() error { return e.Err }

func (p *Plugin) run(ctx context.Context, dir string, args ...string) error {
	_, err := p.output(ctx, dir, args...)
	return err
}

func (p *Plugin) output(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := osexec.CommandContext(ctx, p.cfg.Binary, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1"), p.cfg.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Interrupt rather than kill, so terraform can release its state lock
	// and record what it did; kill the group only if it does not stop.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = p.cfg.StopGrace
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("terraform %s: %w", args[0], ctx.Err())
		}
		return nil, &RunError{Args: args, Err: err, Output: lastLines(stderr.String()+stdout.String(), 12)}
	}
	return stdout.Bytes(), nil
}

// lastLines keeps the end of terraform's output, without the noise of
// empty lines and box drawing.
func lastLines(s string, n int) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(strings.Trim(l, "│╷╵ "))
		if l != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, " / ")
}

func snippet(b []byte) string {
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
