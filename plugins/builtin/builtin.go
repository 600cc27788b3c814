// Package builtin assembles the plugin registry a server runs with from its
// configuration: the agent plugin (when the server has a way to run jobs),
// one http plugin per configured endpoint, one out-of-process plugin per
// configured executable, and the terraform plugin where the Terraform CLI is
// installed.
package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"cairn/plugins"
	"cairn/plugins/agent"
	"cairn/plugins/exec"
	httpplugin "cairn/plugins/http"
	"cairn/plugins/terraform"
)

// Config is the plugins part of a server's configuration.
type Config struct {
	// HTTP lists endpoints, each registered as a plugin of its own name.
	HTTP []HTTPEndpoint `json:"http,omitempty" yaml:"http,omitempty"`
	// Exec lists out-of-process plugins.
	Exec []Executable `json:"exec,omitempty" yaml:"exec,omitempty"`
	// Terraform configures the terraform plugin, registered as "terraform"
	// when the CLI is found.
	Terraform Terraform `json:"terraform,omitzero" yaml:"terraform,omitempty"`
}

// HTTPEndpoint configures one http plugin.
type HTTPEndpoint struct {
	Name     string `json:"name" yaml:"name"`
	Endpoint string `json:"endpoint" yaml:"endpoint"`
	// SecretFile holds the HMAC key (surrounding white space ignored), so the
	// key stays out of the configuration file.
	SecretFile  string        `json:"secretFile" yaml:"secretFile"`
	Timeout     time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	MaxAttempts int           `json:"maxAttempts,omitempty" yaml:"maxAttempts,omitempty"`
}

// Executable configures one out-of-process plugin.
type Executable struct {
	Name    string   `json:"name" yaml:"name"`
	Command []string `json:"command" yaml:"command"`
	Env     []string `json:"env,omitempty" yaml:"env,omitempty"`
	Dir     string   `json:"dir,omitempty" yaml:"dir,omitempty"`
}

// Terraform configures the terraform plugin.
type Terraform struct {
	// Disabled leaves the plugin out even where the CLI is installed.
	Disabled bool `json:"disabled,omitempty" yaml:"disabled,omitempty"`
	// Binary overrides the terraform found on PATH.
	Binary string `json:"binary,omitempty" yaml:"binary,omitempty"`
	// WorkDir holds the per-resource working directories and their state.
	WorkDir string   `json:"workDir,omitempty" yaml:"workDir,omitempty"`
	Env     []string `json:"env,omitempty" yaml:"env,omitempty"`
}

// Deps are what the configuration cannot express: how the agent plugin
// reaches nodes. With a nil Runner the agent plugin is left out.
type Deps struct {
	AgentRunner agent.JobRunner
	AgentNodes  agent.NodeLister
	// DataDir is where the terraform plugin keeps its working directories
	// when Terraform.WorkDir is empty.
	DataDir string
	Log     zerolog.Logger
}

// Registry builds the registry. On error, plugins already started are
// closed.
func Registry(ctx context.Context, cfg Config, deps Deps) (_ *plugins.Registry, err error) {
	reg := plugins.NewRegistry()
	defer func() {
		if err != nil {
			_ = reg.Close()
		}
	}()
	if deps.AgentRunner != nil {
		if deps.AgentNodes == nil {
			return nil, errors.New("plugins: the agent plugin needs a node lister")
		}
		ag, err := agent.New(agent.Config{Runner: deps.AgentRunner, Nodes: deps.AgentNodes})
		if err != nil {
			return nil, err
		}
		if err := reg.Register("agent", ag); err != nil {
			return nil, err
		}
	}
	for i, h := range cfg.HTTP {
		secret, err := os.ReadFile(h.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("plugins: http[%d] (%s): read the secret: %w", i, h.Name, err)
		}
		p, err := httpplugin.New(ctx, httpplugin.Config{
			Endpoint: h.Endpoint, Secret: []byte(strings.TrimSpace(string(secret))),
			Timeout: h.Timeout, MaxAttempts: h.MaxAttempts,
		})
		if err != nil {
			return nil, fmt.Errorf("plugins: http[%d] (%s): %w", i, h.Name, err)
		}
		if err := reg.Register(h.Name, p); err != nil {
			return nil, err
		}
	}
	for i, x := range cfg.Exec {
		p, err := exec.New(ctx, exec.Config{Command: x.Command, Env: x.Env, Dir: x.Dir, Log: deps.Log})
		if err != nil {
			return nil, fmt.Errorf("plugins: exec[%d] (%s): %w", i, x.Name, err)
		}
		if err := reg.Register(x.Name, p); err != nil {
			_ = p.Close()
			return nil, err
		}
	}
	if !cfg.Terraform.Disabled {
		bin := cfg.Terraform.Binary
		if bin == "" {
			bin, _ = terraform.Find()
		}
		if bin != "" {
			dir := cfg.Terraform.WorkDir
			if dir == "" && deps.DataDir != "" {
				dir = deps.DataDir + "/terraform"
			}
			tf, err := terraform.New(terraform.Config{Binary: bin, WorkDir: dir, Env: cfg.Terraform.Env})
			if err != nil {
				return nil, err
			}
			if err := reg.Register("terraform", tf); err != nil {
				return nil, err
			}
		} else {
			deps.Log.Info().Msg("terraform is not on PATH: descriptors cannot use the terraform plugin")
		}
	}
	return reg, nil
}
