package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/commandstest"
	"cairn/commands/orchestrator"
	"cairn/commands/orchestrator/orchestratortest"
	"cairn/commands/services"
	"cairn/commands/templates"
	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/eventstore"
	"cairn/plugins"
	"cairn/plugins/agent"
	"cairn/plugins/agent/local"
	httpplugin "cairn/plugins/http"
	"cairn/sal"
)

// dnsService is an external DNS API driven by the http plugin: it checks
// every request's signature and the token the descriptor passes.
type dnsService struct {
	secret []byte
	mu     sync.Mutex
	names  map[string]string // resource id → name
	tokens []string
}

func (d *dnsService) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	body, err := httpplugin.VerifyRequest(d.secret, r, time.Now())
	if err != nil {
		nethttp.Error(w, `{"error":"bad signature"}`, nethttp.StatusUnauthorized)
		return
	}
	var req struct {
		Operation  string `json:"operation"`
		ResourceID string `json:"resourceId"`
		Properties struct {
			Name  string `json:"name"`
			Zone  string `json:"zone"`
			Token string `json:"token"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		nethttp.Error(w, `{"error":"bad JSON"}`, nethttp.StatusBadRequest)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tokens = append(d.tokens, req.Properties.Token)
	fqdn := req.Properties.Name + "." + req.Properties.Zone
	switch req.Operation {
	case "create":
		d.names[req.ResourceID] = fqdn
	case "destroy":
		delete(d.names, req.ResourceID)
		fmt.Fprint(w, `{}`)
		return
	}
	fmt.Fprintf(w, `{"outputs":{"fqdn":%q}}`, fqdn)
}

func (d *dnsService) records() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]string{}
	for k, v := range d.names {
		out[k] = v
	}
	return out
}

// pythonPath finds the interpreter itself (version-manager shims can take
// seconds to start).
func pythonPath(t *testing.T) string {
	t.Helper()
	out, err := osexec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("python3 is not available (%v): the example serves its site with Python's http.server", err)
	}
	return strings.TrimSpace(string(out))
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

// TestEndToEnd publishes the static-site example (four resources in two
// levels, agent and http plugins mixed), deploys it for a tenant through the
// services' command handlers, and starts, stops and removes it, with the
// agent plugin running SAL actions on this machine and the http plugin
// calling a DNS service.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	python := pythonPath(t)
	ctx := context.Background()
	store, pool := commandstest.NewStoreWithPool(t)
	clock := time.Now

	root := t.TempDir()
	sys, err := sal.New(sal.Config{FileRoots: []string{root}, KillGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Supervisor().StopAll(time.Second) })
	ag, err := agent.New(agent.Config{
		Runner: local.Runner{System: sys, NodeID: "node-1"},
		Nodes:  agent.StaticNodes{{ID: "node-1", Location: "eu-west-1", Labels: map[string]string{"role": "web"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dns := &dnsService{secret: []byte("dns-endpoint-shared-secret"), names: map[string]string{}}
	srv := httptest.NewServer(dns)
	t.Cleanup(srv.Close)
	hp, err := httpplugin.New(ctx, httpplugin.Config{Endpoint: srv.URL, Secret: dns.secret, Backoff: time.Millisecond,
		Types: []plugins.ResourceType{{Name: "dns-record", Schema: json.RawMessage(`{"type":"object","required":["zone","name","type","target"]}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	reg := plugins.NewRegistry()
	for name, p := range map[string]plugins.Plugin{"agent": ag, "http": hp} {
		if err := reg.Register(name, p); err != nil {
			t.Fatal(err)
		}
	}

	// The operator creates the tenant; the vendor publishes the template.
	must := func(_ commands.Outcome, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	acc := access.NewHandlers(store, clock, commandstest.IDs("id"), access.Options{})
	must(acc.CreateTenant(ctx, commands.Meta{Actor: "operator"}, access.CreateTenant{TenantID: "acme", Name: "Acme"}))
	doc, err := os.ReadFile("../../examples/static-site/service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tpl := templates.NewHandlers(store, clock, reg)
	must(tpl.Register(ctx, commands.Meta{Actor: "example-hosting"}, templates.Register{Descriptor: string(doc)}))
	must(tpl.Publish(ctx, commands.Meta{Actor: "example-hosting"}, templates.Publish{Name: "static-site", Version: "1.0.0"}))

	svcs, err := services.NewHandlers(store, clock, commandstest.IDs("svc"), commandstest.Sealer())
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	var stepsMu sync.Mutex
	o, err := orchestrator.New(orchestrator.Config{
		Store: store, Pool: pool, Plugins: reg, Variables: svcs.DecodeVariables, Log: zerolog.Nop(),
		OnStep: func(s orchestrator.Step) {
			stepsMu.Lock()
			steps = append(steps, strings.Join(s.Events, "+"))
			stepsMu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	octx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.Run(octx) }()
	t.Cleanup(func() { stop(); <-done })

	// The tenant deploys the site.
	const secret = "tok-7f3a-do-not-log"
	port := freePort(t)
	vars := map[string]json.RawMessage{}
	for k, v := range map[string]string{"root": root, "hostname": "www", "port": port, "python": python, "dns_token": secret} {
		vars[k], _ = json.Marshal(v)
	}
	tenantMeta := commands.Meta{Actor: "alice", Tenant: "acme"}
	must(svcs.Register(ctx, tenantMeta, services.Register{ServiceID: "site-1", TenantID: "acme", Name: "my site",
		TemplateName: "static-site", TemplateVersion: "1.0.0", Flavor: "coming-soon", Variables: vars}))
	wait := func(want service.Status) service.Service {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		s, err := waitService(wctx, store, "site-1", want)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := wait(service.StatusRegistered)

	dir := filepath.Join(root, "site-1")
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil || !strings.Contains(string(page), "<h1>Coming soon</h1>") || !strings.Contains(string(page), "tenant acme at www.example.net") {
		t.Fatalf("index page: %q %v", page, err)
	}
	if recs := dns.records(); recs[ocl.ResourceID("site-1", "dns")] != "www.example.net" {
		t.Fatalf("dns records %v", recs)
	}
	var outs map[string]string
	if err := json.Unmarshal(s.Outputs, &outs); err != nil || outs["url"] != "http://www.example.net:"+port+"/" || outs["root"] != dir {
		t.Fatalf("outputs %s", s.Outputs)
	}

	// Start: the web server serves the page.
	must(svcs.Start(ctx, tenantMeta, services.Start{ServiceID: "site-1"}))
	wait(service.StatusRunning)
	web := e2eResource(t, store, "site-1", "web")
	var proc struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(web.Outputs, &proc); err != nil || proc.PID == 0 {
		t.Fatalf("web outputs %s", web.Outputs)
	}
	body := fetch(t, "http://127.0.0.1:"+port+"/index.html")
	if !strings.Contains(body, "<h1>Coming soon</h1>") {
		t.Fatalf("served %q", body)
	}

	// Stop: the server is gone, the files stay.
	must(svcs.Stop(ctx, tenantMeta, services.Stop{ServiceID: "site-1"}))
	wait(service.StatusStopped)
	waitGone(t, proc.PID)
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		t.Fatalf("stop removed the page: %v", err)
	}

	// Remove: nothing is left.
	must(svcs.Remove(ctx, tenantMeta, services.Remove{ServiceID: "site-1"}))
	s = wait(service.StatusRemoved)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("site directory left behind: %v", err)
	}
	if recs := dns.records(); len(recs) != 0 {
		t.Fatalf("dns records left behind: %v", recs)
	}
	for _, id := range s.ResourceIDs {
		r, _, err := commands.Load[resource.Resource](ctx, store, domain.ResourceStream, id)
		if err != nil || r.Status != resource.StatusDestroyed {
			t.Fatalf("resource %s: %s %v", id, r.Status, err)
		}
	}

	// The service's history is the steps, in order.
	want := []string{"registration_requested", "registered", "start_requested", "started", "stop_requested", "stopped", "removal_requested", "removed"}
	if got := eventTypes(t, store, "service-site-1"); !slices.Equal(got, want) {
		t.Fatalf("service history:\n got %v\nwant %v", got, want)
	}
	// Creation went level by level: both level-0 resources were created
	// before either level-1 resource began.
	stepsMu.Lock()
	defer stepsMu.Unlock()
	if len(steps) != 1+4*2+1+ /* start */ 4*2+1+ /* stop */ 4*2+1+ /* remove */ 4*2+1 {
		t.Fatalf("%d steps: %v", len(steps), steps)
	}
	assertLevels(t, store, "site-1")

	// The DNS token reached the plugin but not the log.
	if !slices.Contains(dns.tokens, secret) {
		t.Fatal("the sensitive variable did not reach the plugin")
	}
	if leaks := commandstest.CountContaining(t, store, secret); leaks != 0 {
		t.Fatalf("%d events hold the sensitive value in clear text", leaks)
	}
}

// assertLevels checks from the log that site-root and dns were created
// before index-page or web began to be.
func assertLevels(t *testing.T, store *eventstore.Store, svc string) {
	t.Helper()
	pos := func(instance, eventType string) int64 {
		t.Helper()
		for _, ev := range commandstest.Stream(t, store, "resource-"+ocl.ResourceID(svc, instance)) {
			if ev.Type == eventType {
				return ev.Position
			}
		}
		t.Fatalf("%s has no %s", instance, eventType)
		return 0
	}
	lastLevel0 := max(pos("site-root", "resource.created"), pos("dns", "resource.created"))
	firstLevel1 := min(pos("index-page", "resource.create_begun"), pos("web", "resource.create_begun"))
	if lastLevel0 > firstLevel1 {
		t.Fatalf("level 1 began (position %d) before level 0 was created (position %d)", firstLevel1, lastLevel0)
	}
}

func e2eResource(t *testing.T, store *eventstore.Store, svc, instance string) resource.Resource {
	t.Helper()
	r, _, err := commands.Load[resource.Resource](context.Background(), store, domain.ResourceStream, ocl.ResourceID(svc, instance))
	if err != nil || !r.Exists() {
		t.Fatalf("resource %s of %s: %v", instance, svc, err)
	}
	return r
}

// waitService waits until the service settles and reports an error when it
// settles elsewhere than want.
func waitService(ctx context.Context, store *eventstore.Store, id string, want service.Status) (service.Service, error) {
	settled := []service.Status{want, service.StatusFailed, service.StatusRollbackFailed, service.StatusManualCleanupRequired}
	s, err := orchestratortest.Wait(ctx, store, id, settled...)
	if err == nil && s.Status != want {
		err = fmt.Errorf("service %s is %s, not %s: %s", id, s.Status, want, s.Cause)
	}
	return s, err
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := nethttp.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return string(b)
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
