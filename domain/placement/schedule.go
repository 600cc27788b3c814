package placement

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"cairn/domain"
	"cairn/domain/node"
)

// Scope is what spread and distinct count instances over.
type Scope string

const (
	ScopeNone     Scope = ""
	ScopeNode     Scope = "node"
	ScopeLocation Scope = "location"
)

// ValidateScope checks a spread or distinct setting.
func ValidateScope(field string, s Scope) error {
	switch s {
	case ScopeNone, ScopeNode, ScopeLocation:
		return nil
	}
	return domain.Invalid(field, fmt.Sprintf("%q: use \"node\" or \"location\"", s))
}

// Candidate is a node as the scheduler sees it.
type Candidate struct {
	ID       string
	Name     string // what people read; the id when the node has no name
	Location string
	Labels   map[string]string
	// NotReady says why the node takes no new work, as a word that follows
	// a count of nodes ("offline", "draining"); empty when it takes work.
	NotReady string
	// LocationRetired is set when the node's location takes no new work.
	LocationRetired bool
	// Held is set while another decision on the node is being recorded:
	// it counts for spread and distinct but takes nothing until then.
	Held bool
	// Unmeasured is set while the node has not reported its facts: an
	// agent connects first and reports them a moment later, so what the
	// node offers is not known yet (Allocatable reads zero).
	Unmeasured  bool
	Allocatable Resources
	Allocated   Resources
	// Groups counts the allocations on the node by group (see Ask).
	Groups map[string]int
}

// Free is what is left to allocate on the node.
func (c Candidate) Free() Resources { return c.Allocatable.Sub(c.Allocated) }

// Ask is what one resource asks of the scheduler.
type Ask struct {
	ResourceID string
	Request    Resources
	// Location and Selector restrict the nodes; empty allows any.
	Location string
	Selector node.Selector
	// Pin is the one node the resource may go on (its properties name it).
	Pin string
	// Current is the node the resource is on now, which it prefers.
	Current string
	// Spread spreads the instances of SpreadGroup (one template's resource
	// across every service) over nodes or locations, as a preference.
	Spread      Scope
	SpreadGroup string
	// Distinct keeps the instances of DistinctGroup (one service's
	// resource) on different nodes or locations, as a rule.
	Distinct      Scope
	DistinctGroup string
}

// Validate checks the ask's own fields.
func (a Ask) Validate() error {
	return domain.FirstError(
		domain.ValidateID("resourceId", a.ResourceID),
		a.Request.Validate("requests"),
		a.Selector.Validate("placement.selector"),
		ValidateScope("placement.spread", a.Spread),
		ValidateScope("placement.distinct", a.Distinct),
	)
}

// Choice is the node the scheduler picked, and how many it considered.
type Choice struct {
	NodeID string
	Score  float64
	Fit    int // nodes that passed every filter
}

// ErrNoFit is wrapped by NoFitError.
var ErrNoFit = errors.New("no node fits")

// Exclusion is how many nodes one reason excluded.
type Exclusion struct {
	Reason string `json:"reason"`
	Nodes  int    `json:"nodes"`
}

// ReasonNoFacts is why a node that has not reported its facts does not
// take a request: what it offers is not known yet.
const ReasonNoFacts = "without reported facts"

// Excluded is how many nodes were left out for reason.
func (e *NoFitError) Excluded(reason string) int {
	for _, x := range e.Exclusions {
		if x.Reason == reason {
			return x.Nodes
		}
	}
	return 0
}

// NoFitError says why no node fits, counting the nodes each filter
// excluded (each node counted once, by the first filter it failed).
type NoFitError struct {
	Total      int
	Exclusions []Exclusion
}

func (e *NoFitError) Error() string {
	if e.Total == 0 {
		return "0 of 0 nodes fit: no node is enrolled; enroll one, then retry"
	}
	parts := make([]string, len(e.Exclusions))
	for i, x := range e.Exclusions {
		parts[i] = fmt.Sprintf("%d %s", x.Nodes, x.Reason)
	}
	return fmt.Sprintf("0 of %d nodes fit: %s", e.Total, strings.Join(parts, ", "))
}

// Is makes errors.Is(err, ErrNoFit) true.
func (e *NoFitError) Is(target error) bool { return target == ErrNoFit }

// A filter keeps a node or says why not, in words that follow a count of
// nodes ("31 lacking 4 GiB of memory").
type filter struct {
	name string
	keep func(a Ask, c Candidate, v *view) (ok bool, why string)
}

// filters run in this order; a node is counted under the first it fails.
var filters = []filter{
	{"held", func(_ Ask, c Candidate, _ *view) (bool, string) {
		return !c.Held, "being allocated to"
	}},
	{"pinned", func(a Ask, c Candidate, _ *view) (bool, string) {
		return a.Pin == "" || c.ID == a.Pin, "not the node the resource names"
	}},
	{"location", func(a Ask, c Candidate, _ *view) (bool, string) {
		return a.Location == "" || c.Location == a.Location, "in another location"
	}},
	{"location retired", func(_ Ask, c Candidate, _ *view) (bool, string) {
		return !c.LocationRetired, "in a retired location"
	}},
	{"ready", func(_ Ask, c Candidate, _ *view) (bool, string) {
		return c.NotReady == "", c.NotReady
	}},
	{"labels", func(a Ask, c Candidate, _ *view) (bool, string) {
		if a.Selector.Matches(c.Labels) {
			return true, ""
		}
		return false, "not matching the selector " + a.Selector.String()
	}},
	{"distinct", func(a Ask, c Candidate, v *view) (bool, string) {
		switch a.Distinct {
		case ScopeNode:
			return c.Groups[a.DistinctGroup] == 0 || c.ID == a.Current, "already running an instance of this resource"
		case ScopeLocation:
			return v.byLocation[c.Location] == 0 || c.ID == a.Current, "in a location already running an instance of this resource"
		}
		return true, ""
	}},
	{"capacity", func(a Ask, c Candidate, _ *view) (bool, string) {
		free := c.Free()
		switch {
		case c.Unmeasured && !a.Request.Fits(free):
			return false, ReasonNoFacts
		case a.Request.CPUMillis > free.CPUMillis:
			return false, "lacking " + FormatCPU(a.Request.CPUMillis) + " CPU"
		case a.Request.MemoryBytes > free.MemoryBytes:
			return false, "lacking " + FormatBytes(a.Request.MemoryBytes) + " of memory"
		case a.Request.DiskBytes > free.DiskBytes:
			return false, "lacking " + FormatBytes(a.Request.DiskBytes) + " of disk"
		}
		return true, ""
	}},
}

// A scorer rates a node that passed every filter; higher is better.
type scorer struct {
	name  string
	score func(a Ask, c Candidate, v *view) float64
}

// scorers are summed. Their weights order them: staying where one is
// beats spreading, which beats packing.
var scorers = []scorer{
	{"binpack", binpack},
	{"spread", func(a Ask, c Candidate, v *view) float64 {
		switch a.Spread {
		case ScopeNode:
			return -10 * float64(c.Groups[a.SpreadGroup])
		case ScopeLocation:
			return -10 * float64(v.spreadByLocation[c.Location])
		}
		return 0
	}},
	{"current", func(a Ask, c Candidate, _ *view) float64 {
		if a.Current != "" && c.ID == a.Current {
			return 1000
		}
		return 0
	}},
}

// binpack prefers the node that is fullest after the placement, averaged
// over the dimensions it offers: in [0, 1].
func binpack(a Ask, c Candidate, _ *view) float64 {
	after := c.Allocated.Add(a.Request)
	var sum float64
	n := 0
	for _, d := range [][2]int64{
		{after.CPUMillis, c.Allocatable.CPUMillis},
		{after.MemoryBytes, c.Allocatable.MemoryBytes},
		{after.DiskBytes, c.Allocatable.DiskBytes},
	} {
		if d[1] > 0 {
			sum += float64(d[0]) / float64(d[1])
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// view holds what the filters and scorers derive from all candidates at
// once: instances of the ask's groups per location.
type view struct {
	byLocation       map[string]int // DistinctGroup
	spreadByLocation map[string]int // SpreadGroup
}

func newView(a Ask, nodes []Candidate) *view {
	v := &view{}
	if a.Distinct == ScopeLocation {
		v.byLocation = map[string]int{}
		for _, c := range nodes {
			if c.ID != a.Current {
				v.byLocation[c.Location] += c.Groups[a.DistinctGroup]
			}
		}
	}
	if a.Spread == ScopeLocation {
		v.spreadByLocation = map[string]int{}
		for _, c := range nodes {
			v.spreadByLocation[c.Location] += c.Groups[a.SpreadGroup]
		}
	}
	return v
}

// Schedule filters the nodes, then scores those left, and returns the best
// (ties go to a hash of the resource and node ids, so the same inputs give
// the same choice). When none fits the error is a *NoFitError.
func Schedule(a Ask, nodes []Candidate) (Choice, error) {
	v := newView(a, nodes)
	excluded := map[string]int{}
	rank := map[string]int{} // the filter's place in filters, to order ties
	var order []string
	best := Choice{}
	var bestTie uint64
	for _, c := range nodes {
		ok, why, at := true, "", 0
		for i, f := range filters {
			if ok, why = f.keep(a, c, v); !ok {
				at = i
				break
			}
		}
		if !ok {
			if excluded[why] == 0 {
				order = append(order, why)
				rank[why] = at
			}
			excluded[why]++
			continue
		}
		best.Fit++
		var s float64
		for _, sc := range scorers {
			s += sc.score(a, c, v)
		}
		switch {
		case best.NodeID == "" || s > best.Score:
			best.NodeID, best.Score, bestTie = c.ID, s, 0
		case s == best.Score:
			// Hash only on a tie, and the best so far only once.
			if bestTie == 0 {
				bestTie = tiebreak(a.ResourceID, best.NodeID)
			}
			if tie := tiebreak(a.ResourceID, c.ID); tie > bestTie {
				best.NodeID, bestTie = c.ID, tie
			}
		}
	}
	if best.NodeID == "" {
		e := &NoFitError{Total: len(nodes)}
		for _, why := range order {
			e.Exclusions = append(e.Exclusions, Exclusion{Reason: why, Nodes: excluded[why]})
		}
		// Most nodes first; equal counts in the order the filters run, so
		// the message does not depend on the order the nodes came in.
		slices.SortStableFunc(e.Exclusions, func(x, y Exclusion) int {
			if x.Nodes != y.Nodes {
				return y.Nodes - x.Nodes
			}
			return rank[x.Reason] - rank[y.Reason]
		})
		return Choice{}, e
	}
	return best, nil
}

func tiebreak(resourceID, nodeID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(resourceID))
	h.Write([]byte{0})
	h.Write([]byte(nodeID))
	return h.Sum64()
}
