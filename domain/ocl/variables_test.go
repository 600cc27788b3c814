package ocl

import (
	"encoding/json"
	"testing"
)

const varsDoc = head + `variables:
  name: {type: string, required: true, validation: {pattern: '^[a-z]+$', maxLength: 8}}
  replicas: {type: integer, default: 1, validation: {minimum: 1, maximum: 5}}
  ratio: {type: number, default: 0.5}
  debug: {type: boolean, default: false}
  tier: {type: string, default: gold, validation: {enum: [gold, silver]}}
  extra: {type: object}
  zones: {type: array, default: [a]}
  password: {type: string, sensitive: true}
flavors:
  big: {variables: {replicas: 4, tier: silver}}
resources: [{name: a, plugin: noop, type: thing}]
`

func TestResolveVariables(t *testing.T) {
	t.Parallel()
	d := mustParse(t, varsDoc)
	if err := d.Validate(nil); err != nil {
		t.Fatal(err)
	}
	type given = map[string]json.RawMessage
	cases := []struct {
		name     string
		flavor   string
		given    given
		want     map[string]string // subset of the result
		problems []Problem
	}{
		{name: "defaults", given: given{"name": raw(`"web"`)},
			want: map[string]string{"name": `"web"`, "replicas": "1", "ratio": "0.5", "debug": "false", "tier": `"gold"`, "extra": "null", "zones": `["a"]`, "password": "null"}},
		{name: "flavor overrides defaults", flavor: "big", given: given{"name": raw(`"web"`)},
			want: map[string]string{"replicas": "4", "tier": `"silver"`}},
		{name: "caller overrides flavor", flavor: "big", given: given{"name": raw(`"web"`), "replicas": raw("2")},
			want: map[string]string{"replicas": "2", "tier": `"silver"`}},
		{name: "null counts as not given", given: given{"name": raw(`"web"`), "replicas": raw("null")},
			want: map[string]string{"replicas": "1"}},
		{name: "integral float is an integer", given: given{"name": raw(`"web"`), "replicas": raw("3.0")},
			want: map[string]string{"replicas": "3"}},
		{name: "integer is a number", given: given{"name": raw(`"web"`), "ratio": raw("2")},
			want: map[string]string{"ratio": "2"}},
		{name: "required missing", given: given{},
			problems: []Problem{{"variables.name", "is required; give a value"}}},
		{name: "unknown variable", given: given{"name": raw(`"web"`), "colour": raw(`"red"`)},
			problems: []Problem{{"variables.colour", "is not a variable of this descriptor; declared variables: debug, extra, name, password, ratio, replicas, tier, zones"}}},
		{name: "unknown flavor", flavor: "huge", given: given{"name": raw(`"web"`)},
			problems: []Problem{{"flavor", `unknown flavor "huge"; declared flavors: big`}}},
		{name: "wrong types", given: given{"name": raw("7"), "replicas": raw("1.5"), "debug": raw(`"yes"`), "extra": raw("[]"), "zones": raw("{}")},
			problems: []Problem{
				{"variables.debug", "must be a boolean, got string"},
				{"variables.extra", "must be an object, got array"},
				{"variables.name", "must be a string, got integer"},
				{"variables.replicas", "must be an integer, got number"},
				{"variables.zones", "must be an array, got object"},
			}},
		{name: "validation rules", given: given{"name": raw(`"Web-Server"`), "replicas": raw("9"), "tier": raw(`"bronze"`)},
			problems: []Problem{
				{"variables.name", `must match the pattern "^[a-z]+$"`},
				{"variables.name", "must be at most 8 characters long, got 10"},
				{"variables.replicas", "must be at most 5"},
				{"variables.tier", `must be one of "gold", "silver"`},
			}},
		{name: "invalid JSON", given: given{"name": raw(`"web`)},
			problems: []Problem{{"variables.name", "is not valid JSON: unexpected EOF"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := d.ResolveVariables(tc.flavor, tc.given)
			if tc.problems != nil {
				ps := problemsOf(t, err)
				if len(ps) != len(tc.problems) {
					t.Fatalf("got %v, want %v", ps, tc.problems)
				}
				for i := range ps {
					if ps[i] != tc.problems[i] {
						t.Errorf("problem %d = %q, want %q", i, ps[i], tc.problems[i])
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(d.Variables) {
				t.Errorf("got %d variables, want all %d", len(got), len(d.Variables))
			}
			for k, v := range tc.want {
				if string(got[k]) != v {
					t.Errorf("%s = %s, want %s", k, got[k], v)
				}
			}
		})
	}
}

func TestSensitiveVariables(t *testing.T) {
	t.Parallel()
	d := mustParse(t, varsDoc)
	if got := d.SensitiveVariables(); len(got) != 1 || got[0] != "password" {
		t.Errorf("SensitiveVariables = %v", got)
	}
	red := d.RedactSensitive(map[string]json.RawMessage{"password": raw(`"hunter2"`), "name": raw(`"web"`)})
	if string(red["password"]) != `"(sensitive)"` || string(red["name"]) != `"web"` {
		t.Errorf("RedactSensitive = %s", red)
	}
}
