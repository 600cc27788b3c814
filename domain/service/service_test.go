package service_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/service"
)

const id = "svc-1"

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

func fold(es ...domain.Event) service.Service {
	var s service.Service
	for _, e := range es {
		s.Apply(e)
	}
	return s
}

func apply(s service.Service, es []domain.Event) service.Service {
	for _, e := range es {
		s.Apply(e)
	}
	return s
}

var (
	requested = service.RegistrationRequested{ServiceID: id, TenantID: "tenant-1", Name: "orders db",
		TemplateName: "postgres", TemplateVersion: "1.2.0", Variables: json.RawMessage(`{"size":"small"}`),
		ResourceIDs: []string{"res-1", "res-2"}, At: at(0)}
	registered     = service.Registered{ServiceID: id, Outputs: json.RawMessage(`{"host":"10.0.0.7"}`), At: at(1)}
	regFailed      = service.RegistrationFailed{ServiceID: id, Cause: "quota exceeded", At: at(1)}
	rolledBack     = service.RolledBack{ServiceID: id, At: at(2)}
	rollbackFailed = service.RollbackFailed{ServiceID: id, Remaining: []string{"res-1"}, Cause: "plugin timeout", At: at(2)}
	startAsked     = service.StartRequested{ServiceID: id, At: at(3)}
	started        = service.Started{ServiceID: id, Outputs: json.RawMessage(`{"host":"10.0.0.8"}`), At: at(4)}
	startFailed    = service.StartFailed{ServiceID: id, Cause: "port in use", At: at(4)}
	stopAsked      = service.StopRequested{ServiceID: id, At: at(5)}
	stopped        = service.Stopped{ServiceID: id, At: at(6)}
	stopFailed     = service.StopFailed{ServiceID: id, Cause: "agent gone", At: at(6)}
	removalAsked   = service.RemovalRequested{ServiceID: id, At: at(7)}
	removed        = service.Removed{ServiceID: id, At: at(8)}
	removalFailed  = service.RemovalFailed{ServiceID: id, Remaining: []string{"res-2"}, Cause: "volume busy", At: at(8)}
	cleanedUp      = service.CleanedUp{ServiceID: id, Note: "deleted the volume by hand", At: at(9)}
	retried        = service.RegistrationRetried{ServiceID: id, At: at(10)}
	repairAsked    = service.RepairRequested{ServiceID: id, Resources: []string{"res-1"}, Reason: "res-1 missing", At: at(11)}
	repaired       = service.Repaired{ServiceID: id, To: service.StatusRunning, At: at(12)}
	repairFailed   = service.RepairFailed{ServiceID: id, Cause: "no node fits", To: service.StatusRunning, At: at(12)}
	degraded       = service.RepairFailed{ServiceID: id, Cause: "no node fits", Degraded: true, To: service.StatusDegraded, At: at(13)}
	repairRetried  = service.RepairRetried{ServiceID: id, To: service.StatusRunning, At: at(14)}
	rev1           = service.Revision{Number: 1, TemplateVersion: "1.2.0", Variables: json.RawMessage(`{"size":"small"}`), ResourceIDs: []string{"res-1", "res-2"}}
	rev2           = service.Revision{Number: 2, TemplateVersion: "1.3.0", Variables: json.RawMessage(`{"size":"large"}`), ResourceIDs: []string{"res-1", "res-3"}}
	updateAsked    = service.UpdateRequested{ServiceID: id, Revision: rev2, From: rev1, Status: service.StatusRunning, At: at(15)}
	updated        = service.Updated{ServiceID: id, Revision: 2, Outputs: json.RawMessage(`{"host":"10.0.0.9"}`), To: service.StatusRunning, At: at(16)}
	updateFailed   = service.UpdateFailed{ServiceID: id, Cause: "plugin refused", At: at(16)}
	reverted       = service.UpdateReverted{ServiceID: id, Revision: 1, To: service.StatusRunning, At: at(17)}
	revertFailed   = service.UpdateRevertFailed{ServiceID: id, Cause: "plugin refused; then going back failed: gone", At: at(17)}
)

// situation is a reachable state: a status, and for failed the phase.
type situation struct {
	name    string
	history []domain.Event
	status  service.Status
	state   string // as a state error names it
}

var situations = []situation{
	{"registering", []domain.Event{requested}, service.StatusRegistering, "registering"},
	{"registered", []domain.Event{requested, registered}, service.StatusRegistered, "registered"},
	{"starting", []domain.Event{requested, registered, startAsked}, service.StatusStarting, "starting"},
	{"running", []domain.Event{requested, registered, startAsked, started}, service.StatusRunning, "running"},
	{"stopping", []domain.Event{requested, registered, startAsked, started, stopAsked}, service.StatusStopping, "stopping"},
	{"stopped", []domain.Event{requested, registered, startAsked, started, stopAsked, stopped}, service.StatusStopped, "stopped"},
	{"removing", []domain.Event{requested, registered, removalAsked}, service.StatusRemoving, "removing"},
	{"removed", []domain.Event{requested, registered, removalAsked, removed}, service.StatusRemoved, "removed"},
	{"failed in register", []domain.Event{requested, regFailed, rolledBack}, service.StatusFailed, "failed (in register)"},
	{"failed in start", []domain.Event{requested, registered, startAsked, startFailed}, service.StatusFailed, "failed (in start)"},
	{"failed in stop", []domain.Event{requested, registered, startAsked, started, stopAsked, stopFailed},
		service.StatusFailed, "failed (in stop)"},
	{"rolling_back", []domain.Event{requested, regFailed}, service.StatusRollingBack, "rolling_back"},
	{"rollback_failed", []domain.Event{requested, regFailed, rollbackFailed}, service.StatusRollbackFailed, "rollback_failed"},
	{"manual_cleanup_required", []domain.Event{requested, registered, removalAsked, removalFailed},
		service.StatusManualCleanupRequired, "manual_cleanup_required"},
	{"repairing", []domain.Event{requested, registered, startAsked, started, repairAsked}, service.StatusRepairing, "repairing"},
	{"degraded", []domain.Event{requested, registered, startAsked, started, repairAsked, degraded}, service.StatusDegraded, "degraded"},
	{"updating", []domain.Event{requested, registered, startAsked, started, updateAsked}, service.StatusUpdating, "updating"},
	{"reverting", []domain.Event{requested, registered, startAsked, started, updateAsked, updateFailed}, service.StatusReverting, "reverting"},
	{"failed in update", []domain.Event{requested, registered, startAsked, started, updateAsked, updateFailed, revertFailed},
		service.StatusFailed, "failed (in update)"},
}

var commands = map[string]func(service.Service) ([]domain.Event, error){
	service.CmdRegister: func(s service.Service) ([]domain.Event, error) {
		return s.Register(service.Register{ServiceID: id, TenantID: "tenant-1", Name: "db", TemplateName: "postgres",
			TemplateVersion: "1.2.0", ResourceIDs: []string{"res-1"}, At: at(20)})
	},
	service.CmdCompleteRegistration: func(s service.Service) ([]domain.Event, error) {
		return s.CompleteRegistration(service.CompleteRegistration{ServiceID: id, Outputs: json.RawMessage(`{"a":1}`), At: at(20)})
	},
	service.CmdFailRegistration: func(s service.Service) ([]domain.Event, error) {
		return s.FailRegistration(service.FailRegistration{ServiceID: id, Cause: "boom", At: at(20)})
	},
	service.CmdCompleteRollback: func(s service.Service) ([]domain.Event, error) {
		return s.CompleteRollback(service.CompleteRollback{ServiceID: id, At: at(20)})
	},
	service.CmdFailRollback: func(s service.Service) ([]domain.Event, error) {
		return s.FailRollback(service.FailRollback{ServiceID: id, Remaining: []string{"res-1"}, Cause: "boom", At: at(20)})
	},
	service.CmdStart: func(s service.Service) ([]domain.Event, error) {
		return s.Start(service.Start{ServiceID: id, At: at(20)})
	},
	service.CmdCompleteStart: func(s service.Service) ([]domain.Event, error) {
		return s.CompleteStart(service.CompleteStart{ServiceID: id, At: at(20)})
	},
	service.CmdFailStart: func(s service.Service) ([]domain.Event, error) {
		return s.FailStart(service.FailStart{ServiceID: id, Cause: "boom", At: at(20)})
	},
	service.CmdStop: func(s service.Service) ([]domain.Event, error) {
		return s.Stop(service.Stop{ServiceID: id, At: at(20)})
	},
	service.CmdCompleteStop: func(s service.Service) ([]domain.Event, error) {
		return s.CompleteStop(service.CompleteStop{ServiceID: id, At: at(20)})
	},
	service.CmdFailStop: func(s service.Service) ([]domain.Event, error) {
		return s.FailStop(service.FailStop{ServiceID: id, Cause: "boom", At: at(20)})
	},
	service.CmdRemove: func(s service.Service) ([]domain.Event, error) {
		return s.Remove(service.Remove{ServiceID: id, At: at(20)})
	},
	service.CmdCompleteRemoval: func(s service.Service) ([]domain.Event, error) {
		return s.CompleteRemoval(service.CompleteRemoval{ServiceID: id, At: at(20)})
	},
	service.CmdFailRemoval: func(s service.Service) ([]domain.Event, error) {
		return s.FailRemoval(service.FailRemoval{ServiceID: id, Remaining: []string{"res-2"}, Cause: "boom", At: at(20)})
	},
	service.CmdMarkCleanedUp: func(s service.Service) ([]domain.Event, error) {
		return s.MarkCleanedUp(service.MarkCleanedUp{ServiceID: id, At: at(20)})
	},
	service.CmdRetry: func(s service.Service) ([]domain.Event, error) {
		return s.Retry(service.Retry{ServiceID: id, At: at(20)})
	},
	service.CmdRequestRepair: func(s service.Service) ([]domain.Event, error) {
		return s.RequestRepair(service.RequestRepair{ServiceID: id, Resources: []string{"res-1"}, Reason: "res-1 missing", At: at(20)})
	},
	service.CmdCompleteRepair: func(s service.Service) ([]domain.Event, error) {
		return s.CompleteRepair(id, nil, at(20))
	},
	service.CmdFailRepair: func(s service.Service) ([]domain.Event, error) {
		return s.FailRepair(service.FailRepair{ServiceID: id, Cause: "boom", MaxFailures: 3, Window: time.Hour, At: at(20)})
	},
	service.CmdUpdate: func(s service.Service) ([]domain.Event, error) {
		return s.Update(service.Update{ServiceID: id, TemplateVersion: "1.3.0", ResourceIDs: []string{"res-1"}, At: at(20)})
	},
	service.CmdCompleteUpdate: func(s service.Service) ([]domain.Event, error) {
		return s.CompleteUpdate(id, nil, at(20))
	},
	service.CmdFailUpdate: func(s service.Service) ([]domain.Event, error) {
		return s.FailUpdate(id, "boom", at(20))
	},
	service.CmdCompleteRevert: func(s service.Service) ([]domain.Event, error) {
		return s.CompleteRevert(id, nil, at(20))
	},
	service.CmdFailRevert: func(s service.Service) ([]domain.Event, error) {
		return s.FailRevert(id, "boom", at(20))
	},
}

// next gives the status after each allowed command, by situation.
var next = map[string]map[string]service.Status{
	"registering": {service.CmdCompleteRegistration: service.StatusRegistered, service.CmdFailRegistration: service.StatusRollingBack},
	"registered": {service.CmdStart: service.StatusStarting, service.CmdRemove: service.StatusRemoving, service.CmdRequestRepair: service.StatusRepairing,
		service.CmdUpdate: service.StatusUpdating},
	"starting": {service.CmdCompleteStart: service.StatusRunning, service.CmdFailStart: service.StatusFailed},
	"running":  {service.CmdStop: service.StatusStopping, service.CmdRequestRepair: service.StatusRepairing, service.CmdUpdate: service.StatusUpdating},
	"stopping": {service.CmdCompleteStop: service.StatusStopped, service.CmdFailStop: service.StatusFailed},
	"stopped": {service.CmdStart: service.StatusStarting, service.CmdRemove: service.StatusRemoving, service.CmdRequestRepair: service.StatusRepairing,
		service.CmdUpdate: service.StatusUpdating},
	"updating":         {service.CmdCompleteUpdate: service.StatusRunning, service.CmdFailUpdate: service.StatusReverting},
	"reverting":        {service.CmdCompleteRevert: service.StatusRunning, service.CmdFailRevert: service.StatusFailed},
	"failed in update": {service.CmdUpdate: service.StatusUpdating, service.CmdStop: service.StatusStopping, service.CmdRemove: service.StatusRemoving},
	"removing": {service.CmdCompleteRemoval: service.StatusRemoved,
		service.CmdFailRemoval: service.StatusManualCleanupRequired},
	"removed":            {},
	"failed in register": {service.CmdRetry: service.StatusRegistering, service.CmdRemove: service.StatusRemoving},
	"failed in start": {service.CmdStart: service.StatusStarting, service.CmdStop: service.StatusStopping,
		service.CmdRemove: service.StatusRemoving},
	"failed in stop": {service.CmdStart: service.StatusStarting, service.CmdStop: service.StatusStopping,
		service.CmdRemove: service.StatusRemoving},
	"rolling_back":            {service.CmdCompleteRollback: service.StatusFailed, service.CmdFailRollback: service.StatusRollbackFailed},
	"rollback_failed":         {service.CmdRemove: service.StatusRemoving, service.CmdMarkCleanedUp: service.StatusRemoved},
	"manual_cleanup_required": {service.CmdRemove: service.StatusRemoving, service.CmdMarkCleanedUp: service.StatusRemoved},
	// One failure of three allowed: back to running.
	"repairing": {service.CmdCompleteRepair: service.StatusRunning, service.CmdFailRepair: service.StatusRunning},
	"degraded":  {service.CmdRetry: service.StatusRunning, service.CmdStop: service.StatusStopping, service.CmdRemove: service.StatusRemoving},
}

func TestEveryStatusAndCommand(t *testing.T) {
	t.Parallel()
	covered := map[service.Status]bool{}
	for _, sit := range situations {
		s := fold(sit.history...)
		if s.Status != sit.status {
			t.Fatalf("history for %s folds to %s", sit.name, s.Status)
		}
		covered[s.Status] = true
		for _, cmd := range service.Commands {
			t.Run(sit.name+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				es, err := commands[cmd](s)
				want, expected := next[sit.name][cmd]
				allowed := slices.Contains(service.AllowedCommands(s.Status, s.FailedIn), cmd)
				if allowed != expected || allowed != slices.Contains(s.AllowedCommands(), cmd) {
					t.Fatalf("table allows=%v but test expects a transition=%v", allowed, expected)
				}
				if !allowed {
					var se *domain.StateError
					if !errors.As(err, &se) || se.Command != cmd || se.State != sit.state || se.Entity != "service" ||
						se.ID != id || !errors.Is(err, domain.ErrConflict) {
						t.Fatalf("want state error for %s in %s, got %v", cmd, sit.state, err)
					}
					return
				}
				if err != nil || len(es) == 0 {
					t.Fatalf("allowed command: %v %v", es, err)
				}
				if got := apply(s, es).Status; got != want {
					t.Fatalf("status after %s = %s, want %s", cmd, got, want)
				}
			})
		}
	}
	for _, status := range service.Statuses {
		if !covered[status] {
			t.Errorf("no situation in status %s", status)
		}
	}
}

func TestCommandsOnMissingService(t *testing.T) {
	t.Parallel()
	for cmd, run := range commands {
		if cmd == service.CmdRegister {
			continue
		}
		_, err := run(service.Service{})
		var nf *domain.NotFoundError
		if !errors.As(err, &nf) || nf.ID != id || !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s on a missing service: %v", cmd, err)
		}
	}
	es, err := commands[service.CmdRegister](service.Service{})
	if err != nil || fold(es...).Status != service.StatusRegistering {
		t.Fatalf("register: %v %v", es, err)
	}
}

func TestFailureKeepsItsCause(t *testing.T) {
	t.Parallel()
	s := fold(requested, regFailed, rolledBack)
	if s.Cause != "quota exceeded" || s.FailedIn != service.PhaseRegister {
		t.Fatalf("after rollback: %+v", s)
	}
	s = fold(requested, registered, startAsked, startFailed)
	if s.Cause != "port in use" || s.FailedIn != service.PhaseStart || string(s.Outputs) != `{"host":"10.0.0.7"}` {
		t.Fatalf("after failed start: %+v", s)
	}
	s.Apply(service.StartRequested{ServiceID: id, At: at(9)})
	if s.Cause != "" || s.FailedIn != "" {
		t.Fatalf("retrying start kept the failure: %+v", s)
	}
	s = fold(requested, regFailed, rollbackFailed)
	if !slices.Equal(s.Remaining, []string{"res-1"}) {
		t.Fatalf("remaining = %v", s.Remaining)
	}
	s.Apply(cleanedUp)
	if s.Status != service.StatusRemoved || s.Remaining != nil {
		t.Fatalf("after cleanup: %+v", s)
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	validRegister := func() service.Register {
		return service.Register{ServiceID: id, TenantID: "tenant-1", Name: "db", TemplateName: "postgres",
			TemplateVersion: "1.2.0", Variables: json.RawMessage(`{}`), ResourceIDs: []string{"res-1"}, At: at(0)}
	}
	registerCases := []struct {
		field  string
		change func(*service.Register)
	}{
		{"serviceId", func(c *service.Register) { c.ServiceID = "" }},
		{"tenantId", func(c *service.Register) { c.TenantID = "a b" }},
		{"name", func(c *service.Register) { c.Name = "" }},
		{"name", func(c *service.Register) { c.Name = " db" }},
		{"name", func(c *service.Register) { c.Name = "a\nb" }},
		{"name", func(c *service.Register) { c.Name = strings.Repeat("n", service.MaxNameLength+1) }},
		{"templateName", func(c *service.Register) { c.TemplateName = "Postgres" }},
		{"templateVersion", func(c *service.Register) { c.TemplateVersion = "" }},
		{"variables", func(c *service.Register) { c.Variables = json.RawMessage(`[]`) }},
		{"variables", func(c *service.Register) { c.Variables = json.RawMessage(`{`) }},
		{"resourceIds[1]", func(c *service.Register) { c.ResourceIDs = []string{"res-1", "res-1"} }},
		{"resourceIds[0]", func(c *service.Register) { c.ResourceIDs = []string{""} }},
		{"at", func(c *service.Register) { c.At = time.Time{} }},
	}
	for i, c := range registerCases {
		cmd := validRegister()
		c.change(&cmd)
		_, err := service.Service{}.Register(cmd)
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("register case %d: want validation error on %s, got %v", i, c.field, err)
		}
	}
	rollingBack := fold(requested, regFailed)
	removing := fold(requested, registered, removalAsked)
	registering := fold(requested)
	starting := fold(requested, registered, startAsked)
	other := []struct {
		name  string
		field string
		run   func() ([]domain.Event, error)
	}{
		{"nothing remaining", "remaining", func() ([]domain.Event, error) {
			return rollingBack.FailRollback(service.FailRollback{ServiceID: id, Cause: "x", At: at(9)})
		}},
		{"remaining not ours", "remaining[0]", func() ([]domain.Event, error) {
			return removing.FailRemoval(service.FailRemoval{ServiceID: id, Remaining: []string{"res-9"}, Cause: "x", At: at(9)})
		}},
		{"remaining twice", "remaining[1]", func() ([]domain.Event, error) {
			return removing.FailRemoval(service.FailRemoval{ServiceID: id, Remaining: []string{"res-1", "res-1"}, Cause: "x", At: at(9)})
		}},
		{"no cause", "cause", func() ([]domain.Event, error) {
			return registering.FailRegistration(service.FailRegistration{ServiceID: id, At: at(9)})
		}},
		{"no cause for start", "cause", func() ([]domain.Event, error) {
			return starting.FailStart(service.FailStart{ServiceID: id, At: at(9)})
		}},
		{"outputs not an object", "outputs", func() ([]domain.Event, error) {
			return starting.CompleteStart(service.CompleteStart{ServiceID: id, Outputs: json.RawMessage(`1`), At: at(9)})
		}},
		{"no time", "at", func() ([]domain.Event, error) {
			return registering.CompleteRegistration(service.CompleteRegistration{ServiceID: id})
		}},
		{"another service", "serviceId", func() ([]domain.Event, error) {
			return registering.CompleteRegistration(service.CompleteRegistration{ServiceID: "svc-2", At: at(9)})
		}},
		{"long note", "note", func() ([]domain.Event, error) {
			return fold(rollbackFailedHistory()...).MarkCleanedUp(service.MarkCleanedUp{ServiceID: id,
				Note: strings.Repeat("n", service.MaxNoteLength+1), At: at(9)})
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

func rollbackFailedHistory() []domain.Event {
	return []domain.Event{requested, regFailed, rollbackFailed}
}

func TestEventsRoundTrip(t *testing.T) {
	t.Parallel()
	samples := []domain.Event{requested, registered, regFailed, rolledBack, rollbackFailed, startAsked, started,
		startFailed, stopAsked, stopped, stopFailed, removalAsked, removed, removalFailed, cleanedUp, retried,
		repairAsked, repaired, repairFailed, repairRetried, updateAsked, updated, updateFailed, reverted, revertFailed}
	own := domain.NewRegistry()
	service.RegisterEvents(own)
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
		base := fold(requested)
		fromValue, fromPointer := base, base
		fromValue.Apply(e)
		fromPointer.Apply(decoded)
		if !reflect.DeepEqual(fromValue, fromPointer) {
			t.Errorf("%s: Apply(value) = %+v, Apply(decoded pointer) = %+v", typ, fromValue, fromPointer)
		}
		if reflect.DeepEqual(fromValue, base) && typ != requested.EventType() {
			t.Errorf("%s: Apply changed nothing", typ)
		}
	}
}

// Repairs failing MaxFailures times within the window degrade the service;
// a success in between starts the count again, and so does a retry.
func TestRepairsDegrade(t *testing.T) {
	t.Parallel()
	s := fold(requested, registered, startAsked, started)
	fail := func(s service.Service, minute int) service.Service {
		t.Helper()
		asked, err := s.RequestRepair(service.RequestRepair{ServiceID: id, Resources: []string{"res-2"}, Reason: "res-2 missing", At: at(minute)})
		if err != nil {
			t.Fatal(err)
		}
		s = apply(s, asked)
		evs, err := s.FailRepair(service.FailRepair{ServiceID: id, Cause: "plugin down", MaxFailures: 3, Window: 10 * time.Minute, At: at(minute + 1)})
		if err != nil {
			t.Fatal(err)
		}
		return apply(s, evs)
	}
	s = fail(s, 20)
	s = fail(s, 40) // the first is out of the window
	if s.Status != service.StatusRunning {
		t.Fatalf("after two failures 20 minutes apart: %s", s.Status)
	}
	s = fail(s, 45)
	if s.Status != service.StatusRunning {
		t.Fatalf("after two failures in the window: %s", s.Status)
	}
	s = fail(s, 48)
	if s.Status != service.StatusDegraded || s.Cause != "plugin down" {
		t.Fatalf("after three failures in the window: %s (%q)", s.Status, s.Cause)
	}
	if _, err := s.RequestRepair(service.RequestRepair{ServiceID: id, Resources: []string{"res-2"}, Reason: "x", At: at(50)}); err == nil {
		t.Fatal("a degraded service took a repair without a retry")
	}
	retry, err := s.Retry(service.Retry{ServiceID: id, At: at(51)})
	if err != nil {
		t.Fatal(err)
	}
	s = apply(s, retry)
	if s.Status != service.StatusRunning || len(s.RepairFailures) != 0 {
		t.Fatalf("after retry: %s, failures %v", s.Status, s.RepairFailures)
	}
	if _, err := s.RequestRepair(service.RequestRepair{ServiceID: id, Resources: []string{"res-9"}, Reason: "x", At: at(52)}); err == nil {
		t.Fatal("a repair of another service's resource was accepted")
	}
}

// An update declares the new revision; a failure declares the old one
// again while reverting, and the revert leaves the service where it was,
// at the old revision, with the cause. The next update gets a new number.
func TestUpdateRevisions(t *testing.T) {
	t.Parallel()
	s := fold(requested, registered, startAsked, started)
	if s.Revision != 1 {
		t.Fatalf("registered at revision %d", s.Revision)
	}
	s = apply(s, []domain.Event{updateAsked})
	if s.Revision != 2 || s.TemplateVersion != "1.3.0" || s.Leaving == nil || s.Leaving.Number != 1 {
		t.Fatalf("updating: %+v", s)
	}
	s = apply(s, []domain.Event{updateFailed})
	if s.Status != service.StatusReverting || s.Revision != 1 || s.TemplateVersion != "1.2.0" || s.Leaving.Number != 2 ||
		!slices.Equal(s.ResourceIDs, rev1.ResourceIDs) {
		t.Fatalf("reverting: %+v", s)
	}
	s = apply(s, []domain.Event{reverted})
	if s.Status != service.StatusRunning || s.Revision != 1 || s.Cause != "plugin refused" || s.Leaving != nil {
		t.Fatalf("reverted: %+v", s)
	}
	evs, err := s.Update(service.Update{ServiceID: id, TemplateVersion: "1.3.0", ResourceIDs: []string{"res-1"}, At: at(30)})
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[0].(service.UpdateRequested); got.Revision.Number != 3 || got.From.Number != 1 || got.Status != service.StatusRunning {
		t.Fatalf("next update: %+v", got)
	}
	s = apply(s, evs)
	s = apply(s, []domain.Event{service.Updated{ServiceID: id, Revision: 3, To: service.StatusRunning, At: at(31)}})
	if s.Status != service.StatusRunning || s.Revision != 3 || s.Cause != "" {
		t.Fatalf("updated: %+v", s)
	}
}
