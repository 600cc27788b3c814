package node

import (
	"errors"
	"strings"
	"testing"

	"cairn/domain"
)

func TestParseSelector(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"env": "prod", "zone": "b", "gpu": "a100"}
	for _, tc := range []struct {
		in      string
		matches bool
		err     string // a part of the error; empty: valid
	}{
		{"", true, ""},
		{"env=prod", true, ""},
		{"env==prod", true, ""},
		{"env!=prod", false, ""},
		{"env in (prod, staging)", true, ""},
		{"zone notin (a,b)", false, ""},
		{"gpu", true, ""},
		{"!gpu", false, ""},
		{"!ssd, env in (prod), zone=b", true, ""},
		{"missing!=x", true, ""},
		{"missing notin (x)", true, ""},
		{"missing in (x)", false, ""},
		{"env ~ prod", false, `unknown operator "~"`},
		{"env in prod", false, "list in parentheses"},
		{"env in ()", false, "needs at least one value"},
		{"Env=prod", false, "key"},
		{"env=prod,,zone=b", false, "is empty"},
	} {
		s, err := ParseSelector(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, domain.ErrInvalid) {
				t.Errorf("ParseSelector(%q) = %v, want an invalid-input error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSelector(%q): %v", tc.in, err)
			continue
		}
		if got := s.Matches(labels); got != tc.matches {
			t.Errorf("%q matches %v = %v, want %v", tc.in, labels, got, tc.matches)
		}
		// What String writes, Parse reads back the same.
		again, err := ParseSelector(s.String())
		if err != nil || again.String() != s.String() {
			t.Errorf("round trip of %q: %q, %v", tc.in, again.String(), err)
		}
	}
}

func TestSelectorValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sel   Selector
		field string
	}{
		{Selector{{Key: "env", Op: "like", Values: []string{"x"}}}, "placement[0].op"},
		{Selector{{Key: "env", Op: OpExists, Values: []string{"x"}}}, "placement[0].values"},
		{Selector{{Key: "env", Op: OpEquals}}, "placement[0].values"},
		{Selector{{Key: "", Op: OpExists}}, "placement[0].key"},
		{Selector{{Key: "env", Op: OpEquals, Values: []string{"a"}}, {Key: "x", Op: OpIn}}, "placement[1].values"},
	} {
		err := tc.sel.Validate("placement")
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("%v: got %v, want an error on %s", tc.sel, err, tc.field)
		}
	}
	long := make(Selector, MaxRequirements+1)
	for i := range long {
		long[i] = Requirement{Key: "k", Op: OpExists}
	}
	if err := long.Validate("s"); err == nil {
		t.Error("a selector over the limit should be refused")
	}
}
