package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/commands/commandstest"
	"cairn/commands/orchestrator"
	"cairn/commands/orchestrator/orchestratortest"
	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/eventbus"
	"cairn/eventstore"
	"cairn/internal/testdb"
	"cairn/plugins"
	"cairn/plugins/fake"
	"cairn/plugins/terraform"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// fakeApp has four resources in two levels: net and disk, then vm (using
// both) and dns (using net).
const fakeApp = `
apiVersion: cairn/v1
metadata: {name: fake-app, version: 1.0.0}
variables:
  size: {type: integer, default: 3}
resources:
  - name: net
    plugin: fake
    type: thing
    properties: {cidr: 10.0.0.0/24}
  - name: disk
    plugin: fake
    type: thing
    properties: {size: "${var.size}"}
  - name: vm
    plugin: fake
    type: thing
    properties: {net: "${resource.net.outputs.cidr}", disk: "${resource.disk.outputs.id}", gb: "${resource.disk.outputs.size}"}
  - name: dns
    plugin: fake
    type: thing
    properties: {target: "vm-on-${resource.net.outputs.cidr}"}
outputs:
  vm: {value: "${resource.vm.outputs.id}"}
  net: {value: "${resource.net.outputs.cidr}"}
`

type env struct {
	store *eventstore.Store
	pool  *pgxpool.Pool
	reg   *plugins.Registry
	fake  *fake.Plugin
	desc  *ocl.Descriptor
}

// newBareEnv is an env on a fresh database with an empty plugin registry.
func newBareEnv(t *testing.T) *env {
	t.Helper()
	store, pool := commandstest.NewStoreWithPool(t)
	return &env{store: store, pool: pool, reg: plugins.NewRegistry()}
}

func newEnv(t *testing.T, opts fake.Options) *env {
	t.Helper()
	e := newBareEnv(t)
	e.fake = fake.New(opts)
	if err := e.reg.Register("fake", e.fake); err != nil {
		t.Fatal(err)
	}
	desc, err := orchestratortest.Publish(context.Background(), e.store, e.reg, "acme-vendor", []byte(fakeApp))
	if err != nil {
		t.Fatal(err)
	}
	e.desc = desc
	return e
}

// run starts an orchestrator and returns a function that stops it and
// waits until it has.
func (e *env) run(t *testing.T, mutate func(*orchestrator.Config)) func() {
	t.Helper()
	cfg := orchestrator.Config{
		Store: e.store, Pool: e.pool, Plugins: e.reg, Log: zerolog.Nop(),
		Router: eventbus.RouterOptions{MaxRetries: 1, InitialInterval: time.Millisecond},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	o, err := orchestrator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("orchestrator: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func (e *env) register(t *testing.T, id string) {
	t.Helper()
	err := orchestratortest.Register(context.Background(), e.store, orchestratortest.Registration{
		ServiceID: id, TenantID: "tenant-1", Descriptor: e.desc,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) request(t *testing.T, id, cmd string) {
	t.Helper()
	if err := orchestratortest.Request(context.Background(), e.store, id, cmd); err != nil {
		t.Fatal(err)
	}
}

func (e *env) wait(t *testing.T, id string, statuses ...service.Status) service.Service {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := orchestratortest.Wait(ctx, e.store, id, statuses...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *env) resources(t *testing.T, s service.Service) map[string]resource.Resource {
	t.Helper()
	out := map[string]resource.Resource{}
	for _, id := range s.ResourceIDs {
		r, _, err := commands.Load[resource.Resource](context.Background(), e.store, domain.ResourceStream, id)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = r
	}
	return out
}

func eventTypes(t *testing.T, s *eventstore.Store, stream string) []string {
	t.Helper()
	var out []string
	for _, ev := range commandstest.Stream(t, s, stream) {
		out = append(out, strings.TrimPrefix(ev.Type, "service."))
	}
	return out
}

func id(svc, instance string) string { return ocl.ResourceID(svc, instance) }

func TestLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fake.Options{})
	var steps []orchestrator.Step
	stepc := make(chan orchestrator.Step, 100)
	e.run(t, func(c *orchestrator.Config) { c.OnStep = func(s orchestrator.Step) { stepc <- s } })
	e.register(t, "svc-1")
	s := e.wait(t, "svc-1", service.StatusRegistered, service.StatusFailed)
	if s.Status != service.StatusRegistered {
		t.Fatalf("registration ended %s: %s", s.Status, s.Cause)
	}
	var outs map[string]string
	if err := json.Unmarshal(s.Outputs, &outs); err != nil || outs["vm"] != id("svc-1", "vm") || outs["net"] != "10.0.0.0/24" {
		t.Fatalf("outputs = %s (%v)", s.Outputs, err)
	}
	vm, ok := e.fake.Get(id("svc-1", "vm"))
	if !ok || vm.Properties["net"] != "10.0.0.0/24" || vm.Properties["disk"] != id("svc-1", "disk") || vm.Properties["gb"] != float64(3) {
		t.Fatalf("vm = %+v: properties not resolved from the outputs of net and disk", vm)
	}
	if dns, _ := e.fake.Get(id("svc-1", "dns")); dns.Properties["target"] != "vm-on-10.0.0.0/24" {
		t.Fatalf("dns = %+v", dns)
	}
	// Level 0 is created before level 1 starts.
	created := creates(e.fake.Calls(), plugins.OpCreate)
	if !before(created, []string{id("svc-1", "net"), id("svc-1", "disk")}, []string{id("svc-1", "vm"), id("svc-1", "dns")}) {
		t.Fatalf("create order %v does not follow the levels", created)
	}

	e.request(t, "svc-1", service.CmdStart)
	if s = e.wait(t, "svc-1", service.StatusRunning, service.StatusFailed); s.Status != service.StatusRunning {
		t.Fatalf("start ended %s: %s", s.Status, s.Cause)
	}
	for _, r := range e.resources(t, s) {
		if r.Status != resource.StatusRunning {
			t.Fatalf("resource %s is %s after start", r.ID, r.Status)
		}
	}
	e.request(t, "svc-1", service.CmdStop)
	if s = e.wait(t, "svc-1", service.StatusStopped, service.StatusFailed); s.Status != service.StatusStopped {
		t.Fatalf("stop ended %s: %s", s.Status, s.Cause)
	}
	stopped := creates(e.fake.Calls(), plugins.OpStop)
	if !before(stopped, []string{id("svc-1", "vm"), id("svc-1", "dns")}, []string{id("svc-1", "net"), id("svc-1", "disk")}) {
		t.Fatalf("stop order %v is not the reverse of the levels", stopped)
	}
	for _, live := range e.fake.Live() {
		if r, _ := e.fake.Get(live); r.State != fake.StateStopped {
			t.Fatalf("%s is %s after stop", live, r.State)
		}
	}
	e.request(t, "svc-1", service.CmdRemove)
	if s = e.wait(t, "svc-1", service.StatusRemoved, service.StatusManualCleanupRequired); s.Status != service.StatusRemoved {
		t.Fatalf("remove ended %s: %s", s.Status, s.Cause)
	}
	if live := e.fake.Live(); len(live) != 0 {
		t.Fatalf("left behind: %v", live)
	}
	for _, r := range e.resources(t, s) {
		if r.Status != resource.StatusDestroyed {
			t.Fatalf("resource %s is %s after removal", r.ID, r.Status)
		}
	}
	want := []string{"registration_requested", "registered", "start_requested", "started", "stop_requested", "stopped", "removal_requested", "removed"}
	if got := eventTypes(t, e.store, "service-svc-1"); !slices.Equal(got, want) {
		t.Fatalf("service history:\n got %v\nwant %v", got, want)
	}
	want = []string{"resource.planned", "resource.create_begun", "resource.created", "resource.start_begun", "resource.started",
		"resource.stop_begun", "resource.stopped", "resource.destroy_begun", "resource.destroyed"}
	if got := eventTypes(t, e.store, "resource-"+id("svc-1", "vm")); !slices.Equal(got, want) {
		t.Fatalf("resource history:\n got %v\nwant %v", got, want)
	}
	// Every step was reported: one planning step, 4 resources × 2 events ×
	// 4 phases, and one service event per phase.
	close(stepc)
	for s := range stepc {
		steps = append(steps, s)
	}
	if len(steps) != 1+4*2*4+4 {
		t.Fatalf("%d steps reported", len(steps))
	}
	// The orchestrator's events carry its actor and the request's correlation.
	for _, ev := range commandstest.Stream(t, e.store, "resource-"+id("svc-1", "vm")) {
		if ev.Metadata.Actor != orchestrator.Actor || ev.Metadata.Tenant != "tenant-1" {
			t.Fatalf("%s metadata = %+v", ev.Type, ev.Metadata)
		}
	}
}

func creates(calls []fake.Call, op plugins.Op) []string {
	var out []string
	for _, c := range calls {
		if c.Op == op && c.Err == nil && !slices.Contains(out, c.ResourceID) {
			out = append(out, c.ResourceID)
		}
	}
	return out
}

// before reports whether every id of first appears in order before every id
// of second.
func before(order, first, second []string) bool {
	for _, a := range first {
		for _, b := range second {
			i, j := slices.Index(order, a), slices.Index(order, b)
			if i < 0 || j < 0 || i > j {
				return false
			}
		}
	}
	return true
}

func TestFailureOnThirdResourceRollsBack(t *testing.T) {
	t.Parallel()
	boom := errors.New("quota exceeded for disks")
	// Parallelism 1 makes "the third resource" a definite one: vm.
	e := newEnv(t, fake.Options{Fail: fake.FailAt(plugins.OpCreate, 3, boom)})
	e.run(t, func(c *orchestrator.Config) { c.Parallelism = 1 })
	e.register(t, "svc-2")
	s := e.wait(t, "svc-2", service.StatusFailed, service.StatusRollbackFailed)
	if s.Status != service.StatusFailed || s.FailedIn != service.PhaseRegister {
		t.Fatalf("status %s (in %s): %s", s.Status, s.FailedIn, s.Cause)
	}
	if !strings.Contains(s.Cause, "resource vm") || !strings.Contains(s.Cause, boom.Error()) {
		t.Fatalf("cause %q does not name the resource and the plugin's error", s.Cause)
	}
	if live := e.fake.Live(); len(live) != 0 {
		t.Fatalf("rollback left %v", live)
	}
	rs := e.resources(t, s)
	for _, r := range rs {
		if r.Status != resource.StatusDestroyed {
			t.Fatalf("resource %s is %s after rollback", r.ID, r.Status)
		}
	}
	want := []string{"registration_requested", "registration_failed", "rolled_back"}
	if got := eventTypes(t, e.store, "service-svc-2"); !slices.Equal(got, want) {
		t.Fatalf("service history %v, want %v", got, want)
	}
	// The rollback runs in reverse order; vm, whose create failed, is
	// destroyed too, since a failed create may have made part of it.
	destroyed := creates(e.fake.Calls(), plugins.OpDestroy)
	if !before(destroyed, []string{id("svc-2", "vm"), id("svc-2", "dns")}, []string{id("svc-2", "net"), id("svc-2", "disk")}) {
		t.Fatalf("destroy order %v is not the reverse of the levels", destroyed)
	}
	// A failed registration can only be removed, which finds nothing left.
	e.request(t, "svc-2", service.CmdRemove)
	if s = e.wait(t, "svc-2", service.StatusRemoved, service.StatusManualCleanupRequired); s.Status != service.StatusRemoved {
		t.Fatalf("remove ended %s: %s", s.Status, s.Cause)
	}
}

func TestRollbackFailureListsRemaining(t *testing.T) {
	t.Parallel()
	var destroyFails atomic.Bool
	destroyFails.Store(true)
	failing := func(op plugins.Op, r plugins.Request) error {
		switch {
		case op == plugins.OpCreate && r.ResourceID == id("svc-3", "vm"):
			return errors.New("no capacity")
		case op == plugins.OpDestroy && r.ResourceID == id("svc-3", "net") && destroyFails.Load():
			return errors.New("network still in use")
		}
		return nil
	}
	e := newEnv(t, fake.Options{Fail: failing})
	e.run(t, nil)
	e.register(t, "svc-3")
	s := e.wait(t, "svc-3", service.StatusFailed, service.StatusRollbackFailed)
	if s.Status != service.StatusRollbackFailed || !slices.Equal(s.Remaining, []string{id("svc-3", "net")}) {
		t.Fatalf("status %s, remaining %v, cause %q", s.Status, s.Remaining, s.Cause)
	}
	if !strings.Contains(s.Cause, "network still in use") {
		t.Fatalf("cause %q", s.Cause)
	}
	if live := e.fake.Live(); !slices.Equal(live, []string{id("svc-3", "net")}) {
		t.Fatalf("live %v", live)
	}
	// The operator fixes the cause and asks for removal again.
	destroyFails.Store(false)
	e.request(t, "svc-3", service.CmdRemove)
	if s = e.wait(t, "svc-3", service.StatusRemoved, service.StatusManualCleanupRequired); s.Status != service.StatusRemoved {
		t.Fatalf("remove ended %s: %s", s.Status, s.Cause)
	}
	if live := e.fake.Live(); len(live) != 0 {
		t.Fatalf("live %v", live)
	}
}

func TestStartFailureAndRetry(t *testing.T) {
	t.Parallel()
	var failStart atomic.Bool
	failStart.Store(true)
	e := newEnv(t, fake.Options{Fail: func(op plugins.Op, r plugins.Request) error {
		if op == plugins.OpStart && failStart.Load() && r.ResourceID == id("svc-4", "dns") {
			return errors.New("port 53 in use")
		}
		return nil
	}})
	e.run(t, nil)
	e.register(t, "svc-4")
	e.wait(t, "svc-4", service.StatusRegistered)
	e.request(t, "svc-4", service.CmdStart)
	s := e.wait(t, "svc-4", service.StatusRunning, service.StatusFailed)
	if s.Status != service.StatusFailed || s.FailedIn != service.PhaseStart || !strings.Contains(s.Cause, "port 53 in use") {
		t.Fatalf("status %s in %s: %q", s.Status, s.FailedIn, s.Cause)
	}
	failStart.Store(false)
	e.request(t, "svc-4", service.CmdStart)
	if s = e.wait(t, "svc-4", service.StatusRunning, service.StatusFailed); s.Status != service.StatusRunning {
		t.Fatalf("retried start ended %s: %s", s.Status, s.Cause)
	}
	// A running service must be stopped before removal; stop then remove.
	e.request(t, "svc-4", service.CmdStop)
	e.wait(t, "svc-4", service.StatusStopped)
	e.request(t, "svc-4", service.CmdRemove)
	e.wait(t, "svc-4", service.StatusRemoved)
	if live := e.fake.Live(); len(live) != 0 {
		t.Fatalf("live %v", live)
	}
}

// start runs an orchestrator until ctx ends; the channel reports Run's end.
func (e *env) start(t *testing.T, ctx context.Context, onStep func(orchestrator.Step)) <-chan error {
	t.Helper()
	o, err := orchestrator.New(orchestrator.Config{
		Store: e.store, Pool: e.pool, Plugins: e.reg, Log: zerolog.Nop(), OnStep: onStep,
		Router: eventbus.RouterOptions{MaxRetries: 1, InitialInterval: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	return done
}

// lifecycle takes a service from registration to removal, issuing each
// request once the previous step has settled, and reports where it ended.
func (e *env) lifecycle(svc string) (service.Service, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := orchestratortest.Register(ctx, e.store, orchestratortest.Registration{ServiceID: svc, TenantID: "tenant-1", Descriptor: e.desc})
	if err != nil {
		return service.Service{}, err
	}
	s, err := orchestratortest.Wait(ctx, e.store, svc, service.StatusRegistered, service.StatusFailed, service.StatusRollbackFailed)
	if err != nil {
		return s, err
	}
	if s.Status == service.StatusRegistered {
		steps := []struct {
			cmd  string
			want service.Status
		}{{service.CmdStart, service.StatusRunning}, {service.CmdStop, service.StatusStopped}}
		for _, st := range steps {
			if err := orchestratortest.Request(ctx, e.store, svc, st.cmd); err != nil {
				return s, err
			}
			if s, err = orchestratortest.Wait(ctx, e.store, svc, st.want, service.StatusFailed); err != nil || s.Status != st.want {
				return s, errors.Join(err, errors.New(s.Cause))
			}
		}
	}
	if s.Status == service.StatusRollbackFailed {
		return s, errors.New(s.Cause)
	}
	if err := orchestratortest.Request(ctx, e.store, svc, service.CmdRemove); err != nil {
		return s, err
	}
	return orchestratortest.Wait(ctx, e.store, svc, service.StatusRemoved, service.StatusManualCleanupRequired)
}

// crashCase is one way of stopping the orchestrator mid-deployment.
type crashCase struct {
	name     string
	failVM   bool // the vm's create fails: register rolls back
	inPlugin bool // crash inside a plugin call instead of after a step
}

// crashEnv is an environment whose fake plugin fails and crashes where the
// running iteration says.
type crashEnv struct {
	*env
	failing sync.Map                              // resource ids whose create fails
	after   atomic.Pointer[func(plugins.Request)] // the running iteration's crash hook
}

func newCrashEnv(t *testing.T) *crashEnv {
	ce := &crashEnv{}
	ce.env = newEnv(t, fake.Options{
		Fail: func(op plugins.Op, r plugins.Request) error {
			if _, ok := ce.failing.Load(r.ResourceID); ok && op == plugins.OpCreate {
				return errors.New("no capacity")
			}
			return nil
		},
		After: func(_ plugins.Op, r plugins.Request) {
			if f := ce.after.Load(); f != nil {
				(*f)(r)
			}
		},
	})
	return ce
}

// crashAt runs the life of service svc, stopping the orchestrator at its
// k-th step (or k-th plugin call) and starting a new one, and checks that
// the service still ends removed with nothing of it left behind. It returns
// the number of steps (or calls) the life took and whether step k came.
func (ce *crashEnv) crashAt(t *testing.T, c crashCase, svc string, k int) (steps int, crashed bool) {
	t.Helper()
	ids := map[string]bool{}
	for _, n := range []string{"net", "disk", "vm", "dns"} {
		ids[id(svc, n)] = true
	}
	if c.failVM {
		ce.failing.Store(id(svc, "vm"), true)
	}
	var seen atomic.Int32
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	hit := make(chan struct{})
	count := func() {
		if seen.Add(1) == int32(k) {
			cancelA()
			close(hit)
		}
	}
	var onStep func(orchestrator.Step)
	if c.inPlugin {
		f := func(r plugins.Request) {
			if ids[r.ResourceID] {
				count()
			}
		}
		ce.after.Store(&f)
		defer ce.after.Store(nil)
	} else {
		onStep = func(s orchestrator.Step) {
			if s.ServiceID == svc {
				count()
			}
		}
	}
	doneA := ce.start(t, ctxA, onStep)
	result := make(chan error, 1)
	var final service.Service
	go func() {
		var err error
		final, err = ce.lifecycle(svc)
		result <- err
	}()
	var err error
	select {
	case <-hit:
		crashed = true
		if err := <-doneA; err != nil {
			t.Fatalf("crash at %d: orchestrator: %v", k, err)
		}
		ce.after.Store(nil)
		ctxB, cancelB := context.WithCancel(context.Background())
		doneB := ce.start(t, ctxB, nil)
		err = <-result
		cancelB()
		<-doneB
	case err = <-result:
		cancelA()
		<-doneA
	}
	if err != nil {
		t.Fatalf("crash at %d: %v", k, err)
	}
	if final.Status != service.StatusRemoved {
		t.Fatalf("crash at %d: service ended %s: %s", k, final.Status, final.Cause)
	}
	for _, live := range ce.fake.Live() {
		if ids[live] {
			t.Fatalf("crash at %d: resource %s leaked", k, live)
		}
	}
	for _, r := range ce.resources(t, final) {
		if r.Status != resource.StatusDestroyed {
			t.Fatalf("crash at %d: resource %s is %s", k, r.ID, r.Status)
		}
	}
	return int(seen.Load()), crashed
}

// TestCrashAtEveryStep stops the orchestrator right after each step of a
// service's life in turn — after the step's events commit, or after a plugin
// did its work but before the outcome was recorded — starts a new one, and
// checks that the service still goes through its whole life and that no
// resource is left behind.
func TestCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	cases := []crashCase{
		{"after each step", false, false},
		{"after each step of a rollback", true, false},
		{"inside each plugin call", false, true},
		{"inside each plugin call of a rollback", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ce := newCrashEnv(t)
			// Lives without a crash count the steps to crash at. Independent
			// branches run in parallel, so the count may differ between
			// lives (with a failure, a branch that had not started is neither
			// created nor rolled back): the fewest of three is taken, and a
			// life that ended before step k (correctly: crashAt checked it)
			// is tried again, so that every step is still crashed at once.
			n, _ := ce.crashAt(t, c, "crash-0a", 0)
			for _, svc := range []string{"crash-0b", "crash-0c"} {
				m, _ := ce.crashAt(t, c, svc, 0)
				n = min(n, m)
			}
			if n < 6 {
				t.Fatalf("only %d steps", n)
			}
			for k := 1; k <= n; k++ {
				crashed := false
				for try := 0; try < 5 && !crashed; try++ {
					_, crashed = ce.crashAt(t, c, fmt.Sprintf("crash-%d-%d", k, try), k)
				}
				if !crashed {
					t.Fatalf("five lives ended before step %d", k)
				}
			}
			t.Logf("crashed at each of %d steps", n)
		})
	}
}

// The terraform plugin through the orchestrator, with the terraform-notes
// example: a counted resource and one depending on all its instances, and
// Terraform's own interpolations written $${…}.
func TestTerraformExample(t *testing.T) {
	t.Parallel()
	bin, ok := terraform.Find()
	if !ok {
		t.Skip("terraform is not on PATH: the terraform plugin is registered only where the CLI is installed")
	}
	tf, err := terraform.New(terraform.Config{Binary: bin, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e := newBareEnv(t)
	if err := e.reg.Register("terraform", tf); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../examples/terraform-notes/service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if e.desc, err = orchestratortest.Publish(context.Background(), e.store, e.reg, "acme-vendor", doc); err != nil {
		t.Fatal(err)
	}
	e.run(t, nil)
	err = orchestratortest.Register(context.Background(), e.store, orchestratortest.Registration{
		ServiceID: "svc-tf", TenantID: "tenant-1", Descriptor: e.desc,
		Variables: map[string]json.RawMessage{"notes": json.RawMessage(`3`), "text": json.RawMessage(`"hi"`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := e.wait(t, "svc-tf", service.StatusRegistered, service.StatusFailed)
	if s.Status != service.StatusRegistered || string(s.Outputs) != `{"summary":"hi #0 for tenant-1 / hi #1 for tenant-1"}` {
		t.Fatalf("%s: %s %s", s.Status, s.Cause, s.Outputs)
	}
	if len(s.ResourceIDs) != 4 {
		t.Fatalf("%d resources", len(s.ResourceIDs))
	}
	e.request(t, "svc-tf", service.CmdRemove)
	if s = e.wait(t, "svc-tf", service.StatusRemoved, service.StatusManualCleanupRequired); s.Status != service.StatusRemoved {
		t.Fatalf("remove: %s %s", s.Status, s.Cause)
	}
}

// Plugin errors that the log would refuse as they are (terminal colours,
// carriage returns, no message at all) are still recorded, cleaned.
func TestUnprintableErrorsAreRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fake.Options{Fail: func(op plugins.Op, r plugins.Request) error {
		switch {
		case op == plugins.OpCreate && r.ResourceID == id("svc-5", "net"):
			return errors.New("\x1b[31mboom\x1b[0m\r\n\x00")
		case op == plugins.OpCreate && r.ResourceID == id("svc-5", "disk"):
			return errors.New("")
		}
		return nil
	}})
	e.run(t, nil)
	e.register(t, "svc-5")
	s := e.wait(t, "svc-5", service.StatusFailed, service.StatusRollbackFailed)
	if s.Status != service.StatusFailed || !strings.Contains(s.Cause, "boom") {
		t.Fatalf("%s: %q", s.Status, s.Cause)
	}
	for _, name := range []string{"net", "disk"} {
		var failed string
		for _, ev := range commandstest.Stream(t, e.store, "resource-"+id("svc-5", name)) {
			if ev.Type == "resource.failed" {
				failed = string(ev.Payload)
			}
		}
		if failed == "" {
			t.Fatalf("%s: no failure recorded", name)
		}
	}
}

// misbehaving wraps the fake plugin: vm's create hangs, dns's create
// answers a list instead of an object.
type misbehaving struct{ *fake.Plugin }

func (m misbehaving) Create(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	if strings.Contains(string(r.Properties), `"gb"`) { // vm
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if strings.Contains(string(r.Properties), `"target"`) { // dns
		if _, err := m.Plugin.Create(ctx, r); err != nil {
			return nil, err
		}
		return json.RawMessage(`["not", "an", "object"]`), nil
	}
	return m.Plugin.Create(ctx, r)
}

func TestTimeoutAndGarbageRollBack(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.Options{})
	e := newBareEnv(t)
	e.fake = f
	if err := e.reg.Register("fake", misbehaving{f}); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.desc, err = orchestratortest.Publish(context.Background(), e.store, e.reg, "acme-vendor", []byte(fakeApp)); err != nil {
		t.Fatal(err)
	}
	// vm's create hangs until this runs out; the other calls (in memory) must
	// not, however loaded the machine.
	e.run(t, func(c *orchestrator.Config) { c.CallTimeout = 2 * time.Second })
	e.register(t, "svc-6")
	s := e.wait(t, "svc-6", service.StatusFailed, service.StatusRollbackFailed)
	if s.Status != service.StatusFailed {
		t.Fatalf("%s: %s", s.Status, s.Cause)
	}
	for _, want := range []string{"resource vm", "gave up after 2s", "resource dns", "unusable outputs", "where an object was expected"} {
		if !strings.Contains(s.Cause, want) {
			t.Errorf("cause %q does not say %q", s.Cause, want)
		}
	}
	// dns was made before its answer was refused: the rollback destroyed it.
	if live := f.Live(); len(live) != 0 {
		t.Fatalf("left behind: %v", live)
	}
}
