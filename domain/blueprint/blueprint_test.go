package blueprint_test

import (
	"errors"
	"slices"
	"testing"

	"cairn/domain/blueprint"
	"cairn/domain/ocl"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	no := false
	run := blueprint.Service{Name: "web", Template: "t"}
	idle := blueprint.Service{Name: "web", Template: "t", Running: &no}
	tests := []struct {
		name string
		decl blueprint.Service
		now  *blueprint.Existing
		want []blueprint.Step
	}{
		{"missing", run, nil, []blueprint.Step{blueprint.StepCreate}},
		{"as declared", run, &blueprint.Existing{Status: "running"}, []blueprint.Step{blueprint.StepKeep}},
		{"changed", run, &blueprint.Existing{Status: "running", Changed: true}, []blueprint.Step{blueprint.StepUpdate}},
		{"stopped, declared running", run, &blueprint.Existing{Status: "stopped"}, []blueprint.Step{blueprint.StepStart}},
		{"registered, declared running", run, &blueprint.Existing{Status: "registered"}, []blueprint.Step{blueprint.StepStart}},
		{"running, declared not", idle, &blueprint.Existing{Status: "running"}, []blueprint.Step{blueprint.StepStop}},
		{"changed and stopped", run, &blueprint.Existing{Status: "stopped", Changed: true}, []blueprint.Step{blueprint.StepUpdate, blueprint.StepStart}},
		{"busy", run, &blueprint.Existing{Status: "updating"}, []blueprint.Step{blueprint.StepKeep}},
	}
	for _, tc := range tests {
		if got := blueprint.Decide(tc.decl, tc.now); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseReportsPaths(t *testing.T) {
	t.Parallel()
	_, err := blueprint.Parse([]byte(`apiVersion: cairn/v2
kind: Blueprint
metadata: {name: shop}
services:
  - {name: web, template: t, version: "1.0 beta"}
  - {name: web, template: t}
`))
	var ve *ocl.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("%v", err)
	}
	var paths []string
	for _, p := range ve.Problems {
		paths = append(paths, p.Path)
	}
	for _, want := range []string{"apiVersion", "services[0].version", "services[1].name"} {
		if !slices.Contains(paths, want) {
			t.Errorf("no problem at %s: %v", want, ve)
		}
	}
	if _, err := blueprint.Parse([]byte(`{"apiVersion":"cairn/v1","kind":"Blueprint","metadata":{"name":"x"},"servces":[]}`)); err == nil {
		t.Error("a misspelt field was accepted")
	}
	b, err := blueprint.Parse([]byte("apiVersion: cairn/v1\nkind: Blueprint\nmetadata: {name: x}\nservices: [{name: a, template: t, running: false}]\n"))
	if err != nil || len(b.Services) != 1 || b.Services[0].Runs() {
		t.Fatalf("%+v %v", b, err)
	}
}
