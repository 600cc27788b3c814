package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/commandstest"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/eventstore"
	"cairn/internal/testdb"
	"cairn/sal/catalog"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

type fixture struct {
	s      *eventstore.Store
	h      *jobs.Handlers
	nodes  *nodes.Handlers
	prefix string
}

func (f fixture) id(name string) string { return f.prefix + name }

// newFixture's clock moves a millisecond each time it is read, so a lease
// of a millisecond has run out by the next command.
func newFixture(t *testing.T) fixture {
	t.Helper()
	s := commandstest.NewStore(t)
	var ticks atomic.Int64
	clock := func() time.Time { return t0.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	return fixture{s: s, h: jobs.NewHandlers(s, clock, commandstest.IDs("job"), v, commandstest.Sealer()), nodes: nodes.NewHandlers(s, clock, commandstest.IDs("node"))}
}

var echo = job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"echo", "hi"}}}

// seed gives a case nodes n1 (online, labelled role=web), n2 (online) and
// gone (decommissioned), a queued job j1 on n1 with one retry, a queued job
// j2 on n2, and a queued fan-out jf on role=web.
func seed(t *testing.T, f fixture, prefix string) fixture {
	t.Helper()
	ctx := context.Background()
	f.prefix = prefix
	m := commands.Meta{Actor: "user:op"}
	for _, n := range []string{"n1", "n2", "gone"} {
		step(t)(f.nodes.Enroll(ctx, m, nodes.Enroll{NodeID: f.id(n), Hostname: n, Labels: map[string]string{"role": "web"}}))
		step(t)(f.nodes.Connect(ctx, m, nodes.Connect{NodeID: f.id(n)}))
	}
	step(t)(f.nodes.Decommission(ctx, m, nodes.Decommission{NodeID: f.id("gone")}))
	step(t)(f.h.Submit(ctx, m, jobs.Submit{JobID: f.id("j1"), Spec: echo, Target: job.Target{NodeID: f.id("n1")}, Retry: job.RetryPolicy{Max: 1}}))
	step(t)(f.h.Submit(ctx, m, jobs.Submit{JobID: f.id("j2"), Spec: echo, Target: job.Target{NodeID: f.id("n2")}}))
	step(t)(f.h.Submit(ctx, m, jobs.Submit{JobID: f.id("jf"), Spec: echo, Target: job.Target{Selector: map[string]string{"role": "web"}, Mode: job.ModeAll}}))
	return f
}

func step(t *testing.T) func(commands.Outcome, error) {
	return func(_ commands.Outcome, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

type run func(f fixture, m commands.Meta) (commands.Outcome, error)

func TestHandlers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m0 := commands.Meta{Actor: "user:op"}
	submit := func(in jobs.Submit) run {
		return func(f fixture, m commands.Meta) (commands.Outcome, error) {
			c := in // each run names its own case's entities
			if c.Target.NodeID != "" {
				c.Target.NodeID = f.id(c.Target.NodeID)
			}
			if c.JobID != "" {
				c.JobID = f.id(c.JobID)
			}
			return f.h.Submit(ctx, m, c)
		}
	}
	action := func(name, args string) job.Spec {
		return job.Spec{Kind: job.KindAction, Action: name, Args: json.RawMessage(args)}
	}
	on := func(n string) job.Target { return job.Target{NodeID: n} }
	lease := func(j, n string, d time.Duration) func(f fixture) {
		return func(f fixture) { step(t)(f.h.Lease(ctx, m0, jobs.Lease{JobID: f.id(j), NodeID: f.id(n), Duration: d})) }
	}
	start := func(f fixture) {
		lease("j1", "n1", 0)(f)
		step(t)(f.h.Start(ctx, m0, jobs.Start{JobID: f.id("j1"), NodeID: f.id("n1")}))
	}
	failed := func(f fixture) {
		start(f)
		step(t)(f.h.Finish(ctx, m0, jobs.Finish{JobID: f.id("j1"), NodeID: f.id("n1"), Outcome: job.StatusFailed, Result: job.Result{ExitCode: 1}}))
	}
	spawned := func(f fixture) {
		step(t)(f.h.SpawnChildren(ctx, m0, jobs.SpawnChildren{JobID: f.id("jf"), ChildIDs: []string{f.id("c1"), f.id("c2")}}))
	}
	cases := []struct {
		name  string
		prep  func(f fixture)
		run   run
		want  error
		job   string // the job a successful command changed ("" for a new one)
		event string
	}{
		{"submit an action", nil, submit(jobs.Submit{Spec: action(catalog.ActionFileStat, `{"path":"/etc/hosts"}`), Target: on("n1")}), nil, "", "job.submitted"},
		{"submit a command", nil, submit(jobs.Submit{JobID: "new", Spec: echo, Target: on("n1"), Queue: "apt"}), nil, "new", "job.submitted"},
		{"submit a script to any web node", nil, submit(jobs.Submit{Spec: job.Spec{Kind: job.KindScript, Script: &job.Script{Interpreter: "sh", Body: "uptime"}},
			Target: job.Target{Selector: map[string]string{"role": "web"}, Mode: job.ModeAny}}), nil, "", "job.submitted"},
		{"submit an unknown action", nil, submit(jobs.Submit{Spec: action("sal.nope", `{}`), Target: on("n1")}), domain.ErrInvalid, "", ""},
		{"submit an exec job as an action", nil, submit(jobs.Submit{Spec: action("exec", `{"argv":["ls"]}`), Target: on("n1")}), domain.ErrInvalid, "", ""},
		{"submit bad arguments", nil, submit(jobs.Submit{Spec: action(catalog.ActionNetTCP, `{"host":"x","port":70000}`), Target: on("n1")}), domain.ErrInvalid, "", ""},
		{"submit an unknown interpreter", nil, submit(jobs.Submit{Spec: job.Spec{Kind: job.KindScript, Script: &job.Script{Interpreter: "perl", Body: "1"}}, Target: on("n1")}), domain.ErrInvalid, "", ""},
		{"submit a command with a bad variable", nil, submit(jobs.Submit{Spec: job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"env"}, Env: map[string]string{"A=B": "c"}}}, Target: on("n1")}), domain.ErrInvalid, "", ""},
		{"submit a command without a program", nil, submit(jobs.Submit{Spec: job.Spec{Kind: job.KindExec, Exec: &job.Exec{}}, Target: on("n1")}), domain.ErrInvalid, "", ""},
		{"submit to an unknown node", nil, submit(jobs.Submit{Spec: echo, Target: on("nx")}), domain.ErrNotFound, "", ""},
		{"submit to a decommissioned node", nil, submit(jobs.Submit{Spec: echo, Target: on("gone")}), domain.ErrConflict, "", ""},
		{"submit with a bad selector", nil, submit(jobs.Submit{Spec: echo, Target: job.Target{Selector: map[string]string{"Role": "web"}, Mode: job.ModeAny}}), domain.ErrInvalid, "", ""},
		{"submit an existing job id", nil, submit(jobs.Submit{JobID: "j1", Spec: echo, Target: on("n1")}), domain.ErrConflict, "", ""},
		{"submit with a week-long timeout", nil, submit(jobs.Submit{Spec: echo, Target: on("n1"), Timeout: 8 * 24 * time.Hour}), domain.ErrInvalid, "", ""},
		{"submit without a submitter", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			m.Actor = ""
			return f.h.Submit(ctx, m, jobs.Submit{Spec: echo, Target: job.Target{NodeID: f.id("n1")}})
		}, domain.ErrInvalid, "", ""},
		{"cancel a queued job", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Cancel(ctx, m, jobs.Cancel{JobID: f.id("j1"), Reason: "typo"})
		}, nil, "j1", "job.cancelled"},
		{"cancel a running job", start, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Cancel(ctx, m, jobs.Cancel{JobID: f.id("j1")})
		}, nil, "j1", "job.cancel_requested"},
		{"cancel a failed job", failed, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Cancel(ctx, m, jobs.Cancel{JobID: f.id("j1")})
		}, domain.ErrConflict, "", ""},
		{"cancel an unknown job", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Cancel(ctx, m, jobs.Cancel{JobID: f.id("jx")})
		}, domain.ErrNotFound, "", ""},
		{"cancel without a job id", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Cancel(ctx, m, jobs.Cancel{})
		}, domain.ErrInvalid, "", ""},
		{"lease", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Lease(ctx, m, jobs.Lease{JobID: f.id("j1"), NodeID: f.id("n1")})
		}, nil, "j1", "job.leased"},
		{"lease a pinned job to another node", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Lease(ctx, m, jobs.Lease{JobID: f.id("j1"), NodeID: f.id("n2")})
		}, domain.ErrInvalid, "", ""},
		{"lease a fan-out", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Lease(ctx, m, jobs.Lease{JobID: f.id("jf"), NodeID: f.id("n1")})
		}, domain.ErrInvalid, "", ""},
		{"acknowledge", lease("j1", "n1", 0), func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Acknowledge(ctx, m, jobs.Acknowledge{JobID: f.id("j1"), NodeID: f.id("n1")})
		}, nil, "j1", "job.acknowledged"},
		{"acknowledge from another node", lease("j1", "n1", 0), func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Acknowledge(ctx, m, jobs.Acknowledge{JobID: f.id("j1"), NodeID: f.id("n2")})
		}, domain.ErrConflict, "", ""},
		{"start", lease("j1", "n1", 0), func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Start(ctx, m, jobs.Start{JobID: f.id("j1"), NodeID: f.id("n1")})
		}, nil, "j1", "job.started"},
		{"start a queued job", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Start(ctx, m, jobs.Start{JobID: f.id("j1"), NodeID: f.id("n1")})
		}, domain.ErrConflict, "", ""},
		{"finish", start, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Finish(ctx, m, jobs.Finish{JobID: f.id("j1"), NodeID: f.id("n1"), Outcome: job.StatusSucceeded, Result: job.Result{Output: json.RawMessage(`{"ok":true}`)}})
		}, nil, "j1", "job.finished"},
		{"finish from another node", start, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Finish(ctx, m, jobs.Finish{JobID: f.id("j1"), NodeID: f.id("n2"), Outcome: job.StatusSucceeded})
		}, domain.ErrConflict, "", ""},
		{"finish with a bad outcome", start, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Finish(ctx, m, jobs.Finish{JobID: f.id("j1"), NodeID: f.id("n1"), Outcome: "great"})
		}, domain.ErrInvalid, "", ""},
		{"expire a lease", lease("j1", "n1", time.Millisecond), func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.ExpireLease(ctx, m, jobs.ExpireLease{JobID: f.id("j1")})
		}, nil, "j1", "job.lease_expired"},
		{"expire a lease on a node that is gone", func(f fixture) {
			lease("j2", "n2", time.Millisecond)(f)
			step(t)(f.nodes.Decommission(ctx, m0, nodes.Decommission{NodeID: f.id("n2")}))
		}, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.ExpireLease(ctx, m, jobs.ExpireLease{JobID: f.id("j2")})
		}, nil, "j2", "job.lost"},
		{"expire a lease that runs", lease("j1", "n1", time.Hour), func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.ExpireLease(ctx, m, jobs.ExpireLease{JobID: f.id("j1")})
		}, domain.ErrInvalid, "", ""},
		{"mark lost", start, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.MarkLost(ctx, m, jobs.MarkLost{JobID: f.id("j1"), Reason: "node burnt"})
		}, nil, "j1", "job.lost"},
		{"mark a queued job lost", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.MarkLost(ctx, m, jobs.MarkLost{JobID: f.id("j1"), Reason: "x"})
		}, domain.ErrConflict, "", ""},
		{"mark lost without a reason", start, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.MarkLost(ctx, m, jobs.MarkLost{JobID: f.id("j1")})
		}, domain.ErrInvalid, "", ""},
		{"retry", failed, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Retry(ctx, m, jobs.Retry{JobID: f.id("j1")})
		}, nil, "j1", "job.retry_scheduled"},
		{"retry past the limit", func(f fixture) {
			failed(f)
			step(t)(f.h.Retry(ctx, m0, jobs.Retry{JobID: f.id("j1")}))
			step(t)(f.h.Lease(ctx, m0, jobs.Lease{JobID: f.id("j1"), NodeID: f.id("n1")}))
			step(t)(f.h.Start(ctx, m0, jobs.Start{JobID: f.id("j1"), NodeID: f.id("n1")}))
			step(t)(f.h.Finish(ctx, m0, jobs.Finish{JobID: f.id("j1"), NodeID: f.id("n1"), Outcome: job.StatusTimedOut}))
		}, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Retry(ctx, m, jobs.Retry{JobID: f.id("j1")})
		}, domain.ErrConflict, "", ""},
		{"retry a queued job", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Retry(ctx, m, jobs.Retry{JobID: f.id("j1")})
		}, domain.ErrConflict, "", ""},
		{"spawn children", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.SpawnChildren(ctx, m, jobs.SpawnChildren{JobID: f.id("jf"), ChildIDs: []string{f.id("c1")}})
		}, nil, "jf", "job.children_spawned"},
		{"spawn children of a one-node job", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.SpawnChildren(ctx, m, jobs.SpawnChildren{JobID: f.id("j1"), ChildIDs: []string{f.id("c1")}})
		}, domain.ErrInvalid, "", ""},
		{"complete a fan-out", spawned, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CompleteFanOut(ctx, m, jobs.CompleteFanOut{JobID: f.id("jf"), Counts: job.FanOutCounts{Succeeded: 2}})
		}, nil, "jf", "job.fan_out_completed"},
		{"complete a fan-out with a wrong tally", spawned, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CompleteFanOut(ctx, m, jobs.CompleteFanOut{JobID: f.id("jf"), Counts: job.FanOutCounts{Succeeded: 3}})
		}, domain.ErrInvalid, "", ""},
		{"complete a queued fan-out", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.CompleteFanOut(ctx, m, jobs.CompleteFanOut{JobID: f.id("jf")})
		}, domain.ErrConflict, "", ""},
	}
	shared := newFixture(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := seed(t, shared, fmt.Sprintf("c%d.", i))
			if c.prep != nil {
				c.prep(f)
			}
			corr := "corr-" + c.name
			meta := commands.Meta{CommandID: "cmd-" + c.name, Actor: "user:op", CorrelationID: corr}
			out, err := c.run(f, meta)
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Fatalf("want %v, got %v", c.want, err)
				}
				if n := commandstest.CountCorrelated(t, f.s, corr); n != 0 {
					t.Fatalf("a refused command appended %d events", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.job != "" && out.ID != f.id(c.job) {
				t.Fatalf("changed job %q, want %q", out.ID, f.id(c.job))
			}
			evs := commandstest.Stream(t, f.s, domain.StreamID(domain.JobStream, out.ID))
			last := evs[len(evs)-1]
			if last.Type != c.event || last.Metadata.Actor != "user:op" || last.Metadata.CorrelationID != corr ||
				out.Version != last.Version || out.Cursor != last.Cursor() || out.Duplicate {
				t.Fatalf("outcome %+v; last event %s v%d by %q", out, last.Type, last.Version, last.Metadata.Actor)
			}
			n := commandstest.CountCorrelated(t, f.s, corr)
			again, err := c.run(f, meta)
			if err != nil || !again.Duplicate || again.Cursor != out.Cursor || again.ID != out.ID || again.Version != out.Version {
				t.Fatalf("retry: %+v %v (first %+v)", again, err, out)
			}
			if commandstest.CountCorrelated(t, f.s, corr) != n {
				t.Fatal("a retry appended events")
			}
		})
	}
}

// A submission takes the defaults, and a second one under the same job id is
// refused as a duplicate: the job does not run twice.
func TestSubmitDefaultsAndDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seed(t, newFixture(t), "")
	j, _, err := commands.Load[job.Job](ctx, f.s, domain.JobStream, "j2")
	if err != nil || j.Timeout != 10*time.Minute || j.Grace != 10*time.Second || j.Retries.Max != 0 || j.Submitter != "user:op" {
		t.Fatalf("defaults: %+v %v", j, err)
	}
	_, err = f.h.Submit(ctx, commands.Meta{Actor: "user:op"}, jobs.Submit{JobID: "j2", Spec: echo, Target: job.Target{NodeID: "n2"}})
	var dup *jobs.DuplicateJobError
	if !errors.As(err, &dup) || dup.JobID != "j2" || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("duplicate: %v", err)
	}
	var ve *domain.ValidationError
	_, err = f.h.Submit(ctx, commands.Meta{Actor: "user:op"}, jobs.Submit{Spec: job.Spec{Kind: job.KindAction, Action: catalog.ActionNetTCP, Args: json.RawMessage(`{"host":"x"}`)}, Target: job.Target{NodeID: "n1"}})
	if !errors.As(err, &ve) || ve.Field != "spec.args" {
		t.Fatalf("missing port: %v", err)
	}
}
