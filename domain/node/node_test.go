package node_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/node"
)

const id = "node-1"

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

func fold(es ...domain.Event) node.Node {
	var n node.Node
	for _, e := range es {
		n.Apply(e)
	}
	return n
}

var (
	enrolled     = node.Enrolled{NodeID: id, Hostname: "web-1.example.org", LocationID: "loc-1", Labels: map[string]string{"zone": "a"}, At: at(0)}
	connected    = node.Connected{NodeID: id, At: at(1)}
	drainAsked   = node.DrainRequested{NodeID: id, Reason: "kernel upgrade", At: at(2)}
	drained      = node.Drained{NodeID: id, At: at(3)}
	disconnected = node.Disconnected{NodeID: id, At: at(4)}
	wentDown     = node.WentDown{NodeID: id, At: at(5)}
	decommission = node.Decommissioned{NodeID: id, Reason: "retired", At: at(6)}
)

// history reaches each status through the events that lead to it.
var history = map[node.Status][]domain.Event{
	node.StatusEnrolled:       {enrolled},
	node.StatusOnline:         {enrolled, connected},
	node.StatusDraining:       {enrolled, connected, drainAsked},
	node.StatusDrained:        {enrolled, connected, drainAsked, drained},
	node.StatusDisconnected:   {enrolled, connected, disconnected},
	node.StatusDown:           {enrolled, connected, disconnected, wentDown},
	node.StatusDecommissioned: {enrolled, decommission},
}

var sampleFacts = node.Facts{
	CPU:         node.CPU{Model: "EPYC 7302", Cores: 16, Threads: 32},
	MemoryBytes: 64 << 30,
	Disks:       []node.Disk{{Device: "/dev/nvme0n1p1", Mountpoint: "/", Filesystem: "ext4", SizeBytes: 512 << 30}},
	Network:     []node.Interface{{Name: "eth0", MAC: "02:00:00:00:00:01", Addresses: []string{"10.0.0.5/24"}, MTU: 1500}},
	OS:          node.OS{Name: "debian", Version: "12", Kernel: "6.1.0", Arch: "amd64"},
}

// commands issues a valid command of each kind that would change a node
// enrolled with the events above.
var commands = map[string]func(node.Node) ([]domain.Event, error){
	node.CmdConnect: func(n node.Node) ([]domain.Event, error) {
		return n.Connect(node.Connect{NodeID: id, At: at(10)})
	},
	node.CmdDisconnect: func(n node.Node) ([]domain.Event, error) {
		return n.Disconnect(node.Disconnect{NodeID: id, At: at(10)})
	},
	node.CmdMarkDown: func(n node.Node) ([]domain.Event, error) {
		return n.MarkDown(node.MarkDown{NodeID: id, At: at(10)})
	},
	node.CmdSetLabels: func(n node.Node) ([]domain.Event, error) {
		return n.SetLabels(node.SetLabels{NodeID: id, Labels: map[string]string{"role": "db"}, At: at(10)})
	},
	node.CmdSetLocation: func(n node.Node) ([]domain.Event, error) {
		return n.SetLocation(node.SetLocation{NodeID: id, LocationID: "loc-2", At: at(10)})
	},
	node.CmdReportFacts: func(n node.Node) ([]domain.Event, error) {
		return n.ReportFacts(node.ReportFacts{NodeID: id, Facts: sampleFacts, At: at(10)})
	},
	node.CmdDrain: func(n node.Node) ([]domain.Event, error) {
		return n.Drain(node.Drain{NodeID: id, Reason: "maintenance", At: at(10)})
	},
	node.CmdUndrain: func(n node.Node) ([]domain.Event, error) {
		return n.Undrain(node.Undrain{NodeID: id, At: at(10)})
	},
	node.CmdMarkDrained: func(n node.Node) ([]domain.Event, error) {
		return n.MarkDrained(node.MarkDrained{NodeID: id, At: at(10)})
	},
	node.CmdDecommission: func(n node.Node) ([]domain.Event, error) {
		return n.Decommission(node.Decommission{NodeID: id, Reason: "end of life", At: at(10)})
	},
	node.CmdEnroll: func(n node.Node) ([]domain.Event, error) {
		return n.Enroll(node.Enroll{NodeID: id, Hostname: "web-1", At: at(10)})
	},
}

// noChange marks the allowed commands that, as issued above, decide nothing.
const noChange node.Status = "(no change)"

// next gives the status after each allowed command; every pair the table
// allows must appear here, and nothing else.
var next = map[node.Status]map[string]node.Status{
	node.StatusEnrolled: {
		node.CmdConnect: node.StatusOnline, node.CmdSetLabels: node.StatusEnrolled,
		node.CmdSetLocation: node.StatusEnrolled, node.CmdReportFacts: node.StatusEnrolled,
		node.CmdDrain: node.StatusEnrolled, node.CmdUndrain: noChange,
		node.CmdDecommission: node.StatusDecommissioned,
	},
	node.StatusOnline: {
		node.CmdConnect: noChange, node.CmdDisconnect: node.StatusDisconnected,
		node.CmdSetLabels: node.StatusOnline, node.CmdSetLocation: node.StatusOnline,
		node.CmdReportFacts: node.StatusOnline, node.CmdDrain: node.StatusDraining,
		node.CmdDecommission: node.StatusDecommissioned,
	},
	node.StatusDraining: {
		node.CmdConnect: noChange, node.CmdDisconnect: node.StatusDisconnected,
		node.CmdSetLabels: node.StatusDraining, node.CmdSetLocation: node.StatusDraining,
		node.CmdReportFacts: node.StatusDraining, node.CmdUndrain: node.StatusOnline,
		node.CmdMarkDrained: node.StatusDrained, node.CmdDecommission: node.StatusDecommissioned,
	},
	node.StatusDrained: {
		node.CmdConnect: noChange, node.CmdDisconnect: node.StatusDisconnected,
		node.CmdSetLabels: node.StatusDrained, node.CmdSetLocation: node.StatusDrained,
		node.CmdReportFacts: node.StatusDrained, node.CmdUndrain: node.StatusOnline,
		node.CmdDecommission: node.StatusDecommissioned,
	},
	node.StatusDisconnected: {
		node.CmdConnect: node.StatusOnline, node.CmdMarkDown: node.StatusDown,
		node.CmdSetLabels: node.StatusDisconnected, node.CmdSetLocation: node.StatusDisconnected,
		node.CmdReportFacts: node.StatusDisconnected, node.CmdDrain: node.StatusDisconnected,
		node.CmdUndrain: noChange, node.CmdDecommission: node.StatusDecommissioned,
	},
	node.StatusDown: {
		node.CmdConnect: node.StatusOnline, node.CmdSetLabels: node.StatusDown,
		node.CmdSetLocation: node.StatusDown, node.CmdReportFacts: node.StatusDown,
		node.CmdDrain: node.StatusDown, node.CmdUndrain: noChange,
		node.CmdDecommission: node.StatusDecommissioned,
	},
	node.StatusDecommissioned: {},
}

func TestEveryStatusAndCommand(t *testing.T) {
	t.Parallel()
	for _, status := range node.Statuses {
		n := fold(history[status]...)
		if n.Status != status {
			t.Fatalf("history for %s folds to %s", status, n.Status)
		}
		for _, cmd := range node.Commands {
			if cmd == node.CmdEnroll {
				continue
			}
			t.Run(string(status)+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				es, err := commands[cmd](n)
				want, expected := next[status][cmd]
				allowed := slices.Contains(node.AllowedCommands(status), cmd)
				if allowed != expected {
					t.Fatalf("table allows=%v but test expects a transition=%v", allowed, expected)
				}
				if !allowed {
					assertRefused(t, err, cmd, string(status))
					return
				}
				if err != nil {
					t.Fatalf("allowed command failed: %v", err)
				}
				if want == noChange {
					if len(es) != 0 {
						t.Fatalf("want no events, got %v", es)
					}
					return
				}
				if len(es) == 0 {
					t.Fatal("want events, got none")
				}
				after := n
				for _, e := range es {
					after.Apply(e)
				}
				if after.Status != want {
					t.Fatalf("status after %s = %s, want %s", cmd, after.Status, want)
				}
			})
		}
	}
}

func assertRefused(t *testing.T, err error, cmd, state string) {
	t.Helper()
	var se *domain.StateError
	if !errors.As(err, &se) {
		t.Fatalf("want *domain.StateError, got %v", err)
	}
	if se.Command != cmd || se.State != state || se.Entity != "node" || se.ID != id {
		t.Fatalf("state error = %+v, want command %s state %s", se, cmd, state)
	}
	if !errors.Is(err, domain.ErrConflict) {
		t.Fatal("state error is not ErrConflict")
	}
}

func TestEnrollOnlyOnce(t *testing.T) {
	t.Parallel()
	for _, status := range node.Statuses {
		_, err := commands[node.CmdEnroll](fold(history[status]...))
		assertRefused(t, err, node.CmdEnroll, string(status))
	}
	es, err := commands[node.CmdEnroll](node.Node{})
	if err != nil || len(es) != 1 {
		t.Fatalf("enroll on a new node: %v %v", es, err)
	}
	if n := fold(es...); n.Status != node.StatusEnrolled || n.ID != id || n.Schedulable() {
		t.Fatalf("enrolled node = %+v", n)
	}
}

func TestCommandsOnMissingNode(t *testing.T) {
	t.Parallel()
	for cmd, run := range commands {
		if cmd == node.CmdEnroll {
			continue
		}
		_, err := run(node.Node{})
		var nf *domain.NotFoundError
		if !errors.As(err, &nf) || nf.ID != id || !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s on a missing node: %v", cmd, err)
		}
	}
}

func TestCommandForAnotherNode(t *testing.T) {
	t.Parallel()
	n := fold(history[node.StatusOnline]...)
	_, err := n.Drain(node.Drain{NodeID: "node-2", At: at(10)})
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || ve.Field != "nodeId" {
		t.Fatalf("want nodeId validation error, got %v", err)
	}
}

// A drain asked while the node is away survives until it comes back.
func TestCordonSurvivesDisconnect(t *testing.T) {
	t.Parallel()
	n := fold(history[node.StatusDraining]...)
	n.Apply(disconnected)
	n.Apply(wentDown)
	if !n.Cordoned || n.Schedulable() {
		t.Fatalf("cordon lost while down: %+v", n)
	}
	es, err := n.Drain(node.Drain{NodeID: id, At: at(10)})
	if err != nil || len(es) != 0 {
		t.Fatalf("drain of a cordoned node: %v %v", es, err)
	}
	es, err = n.Connect(node.Connect{NodeID: id, At: at(11)})
	if err != nil {
		t.Fatal(err)
	}
	back := n
	for _, e := range es {
		back.Apply(e)
	}
	if back.Status != node.StatusDraining || back.Schedulable() {
		t.Fatalf("cordoned node came back %s", back.Status)
	}
	es, err = n.Undrain(node.Undrain{NodeID: id, At: at(11)})
	if err != nil || len(es) != 1 {
		t.Fatalf("undrain of a cordoned down node: %v %v", es, err)
	}
	n.Apply(es[0])
	if n.Cordoned || n.Status != node.StatusDown {
		t.Fatalf("after undrain while down: %+v", n)
	}
	n.Apply(node.Connected{NodeID: id, At: at(12)})
	if !n.Schedulable() {
		t.Fatal("uncordoned node is not schedulable once online")
	}
}

func TestNoChangeCommands(t *testing.T) {
	t.Parallel()
	n := fold(enrolled, connected, node.FactsReported{NodeID: id, Facts: sampleFacts, At: at(2)})
	cases := map[string]func() ([]domain.Event, error){
		"same labels": func() ([]domain.Event, error) {
			return n.SetLabels(node.SetLabels{NodeID: id, Labels: map[string]string{"zone": "a"}, At: at(9)})
		},
		"same location": func() ([]domain.Event, error) {
			return n.SetLocation(node.SetLocation{NodeID: id, LocationID: "loc-1", At: at(9)})
		},
		"same facts": func() ([]domain.Event, error) {
			f := sampleFacts
			f.Disks = slices.Clone(f.Disks) // equal content, different slice
			return n.ReportFacts(node.ReportFacts{NodeID: id, Facts: f, At: at(9)})
		},
		"heartbeat": func() ([]domain.Event, error) { return n.Connect(node.Connect{NodeID: id, At: at(9)}) },
	}
	for name, run := range cases {
		es, err := run()
		if err != nil || len(es) != 0 {
			t.Errorf("%s: want no events, got %v %v", name, es, err)
		}
	}
	changed := sampleFacts
	changed.MemoryBytes *= 2
	es, err := n.ReportFacts(node.ReportFacts{NodeID: id, Facts: changed, At: at(9)})
	if err != nil || len(es) != 1 {
		t.Fatalf("changed facts: %v %v", es, err)
	}
	es, err = n.SetLabels(node.SetLabels{NodeID: id, At: at(9)})
	if err != nil || len(es) != 1 {
		t.Fatalf("clearing labels: %v %v", es, err)
	}
	if n2 := fold(enrolled, es[0]); len(n2.Labels) != 0 {
		t.Fatalf("labels not cleared: %v", n2.Labels)
	}
}

func TestMatchesSelector(t *testing.T) {
	t.Parallel()
	n := fold(enrolled, node.LabelsSet{NodeID: id, Labels: map[string]string{"zone": "a", "role": "db"}, At: at(1)})
	cases := []struct {
		selector map[string]string
		want     bool
	}{
		{map[string]string{"zone": "a"}, true},
		{map[string]string{"zone": "a", "role": "db"}, true},
		{map[string]string{"zone": "b"}, false},
		{map[string]string{"gpu": ""}, false},
		{nil, true},
	}
	for _, c := range cases {
		if got := n.Matches(c.selector); got != c.want {
			t.Errorf("Matches(%v) = %v, want %v", c.selector, got, c.want)
		}
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	online := fold(history[node.StatusOnline]...)
	cases := []struct {
		name  string
		field string
		run   func() ([]domain.Event, error)
	}{
		{"missing id", "nodeId", func() ([]domain.Event, error) {
			return node.Node{}.Enroll(node.Enroll{Hostname: "h", At: at(0)})
		}},
		{"bad id", "nodeId", func() ([]domain.Event, error) {
			return node.Node{}.Enroll(node.Enroll{NodeID: "-x y", Hostname: "h", At: at(0)})
		}},
		{"missing hostname", "hostname", func() ([]domain.Event, error) {
			return node.Node{}.Enroll(node.Enroll{NodeID: id, At: at(0)})
		}},
		{"bad hostname", "hostname", func() ([]domain.Event, error) {
			return node.Node{}.Enroll(node.Enroll{NodeID: id, Hostname: "web_1..x", At: at(0)})
		}},
		{"bad location", "locationId", func() ([]domain.Event, error) {
			return node.Node{}.Enroll(node.Enroll{NodeID: id, Hostname: "h", LocationID: "a b", At: at(0)})
		}},
		{"missing time", "at", func() ([]domain.Event, error) {
			return node.Node{}.Enroll(node.Enroll{NodeID: id, Hostname: "h"})
		}},
		{"missing time on existing node", "at", func() ([]domain.Event, error) {
			return online.Disconnect(node.Disconnect{NodeID: id})
		}},
		{"uppercase label key", "labels", func() ([]domain.Event, error) {
			return online.SetLabels(node.SetLabels{NodeID: id, Labels: map[string]string{"Zone": "a"}, At: at(9)})
		}},
		{"label key ends with dash", "labels", func() ([]domain.Event, error) {
			return online.SetLabels(node.SetLabels{NodeID: id, Labels: map[string]string{"zone-": "a"}, At: at(9)})
		}},
		{"label key too long", "labels", func() ([]domain.Event, error) {
			return online.SetLabels(node.SetLabels{NodeID: id, Labels: map[string]string{repeat('k', 64): "a"}, At: at(9)})
		}},
		{"label value too long", "labels", func() ([]domain.Event, error) {
			return online.SetLabels(node.SetLabels{NodeID: id, Labels: map[string]string{"zone": repeat('v', 64)}, At: at(9)})
		}},
		{"label value with control character", "labels", func() ([]domain.Event, error) {
			return online.SetLabels(node.SetLabels{NodeID: id, Labels: map[string]string{"zone": "a\nb"}, At: at(9)})
		}},
		{"negative cores", "facts.cpu.cores", func() ([]domain.Event, error) {
			return online.ReportFacts(node.ReportFacts{NodeID: id, Facts: node.Facts{CPU: node.CPU{Cores: -1}}, At: at(9)})
		}},
		{"unnamed interface", "facts.network[0].name", func() ([]domain.Event, error) {
			return online.ReportFacts(node.ReportFacts{NodeID: id, Facts: node.Facts{Network: []node.Interface{{}}}, At: at(9)})
		}},
		{"disk without mountpoint", "facts.disks[0].mountpoint", func() ([]domain.Event, error) {
			return online.ReportFacts(node.ReportFacts{NodeID: id, Facts: node.Facts{Disks: []node.Disk{{Device: "sda"}}}, At: at(9)})
		}},
		{"reason too long", "reason", func() ([]domain.Event, error) {
			return online.Drain(node.Drain{NodeID: id, Reason: repeat('r', node.MaxReasonLength+1), At: at(9)})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			es, err := c.run()
			var ve *domain.ValidationError
			if !errors.As(err, &ve) || ve.Field != c.field || !errors.Is(err, domain.ErrInvalid) {
				t.Fatalf("want validation error on %s, got %v (events %v)", c.field, err, es)
			}
		})
	}
	// Label keys as long as allowed, with every allowed character, pass.
	ok := map[string]string{repeat('k', 63): repeat('v', 63), "topology.example.org/zone_1": "eu-west 1"}
	if _, err := online.SetLabels(node.SetLabels{NodeID: id, Labels: ok, At: at(9)}); err != nil {
		t.Fatalf("valid labels refused: %v", err)
	}
}

func repeat(b byte, n int) string { return strings.Repeat(string(b), n) }

var samples = []domain.Event{
	enrolled, connected, disconnected, wentDown, drainAsked, drained, decommission,
	node.LabelsSet{NodeID: id, Labels: map[string]string{"role": "db"}, At: at(7)},
	node.LocationSet{NodeID: id, LocationID: "loc-2", At: at(8)},
	node.FactsReported{NodeID: id, Facts: sampleFacts, At: at(9)},
	node.Undrained{NodeID: id, At: at(10)},
}

func TestEventsRoundTrip(t *testing.T) {
	t.Parallel()
	own := domain.NewRegistry()
	node.RegisterEvents(own)
	var types []string
	for _, e := range samples {
		types = append(types, e.EventType())
	}
	slices.Sort(types)
	if !slices.Equal(types, own.Types()) {
		t.Fatalf("samples cover %v, registered %v", types, own.Types())
	}
	reg := events.Registry()
	for _, e := range samples {
		typ, version, payload, err := reg.Encode(e)
		if err != nil || version != 1 || typ != e.EventType() {
			t.Fatalf("encode %T: %s %d %v", e, typ, version, err)
		}
		decoded, err := reg.Decode(typ, version, json.RawMessage(payload))
		if err != nil {
			t.Fatalf("decode %s: %v", typ, err)
		}
		if got := decoded; !reflect.DeepEqual(got, e) {
			t.Errorf("%s round trip:\n got %#v\nwant %#v", typ, got, e)
		}
		base := fold(enrolled)
		fromValue, fromPointer := base, base
		fromValue.Apply(e)
		fromPointer.Apply(decoded)
		if !reflect.DeepEqual(fromValue, fromPointer) {
			t.Errorf("%s: Apply(value) = %+v, Apply(decoded pointer) = %+v", typ, fromValue, fromPointer)
		}
		if reflect.DeepEqual(fromValue, base) && e.EventType() != enrolled.EventType() {
			t.Errorf("%s: Apply changed nothing", typ)
		}
	}
}
