package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn/domain/ocl"
	"cairn/internal/pgcluster"
	"cairn/internal/testdb"
	"cairn/internal/testproc"
)

// step is how long one step of a service's life may take on a loaded
// machine: every plugin call of the agent plugin is a job that goes through
// the dispatcher to a real agent and back.
const step = 3 * time.Minute

// TestServicesEndToEnd runs the static-site example with real processes:
// cairnd on a PostgreSQL database with a plugins file registering an http
// plugin against a signed DNS endpoint, and a cairn-agent enrolled with a
// join token whose label the descriptor's placement asks for. A vendor
// publishes the example's descriptor (a directory and a DNS record, then a
// page and a web server process using the directory's outputs), a tenant
// deploys it, starts, stops and removes it, and each step is checked where
// it happens: on the agent's disk, in the process table, over HTTP, in the
// DNS endpoint and in the event history. A second service writes a
// sensitive variable into a file on the node, and at the end neither that
// value nor the DNS token is anywhere but where it was meant for: not in
// the events, the read models, a dump of the database or the logs.
func TestServicesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: builds cairnd and cairn-agent and runs them with PostgreSQL, a DNS endpoint and a web server")
	}
	python := pythonInterpreter(t)
	bins := buildBinaries(t, "cairnd", "cairn-agent")

	// The DNS service the http plugin drives, and the plugins file naming
	// it. It must answer before cairnd starts: cairnd asks it for its types.
	secret := randomHex(t, 32)
	dns := newDNSEndpoint([]byte(secret))
	dnsSrv := httptest.NewServer(dns)
	t.Cleanup(dnsSrv.Close)
	cfgDir := t.TempDir()
	secretFile := filepath.Join(cfgDir, "dns.secret")
	pluginsFile := filepath.Join(cfgDir, "plugins.yaml")
	writeFile(t, secretFile, secret+"\n")
	writeFile(t, pluginsFile, fmt.Sprintf("http:\n  - name: http\n    endpoint: %s/\n    secretFile: %s\n", dnsSrv.URL, secretFile))

	// cairnd on a database of its own that the test can dump.
	db := testdb.New(t)
	addr := testproc.FreeAddr(t)
	base := "http://" + addr
	server := testproc.Start(t, filepath.Join(bins, "cairnd"), []string{"DATABASE_URL=" + db.ConnString}, "serve", "--listen", addr,
		"--data-dir", filepath.Join(traversableTempDir(t), "data"), "--log-format", "json", "--plugins", pluginsFile,
		"--heartbeat-interval", "2s", "--disconnect-after", "30s", "--down-after", "60s")
	t.Cleanup(func() {
		if err := server.Stop(time.Minute); err != nil {
			t.Errorf("cairnd after SIGTERM: %v", err)
		}
	})
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

	// One node, labelled as the descriptor's placement wants.
	var jt struct {
		CreateJoinToken struct{ Token string } `json:"createJoinToken"`
	}
	admin.must(t, `mutation { createJoinToken(input: {labels: [{key: "role", value: "web"}]}) { token } }`, nil, &jt)
	fileRoot := t.TempDir()
	agent := testproc.Start(t, filepath.Join(bins, "cairn-agent"), []string{"CAIRN_JOIN_TOKEN=" + jt.CreateJoinToken.Token},
		"--server", base, "--data-dir", filepath.Join(t.TempDir(), "agent"), "--file-root", fileRoot,
		"--hostname", "web-1", "--log-format", "json")
	// Stopped before cairnd (cleanups run last first).
	t.Cleanup(func() {
		if err := agent.Stop(time.Minute); err != nil {
			t.Errorf("cairn-agent after SIGTERM: %v", err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cairn-agent output:\n%s", agent.Output())
		}
	})
	nodeID := waitForNodes(t, admin, []string{"web-1"}, server, agent)["web-1"]

	// The vendor publishes the example as it is.
	vendor := gqlClient{url: admin.url, token: userToken(t, admin, "Example Hosting", "VENDOR", "")}
	descriptor, err := os.ReadFile("../../examples/static-site/service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		RegisterTemplate struct {
			Template struct{ Name, Version, Status string }
		} `json:"registerTemplate"`
	}
	vendor.must(t, `mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { name version status } } }`,
		map[string]any{"d": string(descriptor)}, &reg)
	if tpl := reg.RegisterTemplate.Template; tpl.Name != "static-site" || tpl.Version != "1.0.0" {
		t.Fatalf("registered %+v", tpl)
	}
	vendor.must(t, `mutation { publishTemplate(input: {name: "static-site", version: "1.0.0"}) { template { status } } }`, nil, nil)

	// The operator makes the tenant and its administrator, who deploys.
	admin.must(t, `mutation { createTenant(input: {id: "acme", name: "Acme"}) { tenant { id } } }`, nil, nil)
	tenant := gqlClient{url: admin.url, token: userToken(t, admin, "Alice", "TENANT_ADMIN", "acme")}
	port := strconv.Itoa(freePort(t))
	dnsToken := "dns-" + randomHex(t, 8)
	var created struct {
		CreateService struct{ Service struct{ ID, Status string } } `json:"createService"`
	}
	tenant.must(t, `mutation($v: JSON) { createService(input: {name: "my-site", templateName: "static-site", templateVersion: "1.0.0",
		flavor: "coming-soon", variables: $v}) { service { id status } } }`,
		map[string]any{"v": map[string]string{"root": fileRoot, "hostname": "www", "port": port, "python": python, "dns_token": dnsToken}}, &created)
	svcID := created.CreateService.Service.ID
	instances := []string{"site-root", "dns", "index-page", "web"}
	rid := map[string]string{}
	for _, in := range instances {
		rid[in] = ocl.ResourceID(svcID, in)
	}
	// A web server left behind by a failure is not left running.
	var webPID int
	t.Cleanup(func() { killLeftover(t, webPID) })

	waitFor := func(t *testing.T, want string) serviceView {
		t.Helper()
		var s serviceView
		poll(t, step, "service "+svcID+" "+want, func() (bool, string) {
			var err error
			if s, err = readService(tenant, svcID); err != nil {
				return false, err.Error()
			}
			switch s.Status {
			case "FAILED", "ROLLBACK_FAILED", "MANUAL_CLEANUP_REQUIRED":
				t.Fatalf("service %s is %s (failed in %s): %s; remaining %v", svcID, s.Status, s.FailedIn, s.Cause, s.Remaining)
			}
			return s.Status == want, "status " + s.Status
		}, server, agent)
		return s
	}

	siteDir := filepath.Join(fileRoot, svcID)
	page := filepath.Join(siteDir, "index.html")
	siteURL := "http://127.0.0.1:" + port + "/"

	if !t.Run("register", func(t *testing.T) {
		s := waitFor(t, "REGISTERED")
		if fi, err := os.Stat(siteDir); err != nil || !fi.IsDir() {
			t.Fatalf("site directory %s: %v", siteDir, err)
		}
		b, err := os.ReadFile(page)
		if err != nil || !strings.Contains(string(b), "<h1>Coming soon</h1>") || !strings.Contains(string(b), "tenant acme at www.example.net") {
			t.Fatalf("index page: %q %v", b, err)
		}
		if recs, _, _ := dns.snapshot(""); recs[rid["dns"]] != "www.example.net" || len(recs) != 1 {
			t.Fatalf("DNS records %v, want www.example.net for %s", recs, rid["dns"])
		}
		var outs map[string]string
		if err := json.Unmarshal(s.Outputs, &outs); err != nil || outs["url"] != "http://www.example.net:"+port+"/" || outs["root"] != siteDir {
			t.Fatalf("service outputs %s (%v)", s.Outputs, err)
		}
		for _, in := range []string{"site-root", "index-page", "web"} {
			if o := s.resource(t, rid[in]).outputs(t); o.Node != nodeID {
				t.Errorf("%s placed on %q, want the agent's node %s", in, o.Node, nodeID)
			}
		}
		if o := s.resource(t, rid["web"]).outputs(t); o.PID != 0 || o.State != "stopped" {
			t.Errorf("web before start: %+v", o)
		}
		if reachable(siteURL) {
			t.Errorf("%s answers before the service started", siteURL)
		}
	}) {
		return
	}

	// The scheduler allocated the node-bound resources on the node: the web
	// process asks the process type's default, the directory and the page
	// nothing. A request no node can take fails the deployment, saying why.
	if !t.Run("capacity", func(t *testing.T) {
		type capacityView struct {
			ServerNode struct {
				Capacity struct {
					Allocations int
					Allocated   struct {
						CPU         float64
						MemoryBytes int64
					}
					Allocatable struct{ MemoryBytes int64 }
				}
			}
		}
		var cv capacityView
		admin.must(t, `query($id: ID!) { serverNode(id: $id) { capacity { allocations allocated { cpu memoryBytes } allocatable { memoryBytes } } } }`,
			map[string]any{"id": nodeID}, &cv)
		c := cv.ServerNode.Capacity
		if c.Allocations != 3 || c.Allocated.CPU != 0.1 || c.Allocated.MemoryBytes != 64<<20 || c.Allocatable.MemoryBytes <= 0 {
			t.Fatalf("node capacity after the deployment: %+v", c)
		}
		vendor.must(t, `mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { name } } }`,
			map[string]any{"d": tooBigDescriptor}, nil)
		vendor.must(t, `mutation { publishTemplate(input: {name: "too-big", version: "1.0.0"}) { template { status } } }`, nil, nil)
		// More than the node has at all: refused before anything is recorded.
		err := tenant.do(`mutation { createService(input: {name: "huge", templateName: "too-big", templateVersion: "1.0.0",
			variables: {memory: "100Ti"}}) { service { id } } }`, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "resources.hog.requests: asks 0.1 CPU, 100 TiB memory, more than any of the 1 nodes it may go on offers") {
			t.Fatalf("a request larger than any node: %v", err)
		}
		// A reserve that leaves the node 16 MiB free: 32 MiB fits the node
		// but not what is left, so the deployment fails at the resource,
		// saying why; with the reserve lifted, a retry deploys it.
		admin.must(t, `mutation($id: ID!, $m: Int64!) { setNodeReserve(input: {nodeId: $id, reserve: {memoryBytes: $m}}) { cursor } }`,
			map[string]any{"id": nodeID, "m": c.Allocatable.MemoryBytes - c.Allocated.MemoryBytes - 16<<20}, nil)
		var made struct {
			CreateService struct{ Service struct{ ID string } } `json:"createService"`
		}
		tenant.must(t, `mutation { createService(input: {name: "almost", templateName: "too-big", templateVersion: "1.0.0",
			variables: {memory: "32Mi"}}) { service { id } } }`, nil, &made)
		id := made.CreateService.Service.ID
		settle := func(want string) serviceView {
			var s serviceView
			poll(t, step, "service "+id+" "+want, func() (bool, string) {
				var err error
				if s, err = readService(tenant, id); err != nil {
					return false, err.Error()
				}
				return s.Status == want, s.Status + " " + s.Cause
			}, server, agent)
			return s
		}
		if failed := settle("FAILED"); !strings.Contains(failed.Cause, "0 of 1 nodes fit: 1 lacking 32 MiB of memory") {
			t.Fatalf("the failure says %q", failed.Cause)
		}
		admin.must(t, `mutation($id: ID!) { setNodeReserve(input: {nodeId: $id, inherit: true}) { cursor } }`, map[string]any{"id": nodeID}, nil)
		tenant.must(t, `mutation($id: ID!) { retryService(input: {serviceId: $id}) { service { status } } }`, map[string]any{"id": id}, nil)
		settle("REGISTERED")
		tenant.must(t, `mutation($id: ID!) { removeService(input: {serviceId: $id}) { service { status } } }`, map[string]any{"id": id}, nil)
		settle("REMOVED")
		admin.must(t, `query($id: ID!) { serverNode(id: $id) { capacity { allocations allocated { cpu memoryBytes } allocatable { memoryBytes } } } }`,
			map[string]any{"id": nodeID}, &cv)
		if cv.ServerNode.Capacity.Allocations != 3 {
			t.Fatalf("a failed placement left allocations: %+v", cv.ServerNode.Capacity)
		}
	}) {
		return
	}

	// A sensitive variable written into a file on the node: the one place
	// it goes in clear.
	password := "pw-" + randomHex(t, 12)
	if !t.Run("sensitive", func(t *testing.T) {
		vendor.must(t, `mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { name } } }`,
			map[string]any{"d": secretFileDescriptor}, nil)
		vendor.must(t, `mutation { publishTemplate(input: {name: "secret-file", version: "1.0.0"}) { template { status } } }`, nil, nil)
		var made struct {
			CreateService struct{ Service struct{ ID string } } `json:"createService"`
		}
		tenant.must(t, `mutation($v: JSON) { createService(input: {name: "credentials", templateName: "secret-file", templateVersion: "1.0.0",
			variables: $v}) { service { id } } }`, map[string]any{"v": map[string]string{"root": fileRoot, "password": password}}, &made)
		id := made.CreateService.Service.ID
		poll(t, step, "service "+id+" to be registered", func() (bool, string) {
			s, err := readService(tenant, id)
			if err != nil {
				return false, err.Error()
			}
			if s.Status == "FAILED" || s.Status == "ROLLBACK_FAILED" {
				t.Fatalf("service %s is %s: %s", id, s.Status, s.Cause)
			}
			return s.Status == "REGISTERED", s.Status
		}, server, agent)
		file := filepath.Join(fileRoot, "credentials-"+id)
		if b, err := os.ReadFile(file); err != nil || string(b) != "password="+password+"\n" {
			t.Fatalf("%s on the node: %q %v", file, b, err)
		}
		// The variable reads as set and sealed, never as its value.
		var sv struct {
			Service struct{ Variables map[string]any }
		}
		tenant.must(t, `query($id: ID!) { service(id: $id) { variables } }`, map[string]any{"id": id}, &sv)
		if got := sv.Service.Variables["password"]; got != "(sealed)" {
			t.Errorf("the sensitive variable reads %v, want (sealed)", got)
		}
		// The tenant sees its deployment's jobs, their arguments sealed.
		var js struct {
			Jobs struct {
				Edges []struct {
					Node struct {
						TenantID string
						Spec     struct {
							Action     string
							Args       json.RawMessage
							SealedArgs bool
						}
					}
				}
			}
		}
		tenant.must(t, `{ jobs(first: 100) { edges { node { tenantId spec { action args sealedArgs } } } } }`, nil, &js)
		var writes int
		for _, e := range js.Jobs.Edges {
			if e.Node.TenantID != "acme" {
				t.Errorf("the tenant sees a job of tenant %q", e.Node.TenantID)
			}
			if e.Node.Spec.Action == "sal.file.write" && e.Node.Spec.SealedArgs {
				writes++
			}
		}
		if writes == 0 {
			t.Errorf("the tenant sees no sealed file write among its %d jobs", len(js.Jobs.Edges))
		}
		tenant.must(t, `mutation($id: ID!) { removeService(input: {serviceId: $id}) { service { status } } }`, map[string]any{"id": id}, nil)
		poll(t, step, "service "+id+" to be removed", func() (bool, string) {
			s, err := readService(tenant, id)
			if err != nil {
				return false, err.Error()
			}
			return s.Status == "REMOVED", s.Status
		}, server, agent)
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after remove: %v", file, err)
		}
	}) {
		return
	}

	if !t.Run("start", func(t *testing.T) {
		tenant.must(t, `mutation($id: ID!) { startService(input: {serviceId: $id}) { service { status } } }`, map[string]any{"id": svcID}, nil)
		s := waitFor(t, "RUNNING")
		o := s.resource(t, rid["web"]).outputs(t)
		if o.State != "running" || o.PID <= 0 {
			t.Fatalf("web outputs %+v", o)
		}
		webPID = o.PID
		if cmdline := processCmdline(o.PID); !strings.Contains(cmdline, "http.server") || !strings.Contains(cmdline, port) {
			t.Fatalf("pid %d runs %q, not the web server", o.PID, cmdline)
		}
		// Supervised by the agent itself, not left to run on its own.
		if ppid := parentPID(o.PID); ppid != agent.Pid() {
			t.Errorf("web server pid %d has parent %d, not the agent (%d)", o.PID, ppid, agent.Pid())
		}
		if _, err := os.Stat(page); err != nil {
			t.Errorf("page while running: %v", err)
		}
		if recs, _, _ := dns.snapshot(""); recs[rid["dns"]] != "www.example.net" {
			t.Errorf("DNS records while running: %v", recs)
		}
		var body string
		poll(t, time.Minute, "the web server to serve the page", func() (bool, string) {
			resp, err := client.Get(siteURL)
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			return resp.StatusCode == http.StatusOK, resp.Status
		})
		if !strings.Contains(body, "<h1>Coming soon</h1>") {
			t.Fatalf("%s served %q", siteURL, body)
		}
	}) {
		return
	}

	if !t.Run("update", func(t *testing.T) {
		// The plan first: only the page changes, in place; the token stays
		// masked.
		var planned struct {
			PlanServiceUpdate struct {
				Revision, Updates, Creates, Replaces, Destroys int
				NoChange                                       bool
				Variables                                      []struct {
					Name     string
					Old, New json.RawMessage
				}
				Changes []struct {
					Name, Action string
					Properties   []struct{ Path string }
				}
			} `json:"planServiceUpdate"`
		}
		const planQuery = `query($id: ID!, $v: JSON) { planServiceUpdate(input: {serviceId: $id, variables: $v}) {
			revision updates creates replaces destroys noChange variables { name old new } changes { name action properties { path } } } }`
		tenant.must(t, planQuery, map[string]any{"id": svcID, "v": map[string]string{"title": "Open"}}, &planned)
		p := planned.PlanServiceUpdate
		if p.Revision != 1 || p.Updates != 1 || p.Creates+p.Replaces+p.Destroys != 0 || p.NoChange {
			t.Fatalf("plan %+v", p)
		}
		if len(p.Variables) != 1 || p.Variables[0].Name != "title" || string(p.Variables[0].New) != `"Open"` {
			t.Fatalf("variables %+v", p.Variables)
		}
		for _, c := range p.Changes {
			want := "KEEP"
			if c.Name == "index-page" {
				want = "UPDATE"
				if len(c.Properties) != 1 || c.Properties[0].Path != "content" {
					t.Errorf("index-page changes %+v", c.Properties)
				}
			}
			if c.Action != want {
				t.Errorf("%s: %s, want %s", c.Name, c.Action, want)
			}
		}
		var upd struct {
			UpdateService struct {
				Service struct {
					Status   string
					Revision int
				}
			} `json:"updateService"`
		}
		tenant.must(t, `mutation($id: ID!, $v: JSON) { updateService(input: {serviceId: $id, variables: $v}) { service { status revision } } }`,
			map[string]any{"id": svcID, "v": map[string]string{"title": "Open"}}, &upd)
		if u := upd.UpdateService.Service; u.Status != "UPDATING" || u.Revision != 2 {
			t.Fatalf("after updateService: %+v", u)
		}
		var s serviceView
		poll(t, step, "the update to finish", func() (bool, string) {
			var err error
			if s, err = readService(tenant, svcID); err != nil {
				return false, err.Error()
			}
			return s.Status == "RUNNING" && s.Revision == 2, fmt.Sprintf("%s at revision %d: %s", s.Status, s.Revision, s.Cause)
		}, server, agent)
		if o := s.resource(t, rid["web"]).outputs(t); o.PID != webPID {
			t.Errorf("the web server was restarted (pid %d, was %d) though nothing of it changed", o.PID, webPID)
		}
		poll(t, time.Minute, "the page to read Open", func() (bool, string) {
			resp, err := client.Get(siteURL)
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return strings.Contains(string(b), "<h1>Open</h1>"), string(b)
		})
		// The same update again changes nothing.
		tenant.must(t, planQuery, map[string]any{"id": svcID, "v": map[string]string{"title": "Open"}}, &planned)
		if !planned.PlanServiceUpdate.NoChange || planned.PlanServiceUpdate.Revision != 2 {
			t.Errorf("plan of the same update: %+v", planned.PlanServiceUpdate)
		}
	}) {
		return
	}

	if !t.Run("stop", func(t *testing.T) {
		tenant.must(t, `mutation($id: ID!) { stopService(input: {serviceId: $id}) { service { status } } }`, map[string]any{"id": svcID}, nil)
		s := waitFor(t, "STOPPED")
		if o := s.resource(t, rid["web"]).outputs(t); o.State != "stopped" {
			t.Errorf("web outputs %+v", o)
		}
		poll(t, time.Minute, fmt.Sprintf("web server pid %d to exit", webPID), func() (bool, string) {
			return !alive(webPID), processCmdline(webPID)
		})
		if reachable(siteURL) {
			t.Errorf("%s still answers after stop", siteURL)
		}
		if _, err := os.Stat(page); err != nil {
			t.Errorf("stop removed the page: %v", err)
		}
		if recs, _, _ := dns.snapshot(""); recs[rid["dns"]] == "" {
			t.Errorf("stop removed the DNS record: %v", recs)
		}
	}) {
		return
	}

	if !t.Run("remove", func(t *testing.T) {
		tenant.must(t, `mutation($id: ID!) { removeService(input: {serviceId: $id}) { service { status } } }`, map[string]any{"id": svcID}, nil)
		s := waitFor(t, "REMOVED")
		for _, r := range s.Resources {
			if r.Status != "DESTROYED" {
				t.Errorf("resource %s (%s %s) is %s", r.ID, r.Plugin, r.Type, r.Status)
			}
		}
		left, err := os.ReadDir(fileRoot)
		if err != nil || len(left) != 0 {
			t.Errorf("left in the agent's file root: %v %v", left, err)
		}
		recs, sawToken, refusals := dns.snapshot(dnsToken)
		if len(recs) != 0 {
			t.Errorf("DNS records left: %v", recs)
		}
		if !sawToken || refusals != 0 {
			t.Errorf("DNS endpoint: token received %v, %d calls with a bad signature", sawToken, refusals)
		}
		if alive(webPID) {
			t.Errorf("web server pid %d still runs", webPID)
		}
	}) {
		return
	}

	t.Run("history", func(t *testing.T) {
		streams := []string{"service-" + svcID}
		name := map[string]string{"service-" + svcID: "service"}
		for _, in := range instances {
			streams = append(streams, "resource-"+rid[in])
			name["resource-"+rid[in]] = in
		}
		history := func(c gqlClient) []string {
			t.Helper()
			var out struct {
				Events struct {
					Edges []struct {
						Node struct {
							StreamID, Type string
							Payload        json.RawMessage
						}
					}
				}
			}
			c.must(t, `query($s: [String!]) { events(first: 200, filter: {streamIds: $s}) { edges { node { streamId type payload } } } }`,
				map[string]any{"s": streams}, &out)
			var got []string
			for _, e := range out.Events.Edges {
				got = append(got, name[e.Node.StreamID]+" "+e.Node.Type)
				if strings.Contains(string(e.Node.Payload), dnsToken) {
					t.Errorf("%s of %s holds the sensitive variable in clear: %s", e.Node.Type, e.Node.StreamID, e.Node.Payload)
				}
			}
			return got
		}
		got := history(admin)
		want := serviceHistory([]string{"site-root", "index-page", "web"}, []string{"site-root", "dns"}, []string{"index-page", "web"})
		// The update comes between the start and the stop.
		at := slices.IndexFunc(want, func(g []string) bool { return slices.Equal(g, []string{"service service.started"}) }) + 1
		want = slices.Insert(want, at, []string{"service service.update_requested"},
			[]string{"index-page resource.update_begun", "index-page resource.updated"}, []string{"service service.updated"})
		if err := matchHistory(got, want); err != nil {
			t.Fatalf("%v\nhistory:\n  %s", err, strings.Join(got, "\n  "))
		}
		// The tenant sees the same history of its service.
		if own := history(tenant); !slices.Equal(own, got) {
			t.Errorf("the tenant sees another history:\n  %s", strings.Join(own, "\n  "))
		}
	})

	t.Run("secrets", func(t *testing.T) {
		binDir, err := pgcluster.FindBinDir()
		if err != nil {
			t.Fatal(err)
		}
		dump, err := exec.Command(filepath.Join(binDir, "pg_dump"), "--dbname", db.ConnString).Output()
		if err != nil {
			t.Fatalf("pg_dump: %v", err)
		}
		if !strings.Contains(string(dump), "sal.file.write") {
			t.Fatalf("the dump (%d bytes) holds no job: not a dump of cairnd's database", len(dump))
		}
		for name, text := range map[string]string{"the database dump": string(dump), "cairnd's log": server.Output(), "the agent's log": agent.Output()} {
			for what, secret := range map[string]string{"the DNS token": dnsToken, "the password": password} {
				if i := strings.Index(text, secret); i >= 0 {
					t.Errorf("%s holds %s in clear: …%s…", name, what, text[max(0, i-200):min(len(text), i+len(secret)+50)])
				}
			}
		}
	})
}

// secretFileDescriptor writes a sensitive variable into a file on a node.
// tooBigDescriptor asks as much memory as it is told.
const tooBigDescriptor = `apiVersion: cairn/v1
metadata:
  name: too-big
  version: 1.0.0
  vendor: Example Hosting
variables:
  memory:
    type: string
    required: true
resources:
  - name: hog
    plugin: agent
    type: process
    requests:
      memory: ${var.memory}
    properties:
      argv: ["true"]
`

const secretFileDescriptor = `apiVersion: cairn/v1
metadata:
  name: secret-file
  version: 1.0.0
  vendor: Example Hosting
variables:
  root:
    type: string
    required: true
  password:
    type: string
    required: true
    sensitive: true
resources:
  - name: credentials
    plugin: agent
    type: file
    properties:
      path: ${var.root}/credentials-${service.id}
      mode: "0600"
      content: |
        password=${var.password}
    placement:
      labels:
        role: web
`

// serviceView is what the test reads of a service.
type serviceView struct {
	ID, Status, FailedIn, Cause string
	Revision                    int
	Remaining                   []string
	Outputs                     json.RawMessage
	Resources                   []resourceView
}

type resourceView struct {
	ID, Plugin, Type, Status string
	Outputs                  json.RawMessage
}

// agentOutputs are the agent plugin's outputs.
type agentOutputs struct {
	Node, Path, Name, State string
	PID                     int
}

func (r resourceView) outputs(t *testing.T) agentOutputs {
	t.Helper()
	var o agentOutputs
	if err := json.Unmarshal(r.Outputs, &o); err != nil {
		t.Fatalf("resource %s outputs %s: %v", r.ID, r.Outputs, err)
	}
	return o
}

func (s serviceView) resource(t *testing.T, id string) resourceView {
	t.Helper()
	for _, r := range s.Resources {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("service %s has no resource %s: %+v", s.ID, id, s.Resources)
	return resourceView{}
}

func readService(c gqlClient, id string) (serviceView, error) {
	var out struct{ Service *serviceView }
	err := c.do(`query($id: ID!) { service(id: $id) { id status failedIn cause remaining outputs revision
		resources { id plugin type status outputs } } }`, map[string]any{"id": id}, &out)
	if err != nil {
		return serviceView{}, err
	}
	if out.Service == nil {
		return serviceView{}, errors.New("no such service (yet)")
	}
	return *out.Service, nil
}

// userToken creates a user with the role and returns a token of theirs.
func userToken(t *testing.T, admin gqlClient, name, role, tenantID string) string {
	t.Helper()
	in := map[string]any{"name": name, "role": role}
	if tenantID != "" {
		in["tenantId"] = tenantID
	}
	var u struct {
		CreateUser struct{ User struct{ ID string } } `json:"createUser"`
	}
	admin.must(t, `mutation($in: CreateUserInput!) { createUser(input: $in) { user { id } } }`, map[string]any{"in": in}, &u)
	var tok struct {
		CreateAPIToken struct{ Token string } `json:"createApiToken"`
	}
	admin.must(t, `mutation($id: ID!) { createApiToken(input: {userId: $id}) { token } }`, map[string]any{"id": u.CreateUser.User.ID}, &tok)
	return tok.CreateAPIToken.Token
}

// serviceHistory is the history of a service created, started, stopped and
// removed, as groups of "<instance> <event type>" in the order the groups
// must come; within a group only each instance's own order is fixed. The
// placed instances are allocated a node (and released) by the scheduler.
func serviceHistory(placed []string, levels ...[]string) [][]string {
	var all []string
	for _, l := range levels {
		all = append(all, l...)
	}
	each := func(instances []string, types ...string) []string {
		var g []string
		for _, in := range instances {
			for _, typ := range types {
				// The scheduler's allocation comes between a placed
				// resource's create_begun and created, and its release
				// after destroyed.
				if typ == "created" && slices.Contains(placed, in) {
					g = append(g, in+" resource.placed")
				}
				g = append(g, in+" resource."+typ)
				if typ == "destroyed" && slices.Contains(placed, in) {
					g = append(g, in+" resource.unplaced")
				}
			}
		}
		return g
	}
	svc := func(typ string) []string { return []string{"service service." + typ} }
	reversed := slices.Clone(levels)
	slices.Reverse(reversed)

	h := [][]string{svc("registration_requested"), each(all, "planned")}
	for _, l := range levels {
		h = append(h, each(l, "create_begun", "created"))
	}
	h = append(h, svc("registered"), svc("start_requested"))
	for _, l := range levels {
		h = append(h, each(l, "start_begun", "started"))
	}
	h = append(h, svc("started"), svc("stop_requested"))
	for _, l := range reversed {
		h = append(h, each(l, "stop_begun", "stopped"))
	}
	h = append(h, svc("stopped"), svc("removal_requested"))
	for _, l := range reversed {
		h = append(h, each(l, "destroy_begun", "destroyed"))
	}
	return append(h, svc("removed"))
}

// matchHistory checks events ("<instance> <type>", in global order) against
// groups: every event of a group comes after every event of the groups
// before it, and an instance's events within a group come in the order
// given.
func matchHistory(events []string, groups [][]string) error {
	g, pending := 0, []string(nil)
	next := func() {
		for len(pending) == 0 && g < len(groups) {
			pending = slices.Clone(groups[g])
			g++
		}
	}
	next()
	for i, ev := range events {
		if len(pending) == 0 {
			return fmt.Errorf("event %d (%s) after the history's end", i, ev)
		}
		instance := strings.SplitN(ev, " ", 2)[0]
		// The first pending event of this instance must be this one.
		j := slices.IndexFunc(pending, func(p string) bool { return strings.SplitN(p, " ", 2)[0] == instance })
		if j < 0 || pending[j] != ev {
			want := "nothing of " + instance
			if j >= 0 {
				want = pending[j]
			}
			return fmt.Errorf("event %d is %s; expected %s (group %d still waits for %v)", i, ev, want, g, pending)
		}
		pending = slices.Delete(pending, j, j+1)
		next()
	}
	if len(pending) > 0 || g < len(groups) {
		return fmt.Errorf("history ends early: waiting for %v", pending)
	}
	return nil
}

// pythonInterpreter finds the real interpreter the example's web server
// runs with (version-manager shims can take seconds to start).
func pythonInterpreter(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("python3 is not available (%v): the static-site example serves its page with Python's http.server", err)
	}
	return strings.TrimSpace(string(out))
}

func freePort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(testproc.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	return n
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func reachable(url string) bool {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// processCmdline is the command line of a live process ("" when there is
// none; a zombie has none either).
func processCmdline(pid int) string {
	if pid <= 0 {
		return ""
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

func alive(pid int) bool { return processCmdline(pid) != "" }

// parentPID is the parent of a live process (0 when unknown).
func parentPID(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(fields[1])
	return n
}

// killLeftover kills the web server's process group if it is still there,
// so a failed run leaves no server behind.
func killLeftover(t *testing.T, pid int) {
	if pid > 0 && strings.Contains(processCmdline(pid), "http.server") {
		t.Errorf("web server pid %d still ran at the end; killing it", pid)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// The history check itself: it accepts the steps in any order a level
// allows and refuses a level begun early, a missing event and an extra one.
func TestMatchHistory(t *testing.T) {
	groups := serviceHistory(nil, []string{"a", "b"}, []string{"c"})
	var ok []string
	for _, g := range groups {
		ok = append(ok, g...)
	}
	if err := matchHistory(ok, groups); err != nil {
		t.Fatalf("in order: %v", err)
	}
	// a's and b's creations interleaved, as parallel calls record them.
	i := slices.Index(ok, "a resource.create_begun")
	interleaved := slices.Clone(ok)
	interleaved[i+1], interleaved[i+2] = interleaved[i+2], interleaved[i+1] // a begun, b begun, a created
	if err := matchHistory(interleaved, groups); err != nil {
		t.Errorf("interleaved within a level: %v", err)
	}
	early := slices.Clone(ok)
	j := slices.Index(early, "c resource.create_begun")
	early[j-1], early[j] = early[j], early[j-1] // c begun before b created
	if matchHistory(early, groups) == nil {
		t.Error("a level begun before the one below it was created passed")
	}
	if matchHistory(ok[:len(ok)-1], groups) == nil {
		t.Error("a history without its last event passed")
	}
	if matchHistory(append(slices.Clone(ok), "service service.removed"), groups) == nil {
		t.Error("a history with an extra event passed")
	}
	swapped := slices.Clone(ok)
	k := slices.Index(swapped, "a resource.destroy_begun")
	swapped[k], swapped[k+1] = swapped[k+1], swapped[k] // destroyed before destroy_begun
	if matchHistory(swapped, groups) == nil {
		t.Error("a resource's outcome before its call passed")
	}
}
