// Package blueprint is a file that declares a tenant's services: for each, a
// template and version, variables, and whether it runs. Applying one makes
// the installation match it (commands/blueprints); this package parses and
// checks the file, and decides what differs, without I/O.
package blueprint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/template"
)

// APIVersion and Kind head every blueprint.
const (
	APIVersion = "cairn/v1"
	Kind       = "Blueprint"
)

// MaxServices bounds the services one blueprint declares.
const MaxServices = 1000

// Blueprint is a parsed, checked blueprint.
type Blueprint struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Metadata   Metadata  `json:"metadata"`
	Tenant     string    `json:"tenant,omitempty"`
	Services   []Service `json:"services"`
}

// Metadata names the blueprint; its services carry the name.
type Metadata struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Service is one declared service.
type Service struct {
	Name     string `json:"name"`
	Template string `json:"template"`
	// Version is a published version; empty means the newest published.
	Version   string                     `json:"version,omitempty"`
	Flavor    string                     `json:"flavor,omitempty"`
	Variables map[string]json.RawMessage `json:"variables,omitempty"`
	// Running is whether it runs; nil means true.
	Running *bool `json:"running,omitempty"`
}

// Runs reports whether the service is declared running.
func (s Service) Runs() bool { return s.Running == nil || *s.Running }

// Path is where a declared service sits in the file, for error messages.
func Path(i int) string { return fmt.Sprintf("services[%d]", i) }

// Parse reads a blueprint in YAML or JSON and checks its shape: every
// problem is reported with its path in the file, all at once.
func Parse(data []byte) (*Blueprint, error) {
	doc, err := ocl.ParseDocument(data)
	if err != nil {
		return nil, err
	}
	var b Blueprint
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, &ocl.ValidationError{Problems: []ocl.Problem{{Message: "not a blueprint: " + err.Error() +
			" (a blueprint has apiVersion, kind, metadata.name, tenant and services: [{name, template, version, flavor, variables, running}])"}}}
	}
	return &b, b.check()
}

func (b *Blueprint) check() error {
	var ps []ocl.Problem
	add := func(path, format string, args ...any) {
		ps = append(ps, ocl.Problem{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if b.APIVersion != APIVersion {
		add("apiVersion", "must be %q", APIVersion)
	}
	if b.Kind != Kind {
		add("kind", "must be %q", Kind)
	}
	if err := domain.ValidateName("metadata.name", b.Metadata.Name, 128); err != nil {
		add("metadata.name", "%s", reason(err))
	}
	if b.Tenant != "" {
		if err := domain.ValidateID("tenant", b.Tenant); err != nil {
			add("tenant", "%s", reason(err))
		}
	}
	if len(b.Services) > MaxServices {
		add("services", "declares %d services; a blueprint holds at most %d", len(b.Services), MaxServices)
	}
	seen := map[string]int{}
	for i, s := range b.Services {
		p := Path(i)
		if err := domain.ValidateName(p+".name", s.Name, 200); err != nil {
			add(p+".name", "%s", reason(err))
		}
		if j, dup := seen[s.Name]; dup {
			add(p+".name", "%q is declared twice (also %s)", s.Name, Path(j))
		}
		seen[s.Name] = i
		if err := template.ValidateName(p+".template", s.Template); err != nil {
			add(p+".template", "%s", reason(err))
		}
		if s.Version != "" {
			if err := template.ValidateVersion(p+".version", s.Version); err != nil {
				add(p+".version", "%s", reason(err))
			}
		}
	}
	if len(ps) > 0 {
		return &ocl.ValidationError{Problems: ps}
	}
	return nil
}

func reason(err error) string {
	var ve *domain.ValidationError
	if e, ok := err.(*domain.ValidationError); ok {
		ve = e
		return ve.Reason
	}
	return err.Error()
}

// Step is what applying a blueprint does to one service.
type Step string

const (
	StepKeep   Step = "keep"   // as declared
	StepCreate Step = "create" // registered (and started when declared running)
	StepUpdate Step = "update" // another version or other variables (updateService)
	StepStart  Step = "start"
	StepStop   Step = "stop"
	StepRemove Step = "remove" // not declared any more, and pruning
)

// Steps lists every step.
var Steps = []Step{StepKeep, StepCreate, StepUpdate, StepStart, StepStop, StepRemove}

// Existing is what a declared (or formerly declared) service is now.
type Existing struct {
	ID      string
	Name    string
	Status  string // the service status, lower case (running, stopped, ...)
	Changed bool   // an update to the declared version and variables would change something
}

// Decide is the steps for one declared service, given what exists (nil:
// nothing yet). A service both changed and to be started or stopped gets
// both steps, update first.
func Decide(s Service, e *Existing) []Step {
	if e == nil {
		return []Step{StepCreate}
	}
	var out []Step
	if e.Changed {
		out = append(out, StepUpdate)
	}
	runs := slices.Contains([]string{"running", "starting", "repairing", "updating", "degraded"}, e.Status)
	switch {
	case s.Runs() && !runs && slices.Contains([]string{"registered", "stopped"}, e.Status):
		out = append(out, StepStart)
	case !s.Runs() && e.Status == "running":
		out = append(out, StepStop)
	}
	if len(out) == 0 {
		return []Step{StepKeep}
	}
	return out
}
