package commandstest

import (
	"context"
	"testing"

	"cairn/commands"
	"cairn/commands/nodes"
	"cairn/domain/node"
)

// OnlineNode is a node for EnrollOnline: where it is, and what its agent
// reports (a 100 GiB root disk besides).
type OnlineNode struct {
	Hostname    string
	LocationID  string
	Labels      map[string]string
	CPUs        int
	MemoryBytes uint64
	// Unreported leaves out the facts, as in the moment between an agent's
	// connecting and its first report.
	Unreported bool
}

// EnrollOnline enrolls a node through the real commands, connects it and
// reports its facts (unless n.Unreported), as its agent would, and returns
// its id.
func EnrollOnline(t testing.TB, h *nodes.Handlers, n OnlineNode) string {
	t.Helper()
	ctx := context.Background()
	meta := commands.Meta{Actor: "test"}
	out, err := h.Enroll(ctx, meta, nodes.Enroll{Hostname: n.Hostname, LocationID: n.LocationID, Labels: n.Labels})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Connect(ctx, meta, nodes.Connect{NodeID: out.ID}); err != nil {
		t.Fatal(err)
	}
	if !n.Unreported {
		ReportFacts(t, h, out.ID, n.CPUs, n.MemoryBytes)
	}
	return out.ID
}

// ReportFacts reports a node's facts as its agent would: cpus threads,
// memory and a 100 GiB root disk.
func ReportFacts(t testing.TB, h *nodes.Handlers, nodeID string, cpus int, memoryBytes uint64) {
	t.Helper()
	facts := node.Facts{CPU: node.CPU{Model: "test", Cores: cpus, Threads: cpus}, MemoryBytes: memoryBytes,
		Disks: []node.Disk{{Device: "sda", Mountpoint: "/", Filesystem: "ext4", SizeBytes: 100 << 30}}}
	if _, err := h.ReportFacts(context.Background(), commands.Meta{Actor: "test"}, nodes.ReportFacts{NodeID: nodeID, Facts: facts}); err != nil {
		t.Fatal(err)
	}
}
