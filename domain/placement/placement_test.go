package placement

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"cairn/domain/node"
)

const gib = 1 << 30

func TestParseQuantities(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		cpu  bool
		want int64
		err  bool
	}{
		{`0.5`, true, 500, false},
		{`"250m"`, true, 250, false},
		{`2`, true, 2000, false},
		{`"1.5"`, true, 1500, false},
		{`-1`, true, 0, true},
		{`"lots"`, true, 0, true},
		{`true`, true, 0, true},
		{`"512Mi"`, false, 512 << 20, false},
		{`"4GiB"`, false, 4 * gib, false},
		{`"1G"`, false, 1e9, false},
		{`1048576`, false, 1 << 20, false},
		{`"-1Gi"`, false, 0, true},
		{`"12 parsecs"`, false, 0, true},
		{`""`, false, 0, true},
		{`"1e30Ti"`, false, 0, true},
	} {
		var got int64
		var err error
		if tc.cpu {
			got, err = ParseCPU(json.RawMessage(tc.raw))
		} else {
			got, err = ParseBytes(json.RawMessage(tc.raw))
		}
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parse %s: %d, %v; want %d (error %v)", tc.raw, got, err, tc.want, tc.err)
		}
	}
}

func nodeOf(id, loc string, cpus int, memGiB int64) Candidate {
	return Candidate{ID: id, Name: id, Location: loc, Labels: map[string]string{"zone": loc},
		Allocatable: Resources{CPUMillis: int64(cpus) * 1000, MemoryBytes: memGiB * gib, DiskBytes: 100 * gib}, Groups: map[string]int{}}
}

func TestScheduleFilters(t *testing.T) {
	t.Parallel()
	small, big := nodeOf("small", "ams", 2, 4), nodeOf("big", "ams", 16, 64)
	far := nodeOf("far", "fra", 16, 64)
	drained := nodeOf("drained", "ams", 16, 64)
	drained.NotReady = "drained"
	for _, tc := range []struct {
		name  string
		ask   Ask
		nodes []Candidate
		want  string // the node, or the error
	}{
		{"packs onto the node it fills most", Ask{ResourceID: "r", Request: Resources{CPUMillis: 1000, MemoryBytes: 2 * gib}}, []Candidate{big, small}, "small"},
		{"capacity leaves the big one", Ask{ResourceID: "r", Request: Resources{MemoryBytes: 8 * gib}}, []Candidate{small, big}, "big"},
		{"location", Ask{ResourceID: "r", Location: "fra"}, []Candidate{small, big, far}, "far"},
		{"selector", Ask{ResourceID: "r", Selector: node.Selector{{Key: "zone", Op: node.OpNotIn, Values: []string{"ams"}}}}, []Candidate{small, far}, "far"},
		{"pinned", Ask{ResourceID: "r", Pin: "big"}, []Candidate{small, big}, "big"},
		{"stays where it is", Ask{ResourceID: "r", Current: "big"}, []Candidate{small, big}, "big"},
		{"explains", Ask{ResourceID: "r", Location: "ams", Request: Resources{MemoryBytes: 32 * gib}},
			[]Candidate{small, small, far, drained, big},
			"0 of 5 nodes fit: 3 lacking 32 GiB of memory, 1 in another location, 1 drained"},
		{"explains a full node", Ask{ResourceID: "r", Request: Resources{CPUMillis: 3000}}, []Candidate{small}, "0 of 1 nodes fit: 1 lacking 3 CPU"},
	} {
		if tc.name == "explains" {
			tc.nodes[4].Allocated = Resources{MemoryBytes: 40 * gib}
		}
		got, err := Schedule(tc.ask, tc.nodes)
		if err != nil {
			if !errors.Is(err, ErrNoFit) || err.Error() != tc.want {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
			}
			continue
		}
		if got.NodeID != tc.want {
			t.Errorf("%s: chose %s, want %s", tc.name, got.NodeID, tc.want)
		}
	}
}

// place runs n asks through Schedule, recording each choice in the nodes
// as the caller would.
func place(t *testing.T, nodes []Candidate, asks []Ask) map[string]string {
	t.Helper()
	where := map[string]string{}
	index := map[string]int{}
	for i, c := range nodes {
		index[c.ID] = i
	}
	for _, a := range asks {
		ch, err := Schedule(a, nodes)
		if err != nil {
			t.Fatalf("%s: %v", a.ResourceID, err)
		}
		c := &nodes[index[ch.NodeID]]
		c.Allocated = c.Allocated.Add(a.Request)
		for _, g := range []string{a.SpreadGroup, a.DistinctGroup} {
			if g != "" {
				c.Groups[g]++
			}
		}
		where[a.ResourceID] = ch.NodeID
	}
	return where
}

func TestBinpackUsesFewNodes(t *testing.T) {
	t.Parallel()
	var nodes []Candidate
	for i := range 20 {
		nodes = append(nodes, nodeOf(fmt.Sprint("n", i), "ams", 8, 32))
	}
	var asks []Ask
	for i := range 40 { // 40 × 2 GiB = 80 GiB: three 32 GiB nodes at least
		asks = append(asks, Ask{ResourceID: fmt.Sprint("r", i), Request: Resources{CPUMillis: 500, MemoryBytes: 2 * gib}})
	}
	used := map[string]bool{}
	for _, n := range place(t, nodes, asks) {
		used[n] = true
	}
	if len(used) != 3 {
		t.Fatalf("bin-packing used %d nodes, want 3", len(used))
	}
}

func TestSpreadAndDistinct(t *testing.T) {
	t.Parallel()
	var nodes []Candidate
	for i, loc := range []string{"ams", "ams", "fra", "fra", "lon", "lon", "par", "par"} {
		nodes = append(nodes, nodeOf(fmt.Sprint("n", i), loc, 8, 32))
	}
	var asks []Ask
	for svc := range 5 {
		for i := range 4 {
			asks = append(asks, Ask{ResourceID: fmt.Sprintf("s%d-web%d", svc, i), Request: Resources{CPUMillis: 100},
				Distinct: ScopeLocation, DistinctGroup: fmt.Sprintf("s%d/web", svc), Spread: ScopeNode, SpreadGroup: "tmpl/web"})
		}
	}
	where := place(t, nodes, asks)
	locOf := map[string]string{}
	for _, c := range nodes {
		locOf[c.ID] = c.Location
	}
	for svc := range 5 {
		seen := map[string]bool{}
		for i := range 4 {
			loc := locOf[where[fmt.Sprintf("s%d-web%d", svc, i)]]
			if seen[loc] {
				t.Fatalf("service %d has two instances in %s", svc, loc)
			}
			seen[loc] = true
		}
	}
	// Spread: 20 instances over 8 nodes, at most 3 on any.
	per := map[string]int{}
	for _, n := range where {
		per[n]++
	}
	for n, c := range per {
		if c > 3 {
			t.Fatalf("spread put %d instances on %s", c, n)
		}
	}
	// A fifth instance has no location left.
	_, err := Schedule(Ask{ResourceID: "s0-web4", Distinct: ScopeLocation, DistinctGroup: "s0/web"}, nodes)
	var nf *NoFitError
	if !errors.As(err, &nf) || nf.Exclusions[0].Nodes != 8 {
		t.Fatalf("a fifth distinct instance: %v", err)
	}
}
