package main

import (
	"fmt"
	"net/http"
	"path/filepath"
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
      argv: [sleep, "3600"]
      dir: ${resource.home.outputs.path}
`

// A service on two real agents' nodes survives the loss of its node: the
// agent is killed, its node goes down, and the reconciler has the service
// re-placed on the other node, running, with what depends on the moved
// resource moved with it.
func TestServiceHealsOffALostNode(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: runs cairnd and two agents")
	}
	t.Parallel()
	bins := buildBinaries(t, "cairnd", "cairn-agent")
	db := testdb.New(t)
	addr := testproc.FreeAddr(t)
	base := "http://" + addr
	server := testproc.Start(t, filepath.Join(bins, "cairnd"), []string{"DATABASE_URL=" + db.ConnString}, "serve", "--listen", addr,
		"--data-dir", filepath.Join(traversableTempDir(t), "data"), "--log-format", "json",
		"--heartbeat-interval", "1s", "--disconnect-after", "3s", "--down-after", "3s", "--reconcile-interval", "2s")
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
	admin := gqlClient{url: base + "/graphql", token: m[1]}

	fileRoot := traversableTempDir(t)
	agents := map[string]*testproc.Process{}
	for _, host := range []string{"heal-1", "heal-2"} {
		var jt struct {
			CreateJoinToken struct{ Token string } `json:"createJoinToken"`
		}
		admin.must(t, `mutation { createJoinToken(input: {labels: [{key: "role", value: "heal"}]}) { token } }`, nil, &jt)
		a := testproc.Start(t, filepath.Join(bins, "cairn-agent"), []string{"CAIRN_JOIN_TOKEN=" + jt.CreateJoinToken.Token},
			"--server", base, "--data-dir", filepath.Join(t.TempDir(), "agent"), "--file-root", fileRoot,
			"--hostname", host, "--log-format", "json")
		t.Cleanup(func() { _ = a.Stop(time.Minute) })
		agents[host] = a
	}
	nodeOf := map[string]string{} // id → host
	poll(t, step, "both agents' nodes to be online", func() (bool, string) {
		var out struct {
			Nodes struct {
				Edges []struct {
					Node struct{ ID, Hostname, Status string }
				}
			}
		}
		if err := admin.do(`{ nodes(first: 10) { edges { node { id hostname status } } } }`, nil, &out); err != nil {
			return false, err.Error()
		}
		online := 0
		for _, e := range out.Nodes.Edges {
			nodeOf[e.Node.ID] = e.Node.Hostname
			if e.Node.Status == "ONLINE" {
				online++
			}
		}
		return online == 2, fmt.Sprintf("nodes %+v", out.Nodes.Edges)
	}, server)

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
	id := made.CreateService.Service.ID
	type view struct {
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
	read := func() view {
		var v view
		admin.must(t, `query($id: ID!) { service(id: $id) { status cause resources { id nodeId status drift { kind detail } } } }`, map[string]any{"id": id}, &v)
		return v
	}
	waitStatus := func(want string) view {
		var v view
		poll(t, step, "service "+want, func() (bool, string) {
			v = read()
			return v.Service.Status == want, fmt.Sprintf("%+v", v.Service)
		}, server)
		return v
	}
	waitStatus("REGISTERED")
	tenant.must(t, `mutation($id: ID!) { startService(input: {serviceId: $id}) { service { status } } }`, map[string]any{"id": id}, nil)
	v := waitStatus("RUNNING")
	home, worker := ocl.ResourceID(id, "home"), ocl.ResourceID(id, "worker")
	nodeOfResource := func(v view, rid string) string {
		for _, r := range v.Service.Resources {
			if r.ID == rid && r.NodeID != nil {
				return *r.NodeID
			}
		}
		return ""
	}
	first := nodeOfResource(v, home)
	if first == "" || nodeOfResource(v, worker) != first {
		t.Fatalf("home on %q, worker on %q", first, nodeOfResource(v, worker))
	}

	// The first node's agent dies; the process it supervised is left
	// behind (as on a real machine that lost its agent), and cleaned up
	// by the test.
	before, err := readService(admin, id)
	if err != nil {
		t.Fatal(err)
	}
	if pid := before.resource(t, worker).outputs(t).PID; pid > 0 {
		t.Cleanup(func() { killLeftover(t, pid) })
	}
	lost := time.Now()
	agents[nodeOf[first]].Kill()
	poll(t, step, "the service to run again on the other node", func() (bool, string) {
		v = read()
		now := nodeOfResource(v, home)
		return v.Service.Status == "RUNNING" && now != "" && now != first && nodeOfResource(v, worker) == now,
			fmt.Sprintf("%s; home on %s: %+v", v.Service.Status, nodeOf[now], v.Service.Resources)
	}, server)
	t.Logf("healed %s after the agent was killed (disconnect and down windows 3 s each, interval 2 s)", time.Since(lost).Round(100*time.Millisecond))
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
