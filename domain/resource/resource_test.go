package resource_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/resource"
)

const id = "res-1"

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

func fold(es ...domain.Event) resource.Resource {
	var r resource.Resource
	for _, e := range es {
		r.Apply(e)
	}
	return r
}

func apply(r resource.Resource, es []domain.Event) resource.Resource {
	for _, e := range es {
		r.Apply(e)
	}
	return r
}

var (
	planned = resource.Planned{ResourceID: id, ServiceID: "svc-1", Plugin: "agent", Type: "agent.process",
		Properties: json.RawMessage(`{"cmd":"postgres"}`), DependsOn: []string{"res-0"}, At: at(0)}
	createBegun  = resource.CreateBegun{ResourceID: id, At: at(1)}
	created      = resource.Created{ResourceID: id, Outputs: json.RawMessage(`{"pid":0}`), At: at(2)}
	startBegun   = resource.StartBegun{ResourceID: id, At: at(3)}
	started      = resource.Started{ResourceID: id, Outputs: json.RawMessage(`{"pid":42}`), At: at(4)}
	stopBegun    = resource.StopBegun{ResourceID: id, At: at(5)}
	stopped      = resource.Stopped{ResourceID: id, At: at(6)}
	updateBegun  = resource.UpdateBegun{ResourceID: id, Revision: 2, Properties: json.RawMessage(`{"cmd":"postgres -N 200"}`), At: at(7)}
	destroyBegun = resource.DestroyBegun{ResourceID: id, At: at(7)}
	destroyed    = resource.Destroyed{ResourceID: id, Output: json.RawMessage(`"gone"`), At: at(8)}
	failedIn     = func(p resource.Phase) resource.Failed {
		return resource.Failed{ResourceID: id, Phase: p, Error: "plugin said no", Output: json.RawMessage(`{"code":7}`), At: at(9)}
	}
)

type situation struct {
	name    string
	history []domain.Event
	status  resource.Status
	state   string
}

var situations = []situation{
	{"pending", []domain.Event{planned}, resource.StatusPending, "pending"},
	{"creating", []domain.Event{planned, createBegun}, resource.StatusCreating, "creating"},
	{"created", []domain.Event{planned, createBegun, created}, resource.StatusCreated, "created"},
	{"starting", []domain.Event{planned, createBegun, created, startBegun}, resource.StatusStarting, "starting"},
	{"running", []domain.Event{planned, createBegun, created, startBegun, started}, resource.StatusRunning, "running"},
	{"stopping", []domain.Event{planned, createBegun, created, startBegun, started, stopBegun}, resource.StatusStopping, "stopping"},
	{"stopped", []domain.Event{planned, createBegun, created, startBegun, started, stopBegun, stopped}, resource.StatusStopped, "stopped"},
	{"updating", []domain.Event{planned, createBegun, created, startBegun, started, updateBegun}, resource.StatusUpdating, "updating"},
	{"failed in update", []domain.Event{planned, createBegun, created, startBegun, started, updateBegun, failedIn(resource.PhaseUpdate)},
		resource.StatusFailed, "failed (in update)"},
	{"destroying", []domain.Event{planned, createBegun, created, destroyBegun}, resource.StatusDestroying, "destroying"},
	{"destroyed", []domain.Event{planned, createBegun, created, destroyBegun, destroyed}, resource.StatusDestroyed, "destroyed"},
	{"failed in create", []domain.Event{planned, createBegun, failedIn(resource.PhaseCreate)}, resource.StatusFailed, "failed (in create)"},
	{"failed in start", []domain.Event{planned, createBegun, created, startBegun, failedIn(resource.PhaseStart)},
		resource.StatusFailed, "failed (in start)"},
	{"failed in stop", []domain.Event{planned, createBegun, created, startBegun, started, stopBegun, failedIn(resource.PhaseStop)},
		resource.StatusFailed, "failed (in stop)"},
	{"failed in destroy", []domain.Event{planned, createBegun, created, destroyBegun, failedIn(resource.PhaseDestroy)},
		resource.StatusFailed, "failed (in destroy)"},
}

var commands = map[string]func(resource.Resource) ([]domain.Event, error){
	resource.CmdPlan: func(r resource.Resource) ([]domain.Event, error) {
		return r.Plan(resource.Plan{ResourceID: id, ServiceID: "svc-1", Plugin: "http", Type: "http.endpoint", At: at(20)})
	},
	resource.CmdBeginCreate: func(r resource.Resource) ([]domain.Event, error) {
		return r.BeginCreate(resource.BeginCreate{ResourceID: id, At: at(20)})
	},
	resource.CmdCompleteCreate: func(r resource.Resource) ([]domain.Event, error) {
		return r.CompleteCreate(resource.CompleteCreate{ResourceID: id, Outputs: json.RawMessage(`{"a":1}`), At: at(20)})
	},
	resource.CmdBeginStart: func(r resource.Resource) ([]domain.Event, error) {
		return r.BeginStart(resource.BeginStart{ResourceID: id, At: at(20)})
	},
	resource.CmdCompleteStart: func(r resource.Resource) ([]domain.Event, error) {
		return r.CompleteStart(resource.CompleteStart{ResourceID: id, At: at(20)})
	},
	resource.CmdBeginStop: func(r resource.Resource) ([]domain.Event, error) {
		return r.BeginStop(resource.BeginStop{ResourceID: id, At: at(20)})
	},
	resource.CmdCompleteStop: func(r resource.Resource) ([]domain.Event, error) {
		return r.CompleteStop(resource.CompleteStop{ResourceID: id, At: at(20)})
	},
	resource.CmdBeginDestroy: func(r resource.Resource) ([]domain.Event, error) {
		return r.BeginDestroy(resource.BeginDestroy{ResourceID: id, At: at(20)})
	},
	resource.CmdCompleteDestroy: func(r resource.Resource) ([]domain.Event, error) {
		return r.CompleteDestroy(resource.CompleteDestroy{ResourceID: id, At: at(20)})
	},
	resource.CmdFail: func(r resource.Resource) ([]domain.Event, error) {
		return r.Fail(resource.Fail{ResourceID: id, Error: "timeout", At: at(20)})
	},
	resource.CmdBeginRepair: func(r resource.Resource) ([]domain.Event, error) {
		return r.BeginRepair(id, "missing", at(20))
	},
	resource.CmdBeginUpdate: func(r resource.Resource) ([]domain.Event, error) {
		return r.BeginUpdate(resource.BeginUpdate{ResourceID: id, Revision: 3, Properties: json.RawMessage(`{"cmd":"x"}`), At: at(20)})
	},
	resource.CmdCompleteUpdate: func(r resource.Resource) ([]domain.Event, error) {
		return r.CompleteUpdate(id, json.RawMessage(`{"pid":43}`), at(20))
	},
}

var next = map[string]map[string]resource.Status{
	"pending":  {resource.CmdBeginCreate: resource.StatusCreating, resource.CmdBeginDestroy: resource.StatusDestroying},
	"creating": {resource.CmdCompleteCreate: resource.StatusCreated, resource.CmdFail: resource.StatusFailed, resource.CmdBeginDestroy: resource.StatusDestroying},
	"created": {resource.CmdBeginStart: resource.StatusStarting, resource.CmdBeginDestroy: resource.StatusDestroying, resource.CmdBeginRepair: resource.StatusPending,
		resource.CmdBeginUpdate: resource.StatusUpdating},
	"starting": {resource.CmdCompleteStart: resource.StatusRunning, resource.CmdFail: resource.StatusFailed},
	"running":  {resource.CmdBeginStop: resource.StatusStopping, resource.CmdBeginRepair: resource.StatusPending, resource.CmdBeginUpdate: resource.StatusUpdating},
	"updating": {resource.CmdCompleteUpdate: resource.StatusRunning, resource.CmdFail: resource.StatusFailed},
	"failed in update": {resource.CmdBeginUpdate: resource.StatusUpdating, resource.CmdBeginStop: resource.StatusStopping,
		resource.CmdBeginDestroy: resource.StatusDestroying, resource.CmdBeginRepair: resource.StatusPending},
	"stopping": {resource.CmdCompleteStop: resource.StatusStopped, resource.CmdFail: resource.StatusFailed},
	"stopped": {resource.CmdBeginStart: resource.StatusStarting, resource.CmdBeginDestroy: resource.StatusDestroying, resource.CmdBeginRepair: resource.StatusPending,
		resource.CmdBeginUpdate: resource.StatusUpdating},
	"destroying":       {resource.CmdCompleteDestroy: resource.StatusDestroyed, resource.CmdFail: resource.StatusFailed},
	"destroyed":        {resource.CmdPlan: resource.StatusPending},
	"failed in create": {resource.CmdBeginCreate: resource.StatusCreating, resource.CmdBeginDestroy: resource.StatusDestroying, resource.CmdBeginRepair: resource.StatusPending},
	"failed in start": {resource.CmdBeginStart: resource.StatusStarting, resource.CmdBeginStop: resource.StatusStopping,
		resource.CmdBeginDestroy: resource.StatusDestroying, resource.CmdBeginRepair: resource.StatusPending},
	"failed in stop": {resource.CmdBeginStart: resource.StatusStarting, resource.CmdBeginStop: resource.StatusStopping,
		resource.CmdBeginDestroy: resource.StatusDestroying, resource.CmdBeginRepair: resource.StatusPending},
	"failed in destroy": {resource.CmdBeginDestroy: resource.StatusDestroying},
}

func TestEveryStatusAndCommand(t *testing.T) {
	t.Parallel()
	covered := map[resource.Status]bool{}
	for _, sit := range situations {
		r := fold(sit.history...)
		if r.Status != sit.status {
			t.Fatalf("history for %s folds to %s", sit.name, r.Status)
		}
		covered[r.Status] = true
		for _, cmd := range resource.Commands {
			t.Run(sit.name+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				es, err := commands[cmd](r)
				if cmd == resource.CmdPlan && sit.name != "destroyed" {
					assertRefused(t, err, cmd, sit.state)
					return
				}
				want, expected := next[sit.name][cmd]
				allowed := slices.Contains(resource.AllowedCommands(r.Status, r.FailedIn), cmd)
				if allowed != expected || allowed != slices.Contains(r.AllowedCommands(), cmd) {
					t.Fatalf("table allows=%v but test expects a transition=%v", allowed, expected)
				}
				if !allowed {
					assertRefused(t, err, cmd, sit.state)
					return
				}
				if err != nil || len(es) == 0 {
					t.Fatalf("allowed command: %v %v", es, err)
				}
				if got := apply(r, es).Status; got != want {
					t.Fatalf("status after %s = %s, want %s", cmd, got, want)
				}
			})
		}
	}
	for _, status := range resource.Statuses {
		if !covered[status] {
			t.Errorf("no situation in status %s", status)
		}
	}
}

func assertRefused(t *testing.T, err error, cmd, state string) {
	t.Helper()
	var se *domain.StateError
	if !errors.As(err, &se) || se.Command != cmd || se.State != state || se.Entity != "resource" ||
		se.ID != id || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("want state error for %s in %s, got %v", cmd, state, err)
	}
}

func TestCommandsOnMissingResource(t *testing.T) {
	t.Parallel()
	for cmd, run := range commands {
		if cmd == resource.CmdPlan {
			continue
		}
		_, err := run(resource.Resource{})
		var nf *domain.NotFoundError
		if !errors.As(err, &nf) || nf.ID != id || !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s on a missing resource: %v", cmd, err)
		}
	}
	es, err := commands[resource.CmdPlan](resource.Resource{})
	if err != nil || fold(es...).Status != resource.StatusPending {
		t.Fatalf("plan: %v %v", es, err)
	}
}

// Fail records the phase the status says is under way.
func TestFailRecordsThePhase(t *testing.T) {
	t.Parallel()
	inFlight := map[string]resource.Phase{
		"creating": resource.PhaseCreate, "starting": resource.PhaseStart,
		"stopping": resource.PhaseStop, "destroying": resource.PhaseDestroy,
	}
	for _, sit := range situations {
		phase, ok := inFlight[sit.name]
		if !ok {
			continue
		}
		r := fold(sit.history...)
		es, err := r.Fail(resource.Fail{ResourceID: id, Error: "x", Output: json.RawMessage(`[1]`), At: at(20)})
		if err != nil {
			t.Fatalf("%s: %v", sit.name, err)
		}
		after := apply(r, es)
		if after.FailedIn != phase || after.Error != "x" {
			t.Errorf("%s: failed in %q with %q, want %q", sit.name, after.FailedIn, after.Error, phase)
		}
	}
}

func TestOutputs(t *testing.T) {
	t.Parallel()
	r := fold(planned, createBegun, created, startBegun, started, stopBegun, stopped)
	if string(r.Outputs) != `{"pid":42}` {
		t.Fatalf("outputs after a stop without outputs = %s", r.Outputs)
	}
	r = fold(planned, createBegun, created, destroyBegun, destroyed)
	if r.Outputs != nil {
		t.Fatalf("destroyed resource keeps outputs %s", r.Outputs)
	}
	r = fold(planned, createBegun, failedIn(resource.PhaseCreate))
	if r.Error == "" {
		t.Fatal("failure not recorded")
	}
	r.Apply(resource.CreateBegun{ResourceID: id, At: at(10)})
	if r.Error != "" || r.FailedIn != "" {
		t.Fatalf("retry kept the failure: %+v", r)
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	validPlan := func() resource.Plan {
		return resource.Plan{ResourceID: id, ServiceID: "svc-1", Plugin: "agent", Type: "agent.process",
			Properties: json.RawMessage(`{}`), DependsOn: []string{"res-0"}, At: at(0)}
	}
	cases := []struct {
		field  string
		change func(*resource.Plan)
	}{
		{"resourceId", func(c *resource.Plan) { c.ResourceID = "" }},
		{"serviceId", func(c *resource.Plan) { c.ServiceID = "svc 1" }},
		{"plugin", func(c *resource.Plan) { c.Plugin = "" }},
		{"plugin", func(c *resource.Plan) { c.Plugin = "Agent" }},
		{"type", func(c *resource.Plan) { c.Type = "" }},
		{"type", func(c *resource.Plan) { c.Type = "1process" }},
		{"properties", func(c *resource.Plan) { c.Properties = json.RawMessage(`"x"`) }},
		{"properties", func(c *resource.Plan) { c.Properties = json.RawMessage(`{`) }},
		{"dependsOn[0]", func(c *resource.Plan) { c.DependsOn = []string{id} }},
		{"dependsOn[1]", func(c *resource.Plan) { c.DependsOn = []string{"a", "a"} }},
		{"dependsOn[0]", func(c *resource.Plan) { c.DependsOn = []string{""} }},
		{"at", func(c *resource.Plan) { c.At = time.Time{} }},
	}
	for i, c := range cases {
		cmd := validPlan()
		c.change(&cmd)
		_, err := resource.Resource{}.Plan(cmd)
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("plan case %d: want validation error on %s, got %v", i, c.field, err)
		}
	}
	creating := fold(planned, createBegun)
	destroying := fold(planned, createBegun, created, destroyBegun)
	other := []struct {
		name  string
		field string
		run   func() ([]domain.Event, error)
	}{
		{"outputs not an object", "outputs", func() ([]domain.Event, error) {
			return creating.CompleteCreate(resource.CompleteCreate{ResourceID: id, Outputs: json.RawMessage(`[]`), At: at(9)})
		}},
		{"output not JSON", "output", func() ([]domain.Event, error) {
			return destroying.CompleteDestroy(resource.CompleteDestroy{ResourceID: id, Output: json.RawMessage(`x`), At: at(9)})
		}},
		{"no error", "error", func() ([]domain.Event, error) {
			return creating.Fail(resource.Fail{ResourceID: id, At: at(9)})
		}},
		{"no time", "at", func() ([]domain.Event, error) {
			return creating.Fail(resource.Fail{ResourceID: id, Error: "x"})
		}},
		{"another resource", "resourceId", func() ([]domain.Event, error) {
			return creating.Fail(resource.Fail{ResourceID: "res-2", Error: "x", At: at(9)})
		}},
	}
	for _, c := range other {
		_, err := c.run()
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%s: want validation error on %s, got %v", c.name, c.field, err)
		}
	}
}

func TestEventsRoundTrip(t *testing.T) {
	t.Parallel()
	samples := []domain.Event{planned, createBegun, created, startBegun, started, stopBegun, stopped,
		destroyBegun, destroyed, failedIn(resource.PhaseStart),
		resource.DriftFound{ResourceID: id, Kind: resource.DriftMissing, Detail: "gone", At: at(30)},
		resource.DriftCleared{ResourceID: id, At: at(31)}, resource.RepairBegun{ResourceID: id, Reason: "missing", At: at(31)},
		updateBegun, resource.Updated{ResourceID: id, Outputs: json.RawMessage(`{"pid":43}`), At: at(32)},
		resource.HealthChanged{ResourceID: id, Check: "http-ok", Healthy: false, Detail: "answered 503", At: at(33)}}
	own := domain.NewRegistry()
	resource.RegisterEvents(own)
	var types []string
	for _, e := range samples {
		types = append(types, e.EventType())
	}
	slices.Sort(types)
	if !slices.Equal(types, own.Types()) {
		t.Fatalf("samples cover %v, registered %v", types, own.Types())
	}
	reg := events.Registry()
	for _, e := range samples {
		typ, v, payload, err := reg.Encode(e)
		if err != nil || v != 1 {
			t.Fatalf("encode %T: %v", e, err)
		}
		decoded, err := reg.Decode(typ, v, payload)
		if err != nil {
			t.Fatalf("decode %s: %v", typ, err)
		}
		if got := decoded; !reflect.DeepEqual(got, e) {
			t.Errorf("%s round trip:\n got %#v\nwant %#v", typ, got, e)
		}
		base := fold(planned)
		fromValue, fromPointer := base, base
		fromValue.Apply(e)
		fromPointer.Apply(decoded)
		if !reflect.DeepEqual(fromValue, fromPointer) {
			t.Errorf("%s: Apply(value) = %+v, Apply(decoded pointer) = %+v", typ, fromValue, fromPointer)
		}
		if reflect.DeepEqual(fromValue, base) && typ != planned.EventType() {
			t.Errorf("%s: Apply changed nothing", typ)
		}
	}
}

// Drift is recorded once per change, never once per observation.
func TestDriftOnChangeOnly(t *testing.T) {
	t.Parallel()
	r := fold(planned, createBegun, created, startBegun, started)
	evs, err := r.FindDrift(resource.DriftMissing, "not found", at(30))
	if err != nil || len(evs) != 1 {
		t.Fatalf("first drift: %v %v", evs, err)
	}
	r = apply(r, evs)
	if evs, err := r.FindDrift(resource.DriftMissing, "still not found", at(31)); err != nil || len(evs) != 0 {
		t.Fatalf("the same drift again decided %v %v", evs, err)
	}
	if evs, err := r.FindDrift(resource.DriftNodeDown, "node n1 is down", at(32)); err != nil || len(evs) != 1 {
		t.Fatalf("another kind: %v %v", evs, err)
	}
	if _, err := r.FindDrift("gone fishing", "", at(32)); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
	cleared, _ := r.ClearDrift(at(33))
	r = apply(r, cleared)
	if r.Drift != "" || len(cleared) != 1 {
		t.Fatalf("after clearing: %+v", r)
	}
	if evs, _ := r.ClearDrift(at(34)); len(evs) != 0 {
		t.Fatal("clearing twice decided something")
	}
}

// A check's result is recorded when it changes, not on every probe.
func TestHealthOnChangeOnly(t *testing.T) {
	t.Parallel()
	p := planned
	p.Checks = []resource.HealthCheck{{Name: "http-ok", Type: "http", Interval: time.Second, Timeout: time.Second}}
	r := fold(p, createBegun, created)
	step := func(healthy bool) int {
		es, err := r.RecordHealth("http-ok", healthy, "answered 503", at(40))
		if err != nil {
			t.Fatal(err)
		}
		r = apply(r, es)
		return len(es)
	}
	if n := []int{step(true), step(true), step(false), step(false), step(true)}; n[0] != 0 || n[1] != 0 || n[2] != 1 || n[3] != 0 || n[4] != 1 {
		t.Fatalf("events per probe %v, want [0 0 1 0 1]", n)
	}
	if !r.Healthy() {
		t.Fatal("healthy again")
	}
	if _, err := r.RecordHealth("nope", true, "", at(41)); err == nil {
		t.Fatal("a check it does not have")
	}
}
