package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/orchestrator"
	"cairn/commands/orchestrator/orchestratortest"
	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/plugins"
	"cairn/plugins/fake"
)

// fakeAppV2 keeps net, changes nothing of disk but its size variable, drops
// dns and adds cache; vm reads disk's outputs, so it is updated with it.
const fakeAppV2 = `
apiVersion: cairn/v1
metadata: {name: fake-app, version: 2.0.0}
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
  - name: cache
    plugin: fake
    type: thing
    properties: {mem: 64}
outputs:
  vm: {value: "${resource.vm.outputs.id}"}
  net: {value: "${resource.net.outputs.cidr}"}
`

// fakeAppV3 moves disk to a plugin that replaces what it changes.
const fakeAppV3 = `
apiVersion: cairn/v1
metadata: {name: fake-app, version: 3.0.0}
variables:
  size: {type: integer, default: 3}
resources:
  - name: net
    plugin: fake
    type: thing
    properties: {cidr: 10.0.0.0/24}
  - name: disk
    plugin: replaced
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

func (e *env) publish(t *testing.T, doc string) *ocl.Descriptor {
	t.Helper()
	d, err := orchestratortest.Publish(context.Background(), e.store, e.reg, "acme-vendor", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (e *env) update(t *testing.T, svc string, d *ocl.Descriptor, vars string) {
	t.Helper()
	var v map[string]json.RawMessage
	if vars != "" {
		if err := json.Unmarshal([]byte(vars), &v); err != nil {
			t.Fatal(err)
		}
	}
	if err := orchestratortest.Update(context.Background(), e.store, svc, d, v); err != nil {
		t.Fatal(err)
	}
}

// callsSince counts the fake plugin's calls after the first n, by op and
// instance name.
func (e *env) callsSince(svc string, n int) map[string]int {
	names := map[string]string{}
	for _, inst := range []string{"net", "disk", "vm", "dns", "cache"} {
		names[id(svc, inst)] = inst
	}
	out := map[string]int{}
	for _, c := range e.fake.Calls()[n:] {
		if c.Err == nil {
			out[string(c.Op)+" "+names[c.ResourceID]]++
		}
	}
	return out
}

func (e *env) props(t *testing.T, svc, inst string) map[string]any {
	t.Helper()
	r, ok := e.fake.Get(id(svc, inst))
	if !ok {
		t.Fatalf("%s does not exist", inst)
	}
	return r.Properties
}

// An update to a new version with another variable: disk is updated in
// place, vm with it (it reads disk's outputs), cache created and started,
// dns destroyed, net left alone; the service runs at revision 2.
func TestUpdateAppliesThePlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fake.Options{})
	v2 := e.publish(t, fakeAppV2)
	e.run(t, nil)
	e.register(t, "up-1")
	e.wait(t, "up-1", service.StatusRegistered)
	e.request(t, "up-1", service.CmdStart)
	e.wait(t, "up-1", service.StatusRunning)
	before := len(e.fake.Calls())

	e.update(t, "up-1", v2, `{"size": 5}`)
	s := e.wait(t, "up-1", service.StatusRunning, service.StatusFailed)
	if s.Status != service.StatusRunning || s.Revision != 2 || s.TemplateVersion != "2.0.0" {
		t.Fatalf("after the update: %s at revision %d (%s): %s", s.Status, s.Revision, s.TemplateVersion, s.Cause)
	}
	calls := e.callsSince("up-1", before)
	want := map[string]int{"update disk": 1, "update vm": 1, "create cache": 1, "start cache": 1, "stop dns": 1, "destroy dns": 1}
	for k, n := range want {
		if calls[k] != n {
			t.Errorf("%s: %d calls, want %d (all: %v)", k, calls[k], n, calls)
		}
	}
	for k := range calls {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected call %s (all: %v)", k, calls)
		}
	}
	if got := e.props(t, "up-1", "vm")["gb"]; got != float64(5) {
		t.Errorf("vm gb = %v, want 5", got)
	}
	if r, _ := e.fake.Get(id("up-1", "cache")); r.State != fake.StateRunning {
		t.Errorf("cache is %s", r.State)
	}
	rs := e.resources(t, s)
	if r := rs[id("up-1", "disk")]; r.Revision != 2 || r.Status != resource.StatusRunning {
		t.Errorf("disk: revision %d, %s", r.Revision, r.Status)
	}
	if r := rs[id("up-1", "net")]; r.Revision != 1 {
		t.Errorf("net was touched: revision %d", r.Revision)
	}
	if live := e.fake.Live(); slices.Contains(live, id("up-1", "dns")) || len(live) != 4 {
		t.Errorf("live after the update: %v", live)
	}

	// The same again changes nothing and calls nothing.
	before = len(e.fake.Calls())
	e.update(t, "up-1", v2, `{"size": 5}`)
	s = e.wait(t, "up-1", service.StatusRunning, service.StatusFailed)
	if s.Revision != 3 || len(e.callsSince("up-1", before)) != 0 {
		t.Errorf("a repeated update: revision %d, calls %v", s.Revision, e.callsSince("up-1", before))
	}
}

// A resource whose plugin cannot update in place is replaced: destroyed,
// then created again at the new revision; what reads its outputs is
// updated.
func TestUpdateReplaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fake.Options{})
	rep := fake.New(fake.Options{Replaced: true})
	if err := e.reg.Register("replaced", rep); err != nil {
		t.Fatal(err)
	}
	v3 := e.publish(t, fakeAppV3)
	e.run(t, nil)
	e.register(t, "up-2")
	e.wait(t, "up-2", service.StatusRegistered)
	before := len(e.fake.Calls())
	e.update(t, "up-2", v3, "")
	s := e.wait(t, "up-2", service.StatusRegistered, service.StatusFailed)
	if s.Status != service.StatusRegistered || s.Revision != 2 {
		t.Fatalf("after the update: %s at %d: %s", s.Status, s.Revision, s.Cause)
	}
	calls := e.callsSince("up-2", before)
	if calls["destroy disk"] != 1 || calls["update vm"] != 1 || calls["start vm"] != 0 {
		t.Errorf("calls %v", calls)
	}
	if live := rep.Live(); !slices.Equal(live, []string{id("up-2", "disk")}) {
		t.Errorf("replaced disk: %v", live)
	}
	if _, ok := e.fake.Get(id("up-2", "disk")); ok {
		t.Error("the old disk is left")
	}
}

// An update that fails goes back: what it changed is changed back, what it
// made is destroyed, and the service runs at its old revision with the
// cause. Nothing is leaked.
func TestFailedUpdateReverts(t *testing.T) {
	t.Parallel()
	var failCache atomic.Bool
	e := newEnv(t, fake.Options{Fail: func(op plugins.Op, r plugins.Request) error {
		if failCache.Load() && op == plugins.OpStart && r.ResourceID == id("up-3", "cache") {
			return errors.New("out of memory")
		}
		return nil
	}})
	v2 := e.publish(t, fakeAppV2)
	e.run(t, nil)
	e.register(t, "up-3")
	e.wait(t, "up-3", service.StatusRegistered)
	e.request(t, "up-3", service.CmdStart)
	e.wait(t, "up-3", service.StatusRunning)
	failCache.Store(true)
	e.update(t, "up-3", v2, `{"size": 5}`)
	s := e.wait(t, "up-3", service.StatusRunning, service.StatusFailed)
	if s.Status != service.StatusRunning || s.Revision != 1 || s.TemplateVersion != "1.0.0" || s.Cause == "" {
		t.Fatalf("after the failed update: %s at %d (%s), cause %q", s.Status, s.Revision, s.TemplateVersion, s.Cause)
	}
	types := eventTypes(t, e.store, "service-up-3")
	if !slices.Contains(types, "update_failed") || types[len(types)-1] != "update_reverted" {
		t.Fatalf("events %v", types)
	}
	want := []string{id("up-3", "net"), id("up-3", "disk"), id("up-3", "vm"), id("up-3", "dns")}
	slices.Sort(want)
	if live := e.fake.Live(); !slices.Equal(live, want) {
		t.Fatalf("live after the revert: %v, want %v", live, want)
	}
	if got := e.props(t, "up-3", "disk")["size"]; got != float64(3) {
		t.Errorf("disk size = %v after the revert, want 3", got)
	}
	for _, inst := range []string{"net", "disk", "vm", "dns"} {
		if r, _ := e.fake.Get(id("up-3", inst)); r.State != fake.StateRunning {
			t.Errorf("%s is %s after the revert", inst, r.State)
		}
	}
	// Once the cause is gone the update goes through, as revision 3.
	failCache.Store(false)
	e.update(t, "up-3", v2, `{"size": 5}`)
	s = e.wait(t, "up-3", service.StatusRunning, service.StatusFailed)
	if s.Status != service.StatusRunning || s.Revision != 3 {
		t.Fatalf("second try: %s at %d: %s", s.Status, s.Revision, s.Cause)
	}
}

// TestUpdateCrashAtEveryStep stops the orchestrator after each step of an
// update (and of a failed update's revert), starts a new one, and checks
// that the service ends where it should with exactly its resources live.
func TestUpdateCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing=%v", failing), func(t *testing.T) {
			t.Parallel()
			var failOn atomic.Value
			failOn.Store("")
			e := newEnv(t, fake.Options{Fail: func(op plugins.Op, r plugins.Request) error {
				if op == plugins.OpStart && r.ResourceID == failOn.Load().(string) {
					return errors.New("out of memory")
				}
				return nil
			}})
			v2 := e.publish(t, fakeAppV2)
			wantRev, wantLive := 2, []string{"net", "disk", "vm", "cache"}
			if failing {
				wantRev, wantLive = 1, []string{"net", "disk", "vm", "dns"}
			}
			// life runs one update, stopping the orchestrator at its k-th step
			// (never, for k = 0) and finishing it with a new one; it returns
			// the steps the first orchestrator saw.
			life := func(k int) int {
				svc := fmt.Sprintf("upc-%d", k)
				e.runningService(t, svc)
				if failing {
					failOn.Store(id(svc, "cache"))
				}
				s, seen := e.crashAt(t, svc, k, func() { e.update(t, svc, v2, `{"size": 5}`) }, service.StatusRunning, service.StatusFailed)
				if s.Status != service.StatusRunning || s.Revision != wantRev {
					t.Fatalf("crash at %d: %s at %d: %s", k, s.Status, s.Revision, s.Cause)
				}
				var want, live []string
				for _, inst := range wantLive {
					want = append(want, id(svc, inst))
				}
				for _, l := range e.fake.Live() {
					if instanceOf(svc, l) != "" {
						live = append(live, l)
					}
				}
				slices.Sort(want)
				if !slices.Equal(live, want) {
					t.Fatalf("crash at %d: live %v, want %v", k, live, want)
				}
				return seen
			}
			steps := life(0)
			if steps < 6 {
				t.Fatalf("an update of %d steps", steps)
			}
			for k := 1; k <= steps; k++ {
				life(k)
			}
			t.Logf("crashed at each of %d steps", steps)
		})
	}
}

// runningService registers and starts svc with an orchestrator of its own,
// stopped again before this returns.
func (e *env) runningService(t *testing.T, svc string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := e.start(t, ctx, nil)
	e.register(t, svc)
	e.wait(t, svc, service.StatusRegistered)
	e.request(t, svc, service.CmdStart)
	e.wait(t, svc, service.StatusRunning)
	cancel()
	<-done
}

// crashAt records a request with act and drives svc with an orchestrator
// stopped after its k-th step of the service (never, for k = 0), then with
// a new one until the service is in one of the statuses; it returns the
// service and the steps the first orchestrator saw.
func (e *env) crashAt(t *testing.T, svc string, k int, act func(), statuses ...service.Status) (service.Service, int) {
	t.Helper()
	var seen atomic.Int32
	ctxA, cancelA := context.WithCancel(context.Background())
	doneA := e.start(t, ctxA, func(s orchestrator.Step) {
		if s.ServiceID == svc && seen.Add(1) == int32(k) {
			cancelA()
		}
	})
	act()
	settled := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(ctxA, time.Minute)
		defer cancel()
		_, _ = orchestratortest.Wait(ctx, e.store, svc, statuses...)
		close(settled)
	}()
	select {
	case <-ctxA.Done():
	case <-settled:
	}
	cancelA()
	<-doneA
	ctxB, cancelB := context.WithCancel(context.Background())
	doneB := e.start(t, ctxB, nil)
	s := e.wait(t, svc, statuses...)
	cancelB()
	<-doneB
	return s, int(seen.Load())
}

func instanceOf(svc, resourceID string) string {
	for _, inst := range []string{"net", "disk", "vm", "dns", "cache"} {
		if id(svc, inst) == resourceID {
			return inst
		}
	}
	return ""
}

// TestRepairCrashAtEveryStep stops the orchestrator after each step of a
// repair (net lost: it and what reads its outputs are made again), starts
// a new one, and checks that the service runs again with every resource
// live and running.
func TestRepairCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fake.Options{})
	life := func(k int) int {
		svc := fmt.Sprintf("rep-%d", k)
		e.runningService(t, svc)
		e.fake.Lose(id(svc, "net"))
		repair := []string{id(svc, "net"), id(svc, "vm"), id(svc, "dns")}
		s, seen := e.crashAt(t, svc, k, func() {
			_, err := commands.Execute[service.Service](context.Background(), e.store, domain.ServiceStream, svc, commands.Meta{Actor: "tester"}, nil,
				func(s service.Service) ([]domain.Event, error) {
					return s.RequestRepair(service.RequestRepair{ServiceID: svc, Resources: repair, Reason: "net is missing", At: time.Now()})
				})
			if err != nil {
				t.Error(err)
			}
		}, service.StatusRunning, service.StatusDegraded)
		if s.Status != service.StatusRunning {
			t.Fatalf("crash at %d: %s: %s", k, s.Status, s.Cause)
		}
		for _, inst := range []string{"net", "disk", "vm", "dns"} {
			r, ok := e.fake.Get(id(svc, inst))
			if !ok || r.State != fake.StateRunning {
				t.Fatalf("crash at %d: %s is %+v (live %v)", k, inst, r.State, ok)
			}
		}
		for rid, r := range e.resources(t, s) {
			if r.Status != resource.StatusRunning || r.Drift != "" {
				t.Fatalf("crash at %d: resource %s is %s, drift %q", k, rid, r.Status, r.Drift)
			}
		}
		return seen
	}
	steps := life(0)
	if steps < 6 {
		t.Fatalf("a repair of %d steps", steps)
	}
	for k := 1; k <= steps; k++ {
		life(k)
	}
	t.Logf("crashed at each of %d steps of a repair", steps)
}
