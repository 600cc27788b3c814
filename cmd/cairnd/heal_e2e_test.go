package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn/domain/ocl"
	"cairn/internal/testdb"
	"cairn/internal/testproc"
)

// healDescriptor is a directory and a process kept running in it, on the
// directory's node.
const healDescriptor = `apiVersion: cairn/v1
metadata: {name: healer, version: 1.0.0, vendor: Example Hosting}
variables:
  root: {type: string, required: true}
resources:
  - name: home
    plugin: agent
    type: directory
    properties: {path: "${var.root}/${service.id}"}
    placement: {selector: "role=heal"}
  - name: worker
    plugin: agent
    type: process
    requests: {cpu: 0.1, memory: 16Mi}
    properties:
      node: ${resource.home.outputs.node}
      argv: [sleep, "600"]
      dir: ${resource.home.outputs.path}
`

// healFleet is cairnd with real agents on nodes labelled role=heal, the
// healer template published, and one service of it running.
type healFleet struct {
	server  *testproc.Process
	admin   gqlClient
	agents  map[string]*testproc.Process // host → agent
	nodeOf  map[string]string            // node id → host
	service string
}

// healView is the service as the API lists it.
type healView struct {
	Service struct {
		Status, Cause string
		Resources     []struct {
			ID     string
			NodeID *string
			Status string
			Drift  *struct{ Kind, Detail string }
		}
	}
}

// nodeOfResource is the node resource rid is on ("" when it is on none).
func (v healView) nodeOfResource(rid string) string {
	for _, r := range v.Service.Resources {
		if r.ID == rid && r.NodeID != nil {
			return *r.NodeID
		}
	}
	return ""
}

// describe lists the service's resources with their nodes' names.
func (f *healFleet) describe(v healView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", v.Service.Status)
	for _, r := range v.Service.Resources {
		where := "no node"
		if r.NodeID != nil {
			where = f.nodeOf[*r.NodeID]
		}
		fmt.Fprintf(&b, " %s %s on %s", r.ID, r.Status, where)
		if r.Drift != nil {
			fmt.Fprintf(&b, " (drifted: %s)", r.Drift.Kind)
		}
		b.WriteString(";")
	}
	return b.String()
}

func (f *healFleet) read(t *testing.T) healView {
	t.Helper()
	var v healView
	f.admin.must(t, `query($id: ID!) { service(id: $id) { status cause resources { id nodeId status drift { kind detail } } } }`,
		map[string]any{"id": f.service}, &v)
	return v
}

// startHealFleet starts cairnd (one-second heartbeats, windows of
// window, extra flags) and an agent per host on the transport, and deploys
// one healer service.
func startHealFleet(t *testing.T, window time.Duration, extra []string, transport string, hosts ...string) *healFleet {
	t.Helper()
	bins := buildBinaries(t, "cairnd", "cairn-agent")
	db := testdb.New(t)
	addr := testproc.FreeAddr(t)
	base := "http://" + addr
	secs := fmt.Sprintf("%ds", int(window/time.Second))
	args := append([]string{"serve", "--listen", addr,
		"--data-dir", filepath.Join(traversableTempDir(t), "data"), "--log-format", "json",
		"--heartbeat-interval", "1s", "--disconnect-after", secs, "--down-after", secs, "--reconcile-interval", "2s"}, extra...)
	server := testproc.Start(t, filepath.Join(bins, "cairnd"), []string{"DATABASE_URL=" + db.ConnString}, args...)
	t.Cleanup(func() { _ = server.Stop(time.Minute) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cairnd output:\n%s", server.Output())
		}
	})
	poll(t, step, "cairnd to be ready", func() (bool, string) {
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	}, server)
	m := firstStartToken.FindStringSubmatch(server.Output())
	if m == nil {
		t.Fatalf("cairnd printed no administrator token\n%s", server.Output())
	}
	f := &healFleet{server: server, admin: gqlClient{url: base + "/graphql", token: m[1]},
		agents: map[string]*testproc.Process{}, nodeOf: map[string]string{}}
	admin := f.admin

	fileRoot := traversableTempDir(t)
	for _, host := range hosts {
		var jt struct {
			CreateJoinToken struct{ Token string } `json:"createJoinToken"`
		}
		admin.must(t, `mutation { createJoinToken(input: {labels: [{key: "role", value: "heal"}]}) { token } }`, nil, &jt)
		a := testproc.Start(t, filepath.Join(bins, "cairn-agent"), []string{"CAIRN_JOIN_TOKEN=" + jt.CreateJoinToken.Token},
			"--server", base, "--data-dir", filepath.Join(t.TempDir(), "agent"), "--file-root", fileRoot,
			"--hostname", host, "--log-format", "json", "--transport", transport)
		t.Cleanup(func() { _ = a.Stop(time.Minute) })
		f.agents[host] = a
	}
	for host, id := range waitForNodes(t, admin, hosts, server) {
		f.nodeOf[id] = host
	}

	vendor := gqlClient{url: admin.url, token: userToken(t, admin, "Example Hosting", "VENDOR", "")}
	vendor.must(t, `mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { name } } }`, map[string]any{"d": healDescriptor}, nil)
	vendor.must(t, `mutation { publishTemplate(input: {name: "healer", version: "1.0.0"}) { template { status } } }`, nil, nil)
	admin.must(t, `mutation { createTenant(input: {id: "acme", name: "Acme"}) { tenant { id } } }`, nil, nil)
	tenant := gqlClient{url: admin.url, token: userToken(t, admin, "Alice", "TENANT_ADMIN", "acme")}
	var made struct {
		CreateService struct{ Service struct{ ID string } } `json:"createService"`
	}
	tenant.must(t, `mutation($v: JSON) { createService(input: {name: "heals", templateName: "healer", templateVersion: "1.0.0", variables: $v}) { service { id } } }`,
		map[string]any{"v": map[string]string{"root": fileRoot}}, &made)
	f.service = made.CreateService.Service.ID
	f.waitStatus(t, "REGISTERED")
	tenant.must(t, `mutation($id: ID!) { startService(input: {serviceId: $id}) { service { status } } }`, map[string]any{"id": f.service}, nil)
	v := f.waitStatus(t, "RUNNING")
	home, worker := ocl.ResourceID(f.service, "home"), ocl.ResourceID(f.service, "worker")
	if first := v.nodeOfResource(home); first == "" || v.nodeOfResource(worker) != first {
		t.Fatalf("home on %q, worker on %q", first, v.nodeOfResource(worker))
	}
	return f
}

func (f *healFleet) waitStatus(t *testing.T, want string) healView {
	t.Helper()
	var v healView
	poll(t, step, "service "+want, func() (bool, string) {
		v = f.read(t)
		return v.Service.Status == want, fmt.Sprintf("%+v", v.Service)
	}, f.server)
	return v
}

// killAgent kills the agent of the node; the process it supervised for
// the service is left behind (as on a real machine that lost its agent),
// and cleaned up by the test.
func (f *healFleet) killAgent(t *testing.T, nodeID string) {
	t.Helper()
	f.cleanUpWorker(t)
	f.agents[f.nodeOf[nodeID]].Kill()
}

// cleanUpWorker has the test end the service's worker process as it runs
// now: an agent that stops, or is killed, leaves the processes it
// supervised running. The agents stop first, or one would start the
// worker again.
func (f *healFleet) cleanUpWorker(t *testing.T) {
	t.Helper()
	sv, err := readService(f.admin, f.service)
	if err != nil {
		t.Fatal(err)
	}
	pid := sv.resource(t, ocl.ResourceID(f.service, "worker")).outputs(t).PID
	if pid <= 0 {
		return
	}
	t.Cleanup(func() {
		for _, a := range f.agents {
			_ = a.Stop(time.Minute)
		}
		if strings.HasPrefix(processCmdline(pid), "sleep ") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// A service on two real agents' nodes survives the loss of its node: the
// agent is killed, its node goes down, and the reconciler has the service
// re-placed on the other node, running, with what depends on the moved
// resource moved with it.
func TestServiceHealsOffALostNode(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: runs cairnd and two agents")
	}
	t.Parallel()
	f := startHealFleet(t, 3*time.Second, nil, "auto", "heal-1", "heal-2")
	admin, server, nodeOf, id := f.admin, f.server, f.nodeOf, f.service
	home, worker := ocl.ResourceID(id, "home"), ocl.ResourceID(id, "worker")
	v := f.read(t)
	first := v.nodeOfResource(home)

	lost := time.Now()
	f.killAgent(t, first)
	poll(t, step, "the service to run again on the other node", func() (bool, string) {
		v = f.read(t)
		now := v.nodeOfResource(home)
		return v.Service.Status == "RUNNING" && now != "" && now != first && v.nodeOfResource(worker) == now,
			fmt.Sprintf("%s; home on %s: %+v", v.Service.Status, nodeOf[now], v.Service.Resources)
	}, server)
	t.Logf("healed %s after the agent was killed (disconnect and down windows 3 s each, interval 2 s)", time.Since(lost).Round(100*time.Millisecond))
	f.cleanUpWorker(t)
	for _, r := range v.Service.Resources {
		if r.Drift != nil || r.Status != "RUNNING" && r.Status != "CREATED" {
			t.Errorf("resource %s after healing: %s, drift %+v", r.ID, r.Status, r.Drift)
		}
	}
	// The history says why: the drift, then the repair it caused.
	var hist struct {
		Events struct {
			Edges []struct{ Node struct{ Type string } }
		}
	}
	admin.must(t, `query($s: [String!]) { events(first: 100, filter: {streamIds: $s}) { edges { node { type } } } }`,
		map[string]any{"s": []string{"service-" + id, "resource-" + home}}, &hist)
	var types []string
	for _, e := range hist.Events.Edges {
		types = append(types, e.Node.Type)
	}
	want := []string{"resource.drift_found", "service.repair_requested", "resource.repair_begun", "resource.placed", "service.repaired"}
	next := 0
	for _, typ := range types {
		if next < len(want) && typ == want[next] {
			next++
		}
	}
	if next != len(want) {
		t.Fatalf("history %v lacks %v in order", types, want)
	}
}

// A repair whose new node dies while the repair runs carries on elsewhere:
// the service's node is lost, and the moment the repair has made the
// service's home on another node, that node's agent is killed too, with
// the worker's jobs on their way to it. Those jobs end when the node is
// marked down (lost: nobody will take them), the repair fails for that
// reason, and the next one places the service on the third node. Job
// leases last ten minutes here: a job leased to the dead agent used to
// wait out its lease. The agents long-poll, as agents do for a while after
// the control plane restarted (each lease a long poll took cost a
// reconnect and a growing backoff).
func TestRepairOutlivesItsNewNode(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: runs cairnd and three agents")
	}
	t.Parallel()
	f := startHealFleet(t, 2*time.Second, []string{"--job-lease", "10m"}, "poll", "heal-1", "heal-2", "heal-3")
	home, worker := ocl.ResourceID(f.service, "home"), ocl.ResourceID(f.service, "worker")
	first := f.read(t).nodeOfResource(home)
	f.killAgent(t, first)

	// Watch closely for the repair to make the home on another node: the
	// kill must come while the repair still has jobs to run there.
	var second string
	deadline := time.Now().Add(time.Minute)
	for second == "" {
		for _, r := range f.read(t).Service.Resources {
			if r.ID == home && r.NodeID != nil && *r.NodeID != first && r.Status == "RUNNING" && r.Drift == nil {
				second = *r.NodeID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the repair did not make the home again off %s within a minute: %s", f.nodeOf[first], f.describe(f.read(t)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	lost := time.Now()
	f.killAgent(t, second)
	var v healView
	poll(t, time.Minute, "the service to run on the third node", func() (bool, string) {
		v = f.read(t)
		now := v.nodeOfResource(home)
		return v.Service.Status == "RUNNING" && now != "" && now != first && now != second && v.nodeOfResource(worker) == now,
			f.describe(v)
	}, f.server)
	t.Logf("running on %s %s after the second node's agent was killed (windows 2 s each, interval 2 s)",
		f.nodeOf[v.nodeOfResource(home)], time.Since(lost).Round(100*time.Millisecond))
	f.cleanUpWorker(t)
	for _, r := range v.Service.Resources {
		if r.Drift != nil || r.Status != "RUNNING" {
			t.Errorf("resource %s: %s, drift %+v", r.ID, r.Status, r.Drift)
		}
	}
}
