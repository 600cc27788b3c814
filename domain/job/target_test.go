package job

import (
	"errors"
	"testing"

	"cairn/domain"
	"cairn/domain/node"
)

func TestTargetSets(t *testing.T) {
	t.Parallel()
	n := node.Node{ID: "n1", LocationID: "ams", Labels: map[string]string{"zone": "a"}}
	for _, tc := range []struct {
		name    string
		target  Target
		field   string // the invalid field; empty: valid
		selects bool
	}{
		{"every", Target{Every: true, Mode: ModeAll}, "", true},
		{"location", Target{Location: "ams", Mode: ModeAny}, "", true},
		{"other location", Target{Location: "fra", Mode: ModeAny}, "", false},
		{"requirements", Target{Requirements: node.Selector{{Key: "zone", Op: node.OpIn, Values: []string{"a", "b"}}}, Mode: ModeAll}, "", true},
		{"every and a location", Target{Every: true, Location: "ams", Mode: ModeAll}, "target.every", false},
		{"bad operator", Target{Requirements: node.Selector{{Key: "zone", Op: "~"}}, Mode: ModeAll}, "target.requirements[0].op", false},
		{"node and set", Target{NodeID: "n1", Location: "ams"}, "target", false},
		{"nothing", Target{}, "target", false},
		{"set without mode", Target{Location: "ams"}, "target.mode", false},
	} {
		err := validateTarget(tc.target, false)
		var ve *domain.ValidationError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ve) || ve.Field != tc.field):
			t.Errorf("%s: %v, want an error on %s", tc.name, err, tc.field)
		}
		if tc.field == "" && tc.target.Selects(n) != tc.selects {
			t.Errorf("%s selects %v = %v", tc.name, n, !tc.selects)
		}
		// What the read models keep reads back the same.
		var back Target
		if err := back.SetFromJSON(tc.target.SetJSON()); err != nil || back.Location != tc.target.Location || back.Every != tc.target.Every ||
			len(back.Requirements) != len(tc.target.Requirements) {
			t.Errorf("%s: read back %+v, %v", tc.name, back, err)
		}
	}
}
