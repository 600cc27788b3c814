package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cairn/domain/ocl"
	"cairn/internal/testdb"
	"cairn/internal/testproc"
)

// chaosDescriptor is a directory and a process in it on one of the agents'
// nodes, and a note kept by the filestore plugin (observed, so deleting it
// is drift the reconciler sees).
const chaosDescriptor = `apiVersion: cairn/v1
metadata: {name: chaos, version: 1.0.0, vendor: Example Hosting}
variables:
  root: {type: string, required: true}
resources:
  - name: home
    plugin: agent
    type: directory
    properties: {path: "${var.root}/${service.id}"}
    placement: {selector: "role=chaos"}
  - name: worker
    plugin: agent
    type: process
    requests: {cpu: 0.1, memory: 16Mi}
    properties:
      node: ${resource.home.outputs.node}
      argv: [sleep, "120"]
      dir: ${resource.home.outputs.path}
  - name: note
    plugin: filestore
    type: file
    properties: {name: note.txt, content: "${service.id}"}
`

// TestChaos deploys services over four real agents, then for a while kills
// agents (their nodes go down), deletes notes behind Cairn's back and kills
// cairnd once (kill -9, then a new one on the same database). At the end
// every service runs or is degraded with a reason, what runs runs on a live
// node, the plugin's inventory is exactly what the read models list, and
// every repair names the observation that caused it.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: runs cairnd, four agents and the filestore plugin")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the filestore example plugin is a Python program")
	}
	// Not parallel: it runs before the package's parallel tests, so that its
	// four agents and restarts do not crowd the replica tests' timings.
	// CAIRN_CHAOS_SEED repeats a run's order of chaos (its timing still
	// varies); the seed is logged for that.
	seed := time.Now().UnixNano()
	if v := os.Getenv("CAIRN_CHAOS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("CAIRN_CHAOS_SEED: %v", err)
		}
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	bins := buildBinaries(t, "cairnd", "cairn-agent")
	db := testdb.New(t)
	store := traversableTempDir(t)
	plugin, _ := filepath.Abs("../../examples/plugins/filestore/filestore.py")
	pluginsFile := filepath.Join(t.TempDir(), "plugins.yaml")
	writeFile(t, pluginsFile, fmt.Sprintf("exec:\n  - name: filestore\n    command: [%q, %q, %q]\n", python, plugin, store))
	addr := testproc.FreeAddr(t)
	base := "http://" + addr
	dataDir := filepath.Join(traversableTempDir(t), "data")
	start := func() *testproc.Process {
		s := testproc.Start(t, filepath.Join(bins, "cairnd"), []string{"DATABASE_URL=" + db.ConnString}, "serve", "--listen", addr,
			"--data-dir", dataDir, "--log-format", "json", "--plugins", pluginsFile,
			"--heartbeat-interval", "1s", "--disconnect-after", "2s", "--down-after", "2s", "--reconcile-interval", "1s")
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("cairnd output:\n%s", lastLines(s.Output(), 200))
			}
			_ = s.Stop(time.Minute)
		})
		poll(t, step, "cairnd to be ready", func() (bool, string) {
			resp, err := client.Get(base + "/readyz")
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, resp.Status
		}, s)
		return s
	}
	server := start()
	m := firstStartToken.FindStringSubmatch(server.Output())
	if m == nil {
		t.Fatalf("cairnd printed no administrator token\n%s", server.Output())
	}
	admin := gqlClient{url: base + "/graphql", token: m[1]}

	fileRoot := traversableTempDir(t)
	agents := map[string]*testproc.Process{}
	hosts := []string{"chaos-1", "chaos-2", "chaos-3", "chaos-4"}
	for _, host := range hosts {
		var jt struct {
			CreateJoinToken struct{ Token string } `json:"createJoinToken"`
		}
		admin.must(t, `mutation { createJoinToken(input: {labels: [{key: "role", value: "chaos"}]}) { token } }`, nil, &jt)
		a := testproc.Start(t, filepath.Join(bins, "cairn-agent"), []string{"CAIRN_JOIN_TOKEN=" + jt.CreateJoinToken.Token},
			"--server", base, "--data-dir", filepath.Join(t.TempDir(), "agent"), "--file-root", fileRoot,
			"--hostname", host, "--log-format", "json")
		t.Cleanup(func() { _ = a.Stop(time.Minute) })
		agents[host] = a
	}
	type nodeView struct{ ID, Hostname, Status string }
	nodes := func() map[string]nodeView {
		var out struct {
			Nodes struct{ Edges []struct{ Node nodeView } }
		}
		admin.must(t, `{ nodes(first: 10) { edges { node { id hostname status } } } }`, nil, &out)
		byID := map[string]nodeView{}
		for _, e := range out.Nodes.Edges {
			byID[e.Node.ID] = e.Node
		}
		return byID
	}
	waitForNodes(t, admin, hosts, server)

	admin.must(t, `mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { name } } }`, map[string]any{"d": chaosDescriptor}, nil)
	admin.must(t, `mutation { publishTemplate(input: {name: "chaos", version: "1.0.0"}) { template { status } } }`, nil, nil)
	admin.must(t, `mutation { createTenant(input: {id: "acme", name: "Acme"}) { tenant { id } } }`, nil, nil)
	const services = 6
	var bp strings.Builder
	fmt.Fprintf(&bp, "apiVersion: cairn/v1\nkind: Blueprint\nmetadata: {name: chaos}\ntenant: acme\nservices:\n")
	for i := range services {
		fmt.Fprintf(&bp, "  - {name: svc-%d, template: chaos, version: 1.0.0, variables: {root: %q}}\n", i, fileRoot)
	}
	var applied struct {
		ApplyBlueprint struct {
			Changes []struct{ Service, ServiceID string }
		} `json:"applyBlueprint"`
	}
	admin.must(t, `mutation($d: String!) { applyBlueprint(input: {document: $d}) { changes { service serviceId } } }`, map[string]any{"d": bp.String()}, &applied)
	var ids []string
	for _, c := range applied.ApplyBlueprint.Changes {
		ids = append(ids, c.ServiceID)
	}

	type resourceView struct {
		ID, Status string
		NodeID     *string
		Outputs    struct{ PID int }
		Drift      *struct{ Kind string }
	}
	type svcView struct {
		ID, Name, Status string
		Cause            *string
		Resources        []resourceView
	}
	read := func() []svcView {
		var out struct {
			Services struct{ Edges []struct{ Node svcView } }
		}
		admin.must(t, `{ services(first: 50, filter: {blueprint: "chaos"}) { edges { node { id name status cause
			resources { id status nodeId outputs drift { kind } } } } } }`, nil, &out)
		var vs []svcView
		for _, e := range out.Services.Edges {
			vs = append(vs, e.Node)
		}
		return vs
	}
	var pids []int
	t.Cleanup(func() {
		for _, pid := range pids {
			killLeftover(t, pid)
		}
	})
	// settled: every service in one of the statuses and, when everyOnline,
	// every placed resource of a running one on a node that is online (a
	// node whose agent was just killed is down only after the windows).
	settled := func(everyOnline bool, want ...string) func() (bool, string) {
		return func() (bool, string) {
			vs := read()
			online := map[string]bool{}
			if everyOnline {
				for id, n := range nodes() {
					online[id] = n.Status == "ONLINE"
				}
			}
			for _, v := range vs {
				if everyOnline && v.Status == "RUNNING" {
					for _, r := range v.Resources {
						if r.NodeID != nil && !online[*r.NodeID] {
							return false, fmt.Sprintf("%s has resource %s on node %s, not online", v.Name, r.ID, *r.NodeID)
						}
					}
				}
				for _, r := range v.Resources {
					if r.Outputs.PID > 0 && !slices.Contains(pids, r.Outputs.PID) {
						pids = append(pids, r.Outputs.PID)
					}
				}
				if !slices.Contains(want, v.Status) {
					return false, fmt.Sprintf("%s is %s", v.Name, v.Status)
				}
			}
			return len(vs) == services, fmt.Sprintf("%d services", len(vs))
		}
	}
	poll(t, 2*step, "every service to run", settled(false, "RUNNING"), server)

	// Chaos for a while: agents killed (two at most, so that two nodes
	// remain), notes deleted, and cairnd killed once halfway.
	killed := 0
	restarted := false
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		switch n := rng.IntN(10); {
		case n < 2 && killed < 2:
			alive := slices.DeleteFunc(slices.Clone(hosts), func(h string) bool { return !agents[h].Running() })
			h := alive[rng.IntN(len(alive))]
			t.Logf("chaos: kill the agent of %s", h)
			agents[h].Kill()
			killed++
		case n < 7:
			id := ids[rng.IntN(len(ids))]
			path := filepath.Join(store, ocl.ResourceID(id, "note"), "note.txt")
			if os.Remove(path) == nil {
				t.Logf("chaos: delete the note of %s", id)
			}
		case !restarted && time.Until(deadline) < 12*time.Second:
			t.Logf("chaos: kill -9 cairnd, start another")
			server.Kill()
			server = start()
			restarted = true
		}
		time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
	}
	if !restarted {
		server.Kill()
		server = start()
	}

	t.Cleanup(func() {
		if t.Failed() {
			names := map[string]string{}
			for id, n := range nodes() {
				names[id] = n.Hostname + " " + n.Status
			}
			for _, v := range read() {
				cause := ""
				if v.Cause != nil {
					cause = " (" + *v.Cause + ")"
				}
				t.Logf("%s %s%s:", v.Name, v.Status, cause)
				for _, r := range v.Resources {
					where, drift := "nowhere", ""
					if r.NodeID != nil {
						where = names[*r.NodeID]
					}
					if r.Drift != nil {
						drift = ", drifted: " + r.Drift.Kind
					}
					t.Logf("    %s %s on %s, pid %d%s", r.ID, r.Status, where, r.Outputs.PID, drift)
				}
			}
			// The same services once more through node(id:), which the
			// answer cache never keeps: a difference is a stale answer.
			for _, v := range read() {
				var one struct {
					Node *svcView `json:"node"`
				}
				admin.must(t, `query($id: ID!) { node(id: $id) { ... on Service { id name status cause
					resources { id status nodeId outputs drift { kind } } } } }`, map[string]any{"id": v.ID}, &one)
				if one.Node == nil {
					continue
				}
				var rs []string
				for _, r := range one.Node.Resources {
					rs = append(rs, r.ID+" "+r.Status)
				}
				t.Logf("%s read afresh: %s %v", v.Name, one.Node.Status, rs)
			}
			var open struct {
				Jobs struct {
					Edges []struct {
						Node struct {
							ID, Status   string
							Acknowledged bool
							Spec         struct{ Action *string }
							Target       struct{ NodeID *string }
							Node         *struct{ Hostname string }
							UpdatedAt    string
						}
					}
				}
			}
			admin.must(t, `{ jobs(first: 100, filter: {status: [QUEUED, DISPATCHED, RUNNING, CANCELLING]}) { edges { node {
				id status acknowledged spec { action } target { nodeId } node { hostname } updatedAt } } } }`, nil, &open)
			for _, e := range open.Jobs.Edges {
				j := e.Node
				action, target, leased := "", "", ""
				if j.Spec.Action != nil {
					action = *j.Spec.Action
				}
				if j.Target.NodeID != nil {
					target = names[*j.Target.NodeID]
				}
				if j.Node != nil {
					leased = j.Node.Hostname
				}
				t.Logf("open job %s %s: %s for %q, leased to %q (acknowledged %v), last changed %s", j.ID, action, j.Status, target, leased, j.Acknowledged, j.UpdatedAt)
			}
		}
	})
	// notesKept: the plugin keeps exactly the notes the read models list.
	// A note deleted just before the chaos ended is missed until the
	// reconciler's next pass notices it, so this is waited for too.
	notesKept := func() (bool, string) {
		var want, have []string
		for _, v := range read() {
			want = append(want, ocl.ResourceID(v.ID, "note"))
		}
		entries, err := os.ReadDir(store)
		if err != nil {
			return false, err.Error()
		}
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(store, e.Name(), "note.txt")); err == nil {
				have = append(have, e.Name())
			}
		}
		slices.Sort(want)
		slices.Sort(have)
		return slices.Equal(want, have), fmt.Sprintf("the filestore holds %v; the read models list %v", have, want)
	}
	// Settled means what is checked below: a service's status can read
	// RUNNING while a repair asked for a moment ago is still carried out.
	resourcesRun := func() (bool, string) {
		for _, v := range read() {
			if v.Status != "RUNNING" {
				continue
			}
			for _, r := range v.Resources {
				if r.Drift != nil || r.Status != "RUNNING" {
					return false, fmt.Sprintf("%s: resource %s is %s", v.Name, r.ID, r.Status)
				}
			}
		}
		return true, ""
	}
	poll(t, 90*time.Second, "every service to run again, or be degraded, with its note", func() (bool, string) {
		if ok, detail := settled(true, "RUNNING", "DEGRADED")(); !ok {
			return false, detail
		}
		if ok, detail := resourcesRun(); !ok {
			return false, detail
		}
		return notesKept()
	}, server)
	live := map[string]bool{}
	for id, n := range nodes() {
		live[id] = n.Status == "ONLINE"
	}
	vs := read()
	for _, v := range vs {
		if v.Status == "DEGRADED" {
			if v.Cause == nil || *v.Cause == "" {
				t.Errorf("%s is degraded without a reason", v.Name)
			}
			continue
		}
		for _, r := range v.Resources {
			if r.NodeID != nil && !live[*r.NodeID] {
				t.Errorf("%s: resource %s runs on node %s, which is not online", v.Name, r.ID, *r.NodeID)
			}
			if r.Drift != nil {
				t.Errorf("%s: resource %s still drifted (%s)", v.Name, r.ID, r.Drift.Kind)
			}
			if r.Status != "RUNNING" {
				t.Errorf("%s runs, but its resource %s is %s", v.Name, r.ID, r.Status)
			}
		}
	}
	if ok, detail := notesKept(); !ok {
		t.Error(detail)
	}
	// Every repair names what caused it.
	var hist struct {
		Events struct {
			Edges []struct {
				Node struct {
					StreamID string
					Metadata struct{ CausationID *string }
				}
			}
		}
	}
	admin.must(t, `{ events(first: 500, filter: {types: ["service.repair_requested"]}) { edges { node { streamId metadata { causationId } } } } }`, nil, &hist)
	for _, e := range hist.Events.Edges {
		if c := e.Node.Metadata.CausationID; c == nil || *c == "" || *c == "0" {
			t.Errorf("a repair of %s has no cause", e.Node.StreamID)
		}
	}
	var states []string
	for _, v := range vs {
		states = append(states, v.Name+" "+v.Status)
	}
	t.Logf("%d repairs after %d agents killed, a cairnd restart and deleted notes; services: %v", len(hist.Events.Edges), killed, states)
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
