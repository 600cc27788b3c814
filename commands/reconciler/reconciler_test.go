package reconciler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/commands/commandstest"
	"cairn/commands/nodes"
	"cairn/commands/orchestrator"
	"cairn/commands/orchestrator/orchestratortest"
	"cairn/commands/reconciler"
	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/eventbus"
	"cairn/eventstore"
	"cairn/internal/testdb"
	"cairn/plugins"
	"cairn/plugins/fake"
	"cairn/projections"
	"cairn/projections/models"
	"cairn/projections/readmodel"
	"cairn/scheduler"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const app = `
apiVersion: cairn/v1
metadata: {name: healing-app, version: 1.0.0}
resources:
  - {name: net, plugin: fake, type: thing, properties: {cidr: 10.0.0.0/24}}
  - {name: vm, plugin: fake, type: placed-thing, requests: {memory: 1Gi}, properties: {net: "${resource.net.outputs.cidr}"}}
  - {name: dns, plugin: fake, type: thing, properties: {target: "${resource.vm.outputs.id}"}}
healthChecks:
  - {name: answers, resource: dns, type: tcp, properties: {port: 53, host: "${resource.vm.outputs.id}"}}
`

type env struct {
	t      *testing.T
	store  *eventstore.Store
	pool   *pgxpool.Pool
	reg    *plugins.Registry
	fake   *fake.Plugin
	desc   *ocl.Descriptor
	nodes  *nodes.Handlers
	rec    *reconciler.Reconciler
	sched  *scheduler.Scheduler
	runner *projections.Runner
}

// newEnv runs the projections, the scheduler and the orchestrator on a
// fresh database with the fake plugin; failCreate makes the fake refuse
// creates while it returns true.
func newEnv(t *testing.T, failCreate *atomic.Bool) *env {
	t.Helper()
	store, pool := commandstest.NewStoreWithPool(t)
	e := &env{t: t, store: store, pool: pool}
	e.fake = fake.New(fake.Options{Fail: func(op plugins.Op, r plugins.Request) error {
		if op == plugins.OpCreate && failCreate != nil && failCreate.Load() {
			return errors.New("the cloud said no")
		}
		return nil
	}})
	reg := plugins.NewRegistry()
	e.reg = reg
	if err := reg.Register("fake", e.fake); err != nil {
		t.Fatal(err)
	}
	desc, err := orchestratortest.Publish(context.Background(), store, reg, "acme-vendor", []byte(app))
	if err != nil {
		t.Fatal(err)
	}
	e.desc = desc
	e.nodes = nodes.NewHandlers(store, time.Now, commandstest.IDs("node"))
	ctx, cancel := context.WithCancel(context.Background())
	runner := projections.NewRunner(store, pool, projections.Options{Log: zerolog.Nop()})
	if err := runner.Register(models.All()...); err != nil {
		t.Fatal(err)
	}
	e.runner = runner
	e.sched = scheduler.New(store, time.Now, zerolog.Nop())
	o, err := orchestrator.New(orchestrator.Config{Store: store, Pool: pool, Plugins: reg, Scheduler: e.sched, Log: zerolog.Nop(),
		Router: eventbus.RouterOptions{MaxRetries: 1, InitialInterval: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 3)
	go func() { _ = runner.Run(ctx); done <- struct{}{} }()
	go func() { _ = e.sched.Run(ctx); done <- struct{}{} }()
	go func() { _ = o.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		for range 3 {
			<-done
		}
	})
	e.rec, err = reconciler.New(reconciler.Config{Store: store, Reader: readmodel.New(pool), Plugins: reg, Scheduler: e.sched,
		Backoff: time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// enroll enrolls an online node and waits until the scheduler places on it:
// what is tested is the reconciler, not how soon a loaded machine's
// scheduler hears of a node.
func (e *env) enroll(host string) string {
	e.t.Helper()
	id := commandstest.EnrollOnline(e.t, e.nodes, commandstest.OnlineNode{Hostname: host, CPUs: 4, MemoryBytes: 8 << 30})
	deadline := time.Now().Add(30 * time.Second)
	for {
		cands, err := e.sched.Candidates(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		for _, c := range cands {
			if c.ID == id && c.NotReady == "" && c.Allocatable.CPUMillis > 0 {
				return id
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the scheduler does not offer node %s 30 s after it came online", host)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) deploy(id string) {
	e.t.Helper()
	ctx := context.Background()
	if err := orchestratortest.Register(ctx, e.store, orchestratortest.Registration{ServiceID: id, TenantID: "tenant-1", Descriptor: e.desc}); err != nil {
		e.t.Fatal(err)
	}
	e.wait(id, service.StatusRegistered)
	if err := orchestratortest.Request(ctx, e.store, id, service.CmdStart); err != nil {
		e.t.Fatal(err)
	}
	e.wait(id, service.StatusRunning)
}

func (e *env) wait(id string, statuses ...service.Status) service.Service {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := orchestratortest.Wait(ctx, e.store, id, statuses...)
	if err != nil {
		e.t.Fatalf("%v (cause: %q)", err, s.Cause)
	}
	return s
}

// pass runs a pass once the read models are built and list the service as
// settled (the projections build while the services deploy).
func (e *env) pass() reconciler.PassStats {
	e.t.Helper()
	// The pass lists services from the read models: let them catch up.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	head, err := e.store.Head(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.runner.WaitFor(ctx, head); err != nil {
		e.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		time.Sleep(200 * time.Millisecond)
		st, err := e.rec.Pass(context.Background())
		if err == nil {
			return st
		}
		if time.Now().After(deadline) {
			e.t.Fatal(err)
		}
	}
}

func (e *env) resource(svc, name string) resource.Resource {
	e.t.Helper()
	r, _, err := commands.Load[resource.Resource](context.Background(), e.store, domain.ResourceStream, ocl.ResourceID(svc, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func TestRepairsWhatIsMissingAndIdlesQuietly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enroll("node-a")
	e.deploy("svc-1")
	if st := e.pass(); st.Appended != 0 || st.Services != 1 || st.Resources != 3 {
		t.Fatalf("a pass over a healthy service: %+v", st)
	}
	// The network is deleted behind Cairn's back.
	if !e.fake.Lose(ocl.ResourceID("svc-1", "net")) {
		t.Fatal("no such fake resource")
	}
	st := e.pass()
	if st.Drifts != 1 || st.Repairs != 1 {
		t.Fatalf("after the loss: %+v", st)
	}
	e.wait("svc-1", service.StatusRunning)
	if _, ok := e.fake.Get(ocl.ResourceID("svc-1", "net")); !ok {
		t.Fatal("the network was not made again")
	}
	if r := e.resource("svc-1", "net"); r.Drift != "" || r.Status != resource.StatusRunning {
		t.Fatalf("net after the repair: %s, drift %q", r.Status, r.Drift)
	}
	// Its dependents were made again with it, in order; a pass after the
	// repair appends nothing.
	if st := e.pass(); st.Appended != 0 {
		t.Fatalf("a pass after the repair: %+v", st)
	}
	evs := commandstest.Stream(t, e.store, "service-svc-1")
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if got := strings.Join(types[len(types)-2:], " "); got != "service.repair_requested service.repaired" {
		t.Fatalf("service history ends with %s", got)
	}
	if evs[len(evs)-2].Metadata.CausationID == "" {
		t.Fatal("the repair does not name the observation that caused it")
	}
}

func TestReplacesOffALostNode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	first := e.enroll("node-a")
	e.deploy("svc-1")
	vm := e.resource("svc-1", "vm")
	if vm.NodeID != first {
		t.Fatalf("vm on %q, want %s", vm.NodeID, first)
	}
	second := e.enroll("node-b")
	meta := commands.Meta{Actor: "test"}
	if _, err := e.nodes.Disconnect(context.Background(), meta, nodes.Disconnect{NodeID: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.nodes.MarkDown(context.Background(), meta, nodes.MarkDown{NodeID: first}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the scheduler hears of it
	if st := e.pass(); st.Repairs != 1 {
		t.Fatalf("after the node went down: %+v", st)
	}
	e.wait("svc-1", service.StatusRunning)
	vm = e.resource("svc-1", "vm")
	if vm.NodeID != second || vm.Drift != "" {
		t.Fatalf("vm after the repair: on %q (want %s), drift %q", vm.NodeID, second, vm.Drift)
	}
	var creates []string
	for _, c := range e.fake.Calls() {
		if c.Op == plugins.OpCreate && c.ResourceID == vm.ID {
			creates = append(creates, c.Node)
		}
	}
	if len(creates) != 2 || creates[1] != second {
		t.Fatalf("vm created on %v", creates)
	}
}

func TestDegradesAfterFailedRepairsAndRetries(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	e := newEnv(t, &failing)
	e.enroll("node-a")
	e.deploy("svc-1")
	failing.Store(true)
	e.fake.Lose(ocl.ResourceID("svc-1", "dns"))
	var s service.Service
	for range 3 {
		e.pass()
		s = e.wait("svc-1", service.StatusRunning, service.StatusDegraded)
	}
	if s.Status != service.StatusDegraded || !strings.Contains(s.Cause, "the cloud said no") {
		t.Fatalf("after three failed repairs: %s (%q)", s.Status, s.Cause)
	}
	// Degraded: passes record nothing more and ask for nothing.
	if st := e.pass(); st.Appended != 0 {
		t.Fatalf("a pass over a degraded service: %+v", st)
	}
	failing.Store(false)
	_, err := commands.Execute[service.Service](context.Background(), e.store, domain.ServiceStream, "svc-1", commands.Meta{Actor: "op"}, nil,
		func(s service.Service) ([]domain.Event, error) {
			return s.Retry(service.Retry{ServiceID: "svc-1", At: time.Now()})
		})
	if err != nil {
		t.Fatal(err)
	}
	e.wait("svc-1", service.StatusRunning)
	e.pass()
	e.wait("svc-1", service.StatusRunning)
	if _, ok := e.fake.Get(ocl.ResourceID("svc-1", "dns")); !ok {
		t.Fatal("after the retry the record was not made again")
	}
}

// Run passes on its interval and when a node goes down, not on every
// event of the log.
func TestRunPassesOnNodeLossOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	first := e.enroll("node-a")
	var passes atomic.Int64
	rec, err := reconciler.New(reconciler.Config{Store: e.store, Reader: readmodel.New(e.pool), Plugins: e.reg, Scheduler: e.sched,
		Interval: time.Hour, Log: zerolog.Nop(), OnPass: func(reconciler.PassStats) { passes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = rec.Run(ctx) }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10 s for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the first pass", func() bool { return passes.Load() == 1 })
	// Other events (nodes enrolling, reporting) start no pass.
	for i := range 5 {
		e.enroll(fmt.Sprintf("node-%d", i))
	}
	time.Sleep(300 * time.Millisecond)
	if n := passes.Load(); n != 1 {
		t.Fatalf("%d passes after unrelated events, want 1", n)
	}
	meta := commands.Meta{Actor: "test"}
	if _, err := e.nodes.Disconnect(context.Background(), meta, nodes.Disconnect{NodeID: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.nodes.MarkDown(context.Background(), meta, nodes.MarkDown{NodeID: first}); err != nil {
		t.Fatal(err)
	}
	waitFor("a pass after the node went down", func() bool { return passes.Load() == 2 })
}

// A failing health check is recorded once when it starts failing and once
// when it passes again; passes in between record nothing.
func TestHealthChecksRecordChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enroll("hc-1")
	e.deploy("svc-hc")
	ctx := context.Background()
	pass := e.pass
	dns := ocl.ResourceID("svc-hc", "dns")
	if st := pass(); st.Appended != 0 || st.Services != 1 {
		t.Fatalf("a pass over a healthy service: %+v", st)
	}
	e.fake.SetHealth(dns, "answers", "connection refused")
	if st := pass(); st.HealthChanges != 1 || st.Appended != 1 {
		t.Fatalf("the check began failing: %+v", st)
	}
	if st := pass(); st.Appended != 0 {
		t.Fatalf("a second pass over the same failure appended %d", st.Appended)
	}
	r, _, err := commands.Load[resource.Resource](ctx, e.store, domain.ResourceStream, dns)
	if err != nil || r.Healthy() || r.Health["answers"].Detail != "connection refused" {
		t.Fatalf("dns health %+v %v", r.Health, err)
	}
	e.fake.SetHealth(dns, "answers", "")
	if st := pass(); st.HealthChanges != 1 {
		t.Fatalf("the check passed again: %+v", st)
	}
	r, _, _ = commands.Load[resource.Resource](ctx, e.store, domain.ResourceStream, dns)
	if !r.Healthy() {
		t.Fatalf("dns health %+v", r.Health)
	}
}
