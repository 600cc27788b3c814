package scheduler

import (
	"strings"
	"testing"

	"cairn/domain/node"
	"cairn/domain/placement"
)

func TestEverFits(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	cands := []placement.Candidate{
		{ID: "n1", Name: "small-1", Location: "ams", Labels: map[string]string{"disk": "ssd"}, Allocatable: placement.Resources{CPUMillis: 2000, MemoryBytes: 4 * gib},
			Allocated: placement.Resources{CPUMillis: 2000, MemoryBytes: 4 * gib}},
		{ID: "n2", Name: "big-1", Location: "fra", Allocatable: placement.Resources{CPUMillis: 16000, MemoryBytes: 64 * gib}},
		{ID: "n3", Name: "old-1", Location: "ams", NotReady: "decommissioned", Allocatable: placement.Resources{MemoryBytes: 512 * gib}},
		{ID: "n4", Name: "new-1", Location: "lon", Labels: map[string]string{"disk": "nvme"}, Unmeasured: true},
		{ID: "n5", Name: "old-2", Location: "par", NotReady: "decommissioned", Unmeasured: true},
	}
	for _, tc := range []struct {
		name string
		ask  placement.Ask
		want string // part of the error; empty: it fits some node
	}{
		{"fits an empty big node", placement.Ask{Request: placement.Resources{MemoryBytes: 32 * gib}}, ""},
		{"full now, but not for ever", placement.Ask{Location: "ams", Request: placement.Resources{MemoryBytes: 2 * gib}}, ""},
		{"larger than any measured node", placement.Ask{Selector: node.Selector{{Key: "disk", Op: node.OpNotExists}}, Request: placement.Resources{MemoryBytes: 100 * gib}},
			"more than any of the 1 nodes it may go on offers (the largest, big-1,"},
		{"a node yet to report its facts might take it", placement.Ask{Request: placement.Resources{MemoryBytes: 100 * gib}}, ""},
		{"a decommissioned node never will", placement.Ask{Location: "par", Request: placement.Resources{MemoryBytes: gib}}, "no node in location par"},
		{"larger than the location's nodes", placement.Ask{Location: "ams", Request: placement.Resources{MemoryBytes: 8 * gib}}, "the largest, small-1,"},
		{"a selector matching nothing", placement.Ask{Selector: node.Selector{{Key: "gpu", Op: node.OpExists}}}, "no node matches gpu"},
		{"a location without nodes", placement.Ask{Location: "osl"}, "no node in location osl"},
	} {
		err := everFits(tc.ask, cands)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
