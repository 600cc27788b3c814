package orchestrator_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands/commandstest"
	"cairn/commands/nodes"
	"cairn/commands/orchestrator"
	"cairn/commands/orchestrator/orchestratortest"
	"cairn/domain/placement"
	"cairn/domain/service"
	"cairn/plugins"
	"cairn/plugins/fake"
	"cairn/scheduler"
)

const placedApp = `
apiVersion: cairn/v1
metadata: {name: placed-app, version: 1.0.0}
variables:
  memory: {type: string, default: 3Gi}
resources:
  - name: a
    plugin: fake
    type: placed-thing
    requests: {cpu: 1, memory: "${var.memory}"}
  - name: b
    plugin: fake
    type: placed-thing
    requests: {cpu: 1, memory: "${var.memory}"}
    dependsOn: [a]
`

// The orchestrator places node-bound resources with the scheduler before
// creating them, on the node that has room, calls the plugin there, gives
// the allocation back when the resource is destroyed, and fails a
// deployment no node can take without calling the plugin at all.
func TestPlacementOnCapacity(t *testing.T) {
	t.Parallel()
	e := newBareEnv(t)
	e.fake = fake.New(fake.Options{})
	if err := e.reg.Register("fake", e.fake); err != nil {
		t.Fatal(err)
	}
	desc, err := orchestratortest.Publish(context.Background(), e.store, e.reg, "acme-vendor", []byte(placedApp))
	if err != nil {
		t.Fatal(err)
	}
	e.desc = desc
	const gib = 1 << 30
	nh := nodes.NewHandlers(e.store, time.Now, commandstest.IDs("node"))
	enroll := func(host string, cpus int, mem uint64) string {
		return commandstest.EnrollOnline(t, nh, commandstest.OnlineNode{Hostname: host, CPUs: cpus, MemoryBytes: mem})
	}
	small, big := enroll("small-1", 2, 4*gib), enroll("big-1", 8, 32*gib)
	sched := scheduler.New(e.store, time.Now, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = sched.Run(ctx) }()
	e.run(t, func(c *orchestrator.Config) { c.Scheduler = sched })

	e.register(t, "svc-1")
	e.wait(t, "svc-1", service.StatusRegistered)
	where := map[string]string{}
	for _, c := range e.fake.Calls() {
		if c.Op == plugins.OpCreate {
			where[c.ResourceID] = c.Node
		}
	}
	// Bin-packing: a fills the small node (3 of 4 GiB); b no longer fits it.
	if where[id("svc-1", "a")] != small || where[id("svc-1", "b")] != big {
		t.Fatalf("created on %v, want a on %s and b on %s", where, small, big)
	}
	allocated := func() map[string]placement.Resources {
		cands, err := sched.Candidates(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]placement.Resources{}
		for _, c := range cands {
			out[c.ID] = c.Allocated
		}
		return out
	}
	if got := allocated(); got[small].MemoryBytes != 3*gib || got[big].MemoryBytes != 3*gib {
		t.Fatalf("allocated %v", got)
	}

	// No node has 64 GiB: the registration fails saying so, and rolls back
	// without a plugin call for resources never placed.
	before := len(e.fake.Calls())
	err = orchestratortest.Register(context.Background(), e.store, orchestratortest.Registration{
		ServiceID: "svc-2", TenantID: "tenant-1", Descriptor: e.desc, Variables: map[string]json.RawMessage{"memory": json.RawMessage(`"64Gi"`)}})
	if err != nil {
		t.Fatal(err)
	}
	s := e.wait(t, "svc-2", service.StatusFailed)
	if !strings.Contains(s.Cause, "0 of 2 nodes fit: 2 lacking 64 GiB of memory") {
		t.Fatalf("cause %q", s.Cause)
	}
	if calls := e.fake.Calls()[before:]; len(calls) != 0 {
		t.Fatalf("plugin calls for a deployment that was never placed: %+v", calls)
	}

	// Removing the first service gives its allocations back.
	e.request(t, "svc-1", service.CmdRemove)
	e.wait(t, "svc-1", service.StatusRemoved)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := allocated()
		if got[small].IsZero() && got[big].IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after removal, allocated %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var released []string
	for _, ev := range commandstest.Stream(t, e.store, "node-"+small) {
		released = append(released, ev.Type)
	}
	if !slices.Contains(released, "node.released") {
		t.Fatalf("the small node's stream: %v", released)
	}
}
