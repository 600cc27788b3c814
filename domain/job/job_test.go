package job_test

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
	"cairn/domain/job"
)

const (
	id     = "job-1"
	nodeID = "node-1"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

func fold(es ...domain.Event) job.Job {
	var j job.Job
	for _, e := range es {
		j.Apply(e)
	}
	return j
}

func apply(j job.Job, es []domain.Event) job.Job {
	for _, e := range es {
		j.Apply(e)
	}
	return j
}

var (
	execSpec = job.Spec{Kind: job.KindExec, Exec: &job.Exec{
		Argv: []string{"uptime"}, Env: map[string]string{"LC_ALL": "C"}, Stdin: "x", Workdir: "/tmp",
	}}
	submitted = job.Submitted{
		JobID: id, Spec: execSpec, Target: job.Target{NodeID: nodeID},
		Timeout: time.Minute, Grace: 5 * time.Second, Retry: job.RetryPolicy{Max: 2, Backoff: 10 * time.Second},
		Queue: "default", Submitter: "user-1", At: at(0),
	}
	fanOutSubmitted = job.Submitted{
		JobID: id, Spec: job.Spec{Kind: job.KindAction, Action: "system.info", Args: json.RawMessage(`{"detail":true}`)},
		Target:  job.Target{Selector: map[string]string{"role": "db"}, Mode: job.ModeAll, MaxParallel: 10},
		Timeout: time.Minute, Submitter: "user-1", At: at(0),
	}
	leased    = job.Leased{JobID: id, NodeID: nodeID, Attempt: 1, LeaseUntil: at(3), At: at(1)}
	started   = job.Started{JobID: id, NodeID: nodeID, At: at(2)}
	cancelAsk = job.CancelRequested{JobID: id, Reason: "wrong node", At: at(3)}
	result    = job.Result{ExitCode: 1, Output: json.RawMessage(`{"lines":3}`), Error: "exit status 1", CPUTimeMS: 12, PeakMemoryBytes: 4096}
	finished  = func(outcome job.Status) job.Finished {
		return job.Finished{JobID: id, NodeID: nodeID, Attempt: 1, Outcome: outcome, Result: result, At: at(4)}
	}
	lost     = job.Lost{JobID: id, NodeID: nodeID, Attempt: 1, Reason: "node down", At: at(4)}
	spawned  = job.ChildrenSpawned{JobID: id, ChildIDs: []string{"job-1.a", "job-1.b"}, At: at(1)}
	fanOutOK = job.FanOutCompleted{JobID: id, Counts: job.FanOutCounts{Succeeded: 2}, Outcome: job.StatusSucceeded, At: at(5)}
)

// histories reach each status a job of each kind can be in.
var histories = map[bool]map[job.Status][]domain.Event{
	false: { // runs on one node
		job.StatusQueued:     {submitted},
		job.StatusDispatched: {submitted, leased},
		job.StatusRunning:    {submitted, leased, started},
		job.StatusCancelling: {submitted, leased, started, cancelAsk},
		job.StatusSucceeded:  {submitted, leased, started, finished(job.StatusSucceeded)},
		job.StatusFailed:     {submitted, leased, started, finished(job.StatusFailed)},
		job.StatusTimedOut:   {submitted, leased, started, finished(job.StatusTimedOut)},
		job.StatusCancelled:  {submitted, job.Cancelled{JobID: id, At: at(1)}},
		job.StatusLost:       {submitted, leased, started, lost},
	},
	true: { // fan-out; it is never dispatched, timed out or lost itself
		job.StatusQueued:     {fanOutSubmitted},
		job.StatusRunning:    {fanOutSubmitted, spawned},
		job.StatusCancelling: {fanOutSubmitted, spawned, cancelAsk},
		job.StatusSucceeded:  {fanOutSubmitted, spawned, fanOutOK},
		job.StatusFailed: {fanOutSubmitted, spawned, job.FanOutCompleted{
			JobID: id, Counts: job.FanOutCounts{Succeeded: 1, Failed: 1}, Outcome: job.StatusFailed, At: at(5)}},
		job.StatusCancelled: {fanOutSubmitted, job.Cancelled{JobID: id, At: at(1)}},
	},
}

var commands = map[string]func(job.Job) ([]domain.Event, error){
	job.CmdSubmit: func(j job.Job) ([]domain.Event, error) {
		return j.Submit(job.Submit{JobID: id, Spec: execSpec, Target: job.Target{NodeID: nodeID}, Timeout: time.Minute, Submitter: "u", At: at(10)})
	},
	job.CmdLease: func(j job.Job) ([]domain.Event, error) {
		return j.Lease(job.Lease{JobID: id, NodeID: nodeID, LeaseUntil: at(11), At: at(10)})
	},
	job.CmdAcknowledge: func(j job.Job) ([]domain.Event, error) {
		return j.Acknowledge(job.Acknowledge{JobID: id, NodeID: nodeID, At: at(10)})
	},
	job.CmdStart: func(j job.Job) ([]domain.Event, error) {
		return j.Start(job.Start{JobID: id, NodeID: nodeID, At: at(10)})
	},
	job.CmdFinish: func(j job.Job) ([]domain.Event, error) {
		return j.Finish(job.Finish{JobID: id, NodeID: nodeID, Outcome: job.StatusSucceeded, At: at(10)})
	},
	job.CmdExpireLease: func(j job.Job) ([]domain.Event, error) {
		return j.ExpireLease(job.ExpireLease{JobID: id, At: at(10)})
	},
	job.CmdMarkLost: func(j job.Job) ([]domain.Event, error) {
		return j.MarkLost(job.MarkLost{JobID: id, Reason: "node decommissioned", At: at(10)})
	},
	job.CmdCancel: func(j job.Job) ([]domain.Event, error) {
		return j.Cancel(job.Cancel{JobID: id, Reason: "not needed", At: at(10)})
	},
	job.CmdRetry: func(j job.Job) ([]domain.Event, error) {
		return j.Retry(job.Retry{JobID: id, At: at(10)})
	},
	job.CmdSpawnChildren: func(j job.Job) ([]domain.Event, error) {
		return j.SpawnChildren(job.SpawnChildren{JobID: id, ChildIDs: []string{"job-1.a", "job-1.b"}, At: at(10)})
	},
	job.CmdCompleteFanOut: func(j job.Job) ([]domain.Event, error) {
		return j.CompleteFanOut(job.CompleteFanOut{JobID: id, Counts: job.FanOutCounts{Succeeded: 2}, At: at(10)})
	},
}

const noChange job.Status = "(no change)"

// next gives the status after each command the table allows, by kind.
var next = map[bool]map[job.Status]map[string]job.Status{
	false: {
		job.StatusQueued: {job.CmdLease: job.StatusDispatched, job.CmdCancel: job.StatusCancelled},
		job.StatusDispatched: {
			job.CmdAcknowledge: job.StatusDispatched, job.CmdStart: job.StatusRunning,
			job.CmdExpireLease: job.StatusQueued, job.CmdMarkLost: job.StatusLost, job.CmdCancel: job.StatusCancelled,
		},
		job.StatusRunning:    {job.CmdFinish: job.StatusSucceeded, job.CmdMarkLost: job.StatusLost, job.CmdCancel: job.StatusCancelling},
		job.StatusCancelling: {job.CmdFinish: job.StatusSucceeded, job.CmdMarkLost: job.StatusLost, job.CmdCancel: noChange},
		job.StatusSucceeded:  {},
		job.StatusFailed:     {job.CmdRetry: job.StatusQueued},
		job.StatusTimedOut:   {job.CmdRetry: job.StatusQueued},
		job.StatusCancelled:  {},
		job.StatusLost:       {job.CmdRetry: job.StatusQueued},
	},
	true: {
		job.StatusQueued:     {job.CmdSpawnChildren: job.StatusRunning, job.CmdCancel: job.StatusCancelled},
		job.StatusRunning:    {job.CmdCompleteFanOut: job.StatusSucceeded, job.CmdCancel: job.StatusCancelling},
		job.StatusCancelling: {job.CmdCompleteFanOut: job.StatusSucceeded, job.CmdCancel: noChange},
		job.StatusSucceeded:  {},
		job.StatusFailed:     {},
		job.StatusCancelled:  {},
	},
}

func TestEveryStatusAndCommand(t *testing.T) {
	t.Parallel()
	for _, fanOut := range []bool{false, true} {
		kind := map[bool]string{false: "node", true: "fan-out"}[fanOut]
		for _, status := range job.Statuses {
			history, reachable := histories[fanOut][status]
			if !reachable {
				continue
			}
			j := fold(history...)
			if j.Status != status || j.IsFanOut() != fanOut {
				t.Fatalf("%s history for %s folds to %s", kind, status, j.Status)
			}
			for _, cmd := range job.Commands {
				if cmd == job.CmdSubmit {
					continue
				}
				t.Run(kind+"/"+string(status)+"/"+cmd, func(t *testing.T) {
					t.Parallel()
					es, err := commands[cmd](j)
					ownKind := !slices.Contains(map[bool][]string{false: job.FanOutCommands, true: job.NodeCommands}[fanOut], cmd)
					if !ownKind {
						var ve *domain.ValidationError
						if !errors.As(err, &ve) || ve.Field != "jobId" {
							t.Fatalf("want a jobId validation error for the wrong kind of job, got %v", err)
						}
						return
					}
					want, expected := next[fanOut][status][cmd]
					allowed := slices.Contains(job.AllowedCommands(status, fanOut), cmd)
					if allowed != expected || allowed != slices.Contains(j.AllowedCommands(), cmd) {
						t.Fatalf("table allows=%v but test expects a transition=%v", allowed, expected)
					}
					if !allowed {
						assertRefused(t, err, cmd, string(status))
						return
					}
					if err != nil {
						t.Fatalf("allowed command failed: %v", err)
					}
					if want == noChange {
						if len(es) != 0 {
							t.Fatalf("want no events, got %v", es)
						}
						return
					}
					if len(es) == 0 {
						t.Fatal("want events, got none")
					}
					if got := apply(j, es).Status; got != want {
						t.Fatalf("status after %s = %s, want %s", cmd, got, want)
					}
				})
			}
		}
	}
}

func assertRefused(t *testing.T, err error, cmd, state string) {
	t.Helper()
	var se *domain.StateError
	if !errors.As(err, &se) {
		t.Fatalf("want *domain.StateError, got %v", err)
	}
	if se.Command != cmd || se.State != state || se.Entity != "job" || se.ID != id {
		t.Fatalf("state error = %+v, want command %s state %s", se, cmd, state)
	}
	if !errors.Is(err, domain.ErrConflict) {
		t.Fatal("state error is not ErrConflict")
	}
}

func TestDuplicateSubmitIsRefused(t *testing.T) {
	t.Parallel()
	for _, status := range job.Statuses {
		_, err := commands[job.CmdSubmit](fold(histories[false][status]...))
		assertRefused(t, err, job.CmdSubmit, string(status))
	}
}

func TestCommandsOnMissingJob(t *testing.T) {
	t.Parallel()
	for cmd, run := range commands {
		if cmd == job.CmdSubmit {
			continue
		}
		_, err := run(job.Job{})
		var nf *domain.NotFoundError
		if !errors.As(err, &nf) || nf.ID != id || !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s on a missing job: %v", cmd, err)
		}
	}
}

func TestSubmitKeepsTheSpec(t *testing.T) {
	t.Parallel()
	c := job.Submit{
		JobID: id, Spec: job.Spec{Kind: job.KindScript, Script: &job.Script{Interpreter: "python3", Body: "print('<hi>')\n"}},
		Target:  job.Target{Selector: map[string]string{"role": "web"}, Mode: job.ModeAny},
		Timeout: time.Minute, Grace: time.Second, Retry: job.RetryPolicy{Max: 3, Backoff: time.Second},
		Queue: "maintenance", Submitter: "token-9", At: at(0).In(time.FixedZone("CET", 3600)),
	}
	es, err := job.Job{}.Submit(c)
	if err != nil {
		t.Fatal(err)
	}
	j := fold(es...)
	if j.Status != job.StatusQueued || j.ID != id || j.MaxAttempts() != 4 || j.IsFanOut() || j.Terminal() {
		t.Fatalf("submitted job = %+v", j)
	}
	if !j.SubmittedAt.Equal(at(0)) || j.SubmittedAt.Location() != time.UTC {
		t.Fatalf("time not kept in UTC: %v", j.SubmittedAt)
	}
	c.Spec.Script.Body = "changed"
	if j.Spec.Script.Body == "changed" {
		t.Fatal("state shares the command's script")
	}
}

func TestSubmitValidation(t *testing.T) {
	t.Parallel()
	valid := func() job.Submit {
		return job.Submit{JobID: id, Spec: execSpec, Target: job.Target{NodeID: nodeID}, Timeout: time.Minute, Submitter: "u", At: at(0)}
	}
	action := job.Spec{Kind: job.KindAction, Action: "files.write", Args: json.RawMessage(`{}`)}
	script := job.Spec{Kind: job.KindScript, Script: &job.Script{Interpreter: "sh", Body: "true"}}
	cases := []struct {
		field  string
		change func(*job.Submit)
	}{
		{"jobId", func(c *job.Submit) { c.JobID = "" }},
		{"jobId", func(c *job.Submit) { c.JobID = "job 1" }},
		{"parentId", func(c *job.Submit) { c.ParentID = id }},
		{"parentId", func(c *job.Submit) { c.ParentID = "-bad" }},
		{"spec.kind", func(c *job.Submit) { c.Spec = job.Spec{Kind: "binary"} }},
		{"spec.action", func(c *job.Submit) { c.Spec = job.Spec{Kind: job.KindAction} }},
		{"spec.action", func(c *job.Submit) { c.Spec = job.Spec{Kind: job.KindAction, Action: "Files.Write"} }},
		{"spec.args", func(c *job.Submit) { c.Spec = action; c.Spec.Args = json.RawMessage(`{`) }},
		{"spec.args", func(c *job.Submit) {
			c.Spec = action
			c.Spec.Args = json.RawMessage(`"` + strings.Repeat("a", job.MaxPayloadBytes) + `"`)
		}},
		{"spec.exec", func(c *job.Submit) { c.Spec = action; c.Spec.Exec = execSpec.Exec }},
		{"spec.script", func(c *job.Submit) { c.Spec = action; c.Spec.Script = script.Script }},
		{"spec.exec.argv", func(c *job.Submit) { c.Spec = job.Spec{Kind: job.KindExec, Exec: &job.Exec{}} }},
		{"spec.exec.argv", func(c *job.Submit) { c.Spec = job.Spec{Kind: job.KindExec} }},
		{"spec.exec.argv[1]", func(c *job.Submit) {
			c.Spec = job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"ls", "\xff"}}}
		}},
		{"spec.exec.env", func(c *job.Submit) {
			c.Spec = job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"ls"}, Env: map[string]string{"A=B": "c"}}}
		}},
		{"spec.exec.workdir", func(c *job.Submit) {
			c.Spec = job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"ls"}, Workdir: "tmp"}}
		}},
		{"spec.action", func(c *job.Submit) { c.Spec = execSpec; c.Spec.Action = "system.info" }},
		{"spec.script", func(c *job.Submit) { c.Spec = execSpec; c.Spec.Script = script.Script }},
		{"spec.exec", func(c *job.Submit) { c.Spec = script; c.Spec.Exec = execSpec.Exec }},
		{"spec.script.interpreter", func(c *job.Submit) { c.Spec = job.Spec{Kind: job.KindScript, Script: &job.Script{Body: "x"}} }},
		{"spec.script.interpreter", func(c *job.Submit) {
			c.Spec = job.Spec{Kind: job.KindScript, Script: &job.Script{Interpreter: "sh -c", Body: "x"}}
		}},
		{"spec.script.body", func(c *job.Submit) { c.Spec = job.Spec{Kind: job.KindScript, Script: &job.Script{Interpreter: "sh"}} }},
		{"target", func(c *job.Submit) { c.Target = job.Target{} }},
		{"target", func(c *job.Submit) {
			c.Target = job.Target{NodeID: nodeID, Selector: map[string]string{"a": "b"}, Mode: job.ModeAny}
		}},
		{"target.nodeId", func(c *job.Submit) { c.Target = job.Target{NodeID: "a b"} }},
		{"target.mode", func(c *job.Submit) { c.Target = job.Target{NodeID: nodeID, Mode: job.ModeAny} }},
		{"target.mode", func(c *job.Submit) { c.Target = job.Target{Selector: map[string]string{"a": "b"}} }},
		{"target.selector", func(c *job.Submit) { c.Target = job.Target{Selector: map[string]string{"A": "b"}, Mode: job.ModeAny} }},
		{"target.maxParallel", func(c *job.Submit) {
			c.Target = job.Target{Selector: map[string]string{"a": "b"}, Mode: job.ModeAny, MaxParallel: 2}
		}},
		{"target.maxParallel", func(c *job.Submit) {
			c.Target = job.Target{Selector: map[string]string{"a": "b"}, Mode: job.ModeAll, MaxParallel: -1}
		}},
		{"target", func(c *job.Submit) {
			c.ParentID = "job-0"
			c.Target = job.Target{Selector: map[string]string{"a": "b"}, Mode: job.ModeAll}
		}},
		{"timeout", func(c *job.Submit) { c.Timeout = 0 }},
		{"grace", func(c *job.Submit) { c.Grace = -time.Second }},
		{"retry.max", func(c *job.Submit) { c.Retry.Max = job.MaxRetries + 1 }},
		{"retry.max", func(c *job.Submit) { c.Retry.Max = -1 }},
		{"retry.backoff", func(c *job.Submit) { c.Retry.Backoff = job.BackoffCap + 1 }},
		{"queue", func(c *job.Submit) { c.Queue = "Serial Queue" }},
		{"submitter", func(c *job.Submit) { c.Submitter = "" }},
		{"at", func(c *job.Submit) { c.At = time.Time{} }},
	}
	for i, c := range cases {
		cmd := valid()
		c.change(&cmd)
		es, err := job.Job{}.Submit(cmd)
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("case %d: want validation error on %s, got %v (events %v)", i, c.field, err, es)
		}
	}
	for _, spec := range []job.Spec{action, script, execSpec} {
		cmd := valid()
		cmd.Spec = spec
		if _, err := (job.Job{}).Submit(cmd); err != nil {
			t.Errorf("valid %s job refused: %v", spec.Kind, err)
		}
	}
}

func TestLease(t *testing.T) {
	t.Parallel()
	queued := fold(submitted)
	cases := map[string]struct {
		cmd   job.Lease
		field string
	}{
		"another node":        {job.Lease{JobID: id, NodeID: "node-2", LeaseUntil: at(2), At: at(1)}, "nodeId"},
		"no node":             {job.Lease{JobID: id, LeaseUntil: at(2), At: at(1)}, "nodeId"},
		"lease ends at once":  {job.Lease{JobID: id, NodeID: nodeID, LeaseUntil: at(1), At: at(1)}, "leaseUntil"},
		"no time":             {job.Lease{JobID: id, NodeID: nodeID, LeaseUntil: at(1)}, "at"},
		"another job address": {job.Lease{JobID: "job-2", NodeID: nodeID, LeaseUntil: at(2), At: at(1)}, "jobId"},
	}
	for name, c := range cases {
		_, err := queued.Lease(c.cmd)
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%s: want validation error on %s, got %v", name, c.field, err)
		}
	}
	es, err := queued.Lease(job.Lease{JobID: id, NodeID: nodeID, LeaseUntil: at(2), At: at(1)})
	if err != nil {
		t.Fatal(err)
	}
	j := apply(queued, es)
	if j.Attempt != 1 || j.NodeID != nodeID || !j.LeaseUntil.Equal(at(2)) || j.Acknowledged {
		t.Fatalf("leased job = %+v", j)
	}
}

func TestReportsFromAnotherNodeAreRefused(t *testing.T) {
	t.Parallel()
	dispatched := fold(histories[false][job.StatusDispatched]...)
	running := fold(histories[false][job.StatusRunning]...)
	errs := map[string]error{}
	_, errs["acknowledge"] = dispatched.Acknowledge(job.Acknowledge{JobID: id, NodeID: "node-2", At: at(2)})
	_, errs["start"] = dispatched.Start(job.Start{JobID: id, NodeID: "node-2", At: at(2)})
	_, errs["finish"] = running.Finish(job.Finish{JobID: id, NodeID: "node-2", Outcome: job.StatusSucceeded, At: at(2)})
	for name, err := range errs {
		var le *job.LeaseError
		if !errors.As(err, &le) || le.LeasedTo != nodeID || le.NodeID != "node-2" || !errors.Is(err, domain.ErrConflict) {
			t.Errorf("%s from another node: %v", name, err)
		}
	}
}

func TestAcknowledgeTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	j := fold(submitted, leased, job.Acknowledged{JobID: id, NodeID: nodeID, At: at(2)})
	if !j.Acknowledged {
		t.Fatal("acknowledgement not recorded")
	}
	es, err := j.Acknowledge(job.Acknowledge{JobID: id, NodeID: nodeID, At: at(2)})
	if err != nil || len(es) != 0 {
		t.Fatalf("second acknowledgement: %v %v", es, err)
	}
}

func TestFinish(t *testing.T) {
	t.Parallel()
	running := fold(histories[false][job.StatusRunning]...)
	cancelling := fold(histories[false][job.StatusCancelling]...)
	bad := map[string]struct {
		j     job.Job
		cmd   job.Finish
		field string
	}{
		"unknown outcome": {running, job.Finish{JobID: id, NodeID: nodeID, Outcome: job.StatusLost, At: at(9)}, "outcome"},
		"cancelled without a request": {running, job.Finish{JobID: id, NodeID: nodeID, Outcome: job.StatusCancelled, At: at(9)},
			"outcome"},
		"negative cpu": {running, job.Finish{JobID: id, NodeID: nodeID, Outcome: job.StatusFailed,
			Result: job.Result{CPUTimeMS: -1}, At: at(9)}, "result.cpuTimeMs"},
		"negative memory": {running, job.Finish{JobID: id, NodeID: nodeID, Outcome: job.StatusFailed,
			Result: job.Result{PeakMemoryBytes: -1}, At: at(9)}, "result.peakMemoryBytes"},
		"bad output": {running, job.Finish{JobID: id, NodeID: nodeID, Outcome: job.StatusFailed,
			Result: job.Result{Output: json.RawMessage(`nope`)}, At: at(9)}, "result.output"},
		"control characters in error": {running, job.Finish{JobID: id, NodeID: nodeID, Outcome: job.StatusFailed,
			Result: job.Result{Error: "a\x00b"}, At: at(9)}, "result.error"},
	}
	for name, c := range bad {
		_, err := c.j.Finish(c.cmd)
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%s: want validation error on %s, got %v", name, c.field, err)
		}
	}
	for _, outcome := range []job.Status{job.StatusSucceeded, job.StatusFailed, job.StatusTimedOut} {
		es, err := running.Finish(job.Finish{JobID: id, NodeID: nodeID, Outcome: outcome, Result: result, At: at(9)})
		if err != nil {
			t.Fatal(err)
		}
		j := apply(running, es)
		if j.Status != outcome || !j.Terminal() || !reflect.DeepEqual(*j.Result, result) {
			t.Errorf("finish %s: %+v", outcome, j)
		}
	}
	es, err := cancelling.Finish(job.Finish{JobID: id, NodeID: nodeID, Outcome: job.StatusCancelled, At: at(9)})
	if err != nil || apply(cancelling, es).Status != job.StatusCancelled {
		t.Fatalf("cancelled after request: %v %v", es, err)
	}
}

func TestExpireLease(t *testing.T) {
	t.Parallel()
	anyNode := submitted
	anyNode.Target = job.Target{Selector: map[string]string{"role": "db"}, Mode: job.ModeAny}
	lastAttempt := job.Leased{JobID: id, NodeID: nodeID, Attempt: 3, LeaseUntil: at(3), At: at(1)}
	acked := job.Acknowledged{JobID: id, NodeID: nodeID, At: at(2)}
	cases := []struct {
		name     string
		history  []domain.Event
		nodeGone bool
		want     job.Status
	}{
		{"node still there", []domain.Event{submitted, leased}, false, job.StatusQueued},
		{"pinned to a gone node", []domain.Event{submitted, leased}, true, job.StatusLost},
		{"any node, attempts left", []domain.Event{anyNode, leased}, true, job.StatusQueued},
		{"any node, attempts used", []domain.Event{anyNode, lastAttempt}, true, job.StatusLost},
		{"attempts used, node still there", []domain.Event{anyNode, lastAttempt}, false, job.StatusQueued},
		{"acknowledged, node gone", []domain.Event{anyNode, leased, acked}, true, job.StatusQueued},
	}
	for _, c := range cases {
		j := fold(c.history...)
		es, err := j.ExpireLease(job.ExpireLease{JobID: id, NodeGone: c.nodeGone, At: at(3)})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		after := apply(j, es)
		if after.Status != c.want || !after.LeaseUntil.IsZero() || after.Acknowledged {
			t.Errorf("%s: status %s, want %s (%+v)", c.name, after.Status, c.want, after)
		}
	}
	refused := []struct {
		name    string
		history []domain.Event
		at      time.Time
		field   string
	}{
		{"before the lease ends", []domain.Event{submitted, leased}, at(2), "at"},
		{"acknowledged, node still there", []domain.Event{submitted, leased, acked}, at(3), "lease"},
	}
	for _, c := range refused {
		_, err := fold(c.history...).ExpireLease(job.ExpireLease{JobID: id, At: c.at})
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%s: %v, want a refusal naming %s", c.name, err, c.field)
		}
	}
	// On a node that is gone the lease ends at once.
	es, err := fold(submitted, leased).ExpireLease(job.ExpireLease{JobID: id, NodeGone: true, At: at(2)})
	if err != nil || apply(fold(submitted, leased), es).Status != job.StatusLost {
		t.Fatalf("expiry on a gone node before the lease ends: %v %v", es, err)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	dispatched := fold(histories[false][job.StatusDispatched]...)
	es, err := dispatched.Cancel(job.Cancel{JobID: id, At: at(9)})
	if err != nil {
		t.Fatal(err)
	}
	j := apply(dispatched, es)
	if j.Status != job.StatusCancelled || !j.LeaseUntil.IsZero() {
		t.Fatalf("cancelled dispatched job = %+v", j)
	}
	// The agent's late start is refused, so the job never runs.
	_, err = j.Start(job.Start{JobID: id, NodeID: nodeID, At: at(10)})
	assertRefused(t, err, job.CmdStart, string(job.StatusCancelled))
	_, err = dispatched.Cancel(job.Cancel{JobID: id, Reason: strings.Repeat("r", job.MaxReasonLength+1), At: at(9)})
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || ve.Field != "reason" {
		t.Fatalf("long reason: %v", err)
	}
}

func TestRetryBackoff(t *testing.T) {
	t.Parallel()
	failedAt := func(attempt int) job.Job {
		return fold(submitted, job.Leased{JobID: id, NodeID: nodeID, Attempt: attempt, LeaseUntil: at(3), At: at(1)},
			started, finished(job.StatusFailed))
	}
	for attempt, wait := range map[int]time.Duration{1: 10 * time.Second, 2: 20 * time.Second} {
		es, err := failedAt(attempt).Retry(job.Retry{JobID: id, At: at(10)})
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		j := apply(failedAt(attempt), es)
		if j.Status != job.StatusQueued || !j.NotBefore.Equal(at(10).Add(wait)) || j.Result != nil {
			t.Errorf("after attempt %d: %+v", attempt, j)
		}
		_, err = j.Lease(job.Lease{JobID: id, NodeID: nodeID, LeaseUntil: at(20), At: at(10)})
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != "at" {
			t.Errorf("lease during backoff: %v", err)
		}
		if _, err := j.Lease(job.Lease{JobID: id, NodeID: nodeID, LeaseUntil: at(20), At: at(10).Add(wait)}); err != nil {
			t.Errorf("lease after backoff: %v", err)
		}
	}
	_, err := failedAt(3).Retry(job.Retry{JobID: id, At: at(10)})
	var rl *job.RetryLimitError
	if !errors.As(err, &rl) || rl.Attempts != 3 || rl.MaxAttempts != 3 || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("retry past the limit: %v", err)
	}
	for _, c := range []struct {
		base    time.Duration
		attempt int
		want    time.Duration
	}{
		{time.Second, 1, time.Second},
		{time.Second, 4, 8 * time.Second},
		{time.Minute, 7, job.BackoffCap},
		{time.Minute, 1000, job.BackoffCap},
		{0, 5, 0},
		{job.BackoffCap, 2, job.BackoffCap},
	} {
		if got := job.Backoff(c.base, c.attempt); got != c.want {
			t.Errorf("Backoff(%s, %d) = %s, want %s", c.base, c.attempt, got, c.want)
		}
	}
}

func TestFanOut(t *testing.T) {
	t.Parallel()
	running := fold(histories[true][job.StatusRunning]...)
	cancelling := fold(histories[true][job.StatusCancelling]...)
	cases := []struct {
		name   string
		j      job.Job
		counts job.FanOutCounts
		want   job.Status
	}{
		{"all succeeded", running, job.FanOutCounts{Succeeded: 2}, job.StatusSucceeded},
		{"one failed", running, job.FanOutCounts{Succeeded: 1, Failed: 1}, job.StatusFailed},
		{"one lost", running, job.FanOutCounts{Succeeded: 1, Lost: 1}, job.StatusFailed},
		{"cancelled midway", cancelling, job.FanOutCounts{Succeeded: 1, Cancelled: 1}, job.StatusCancelled},
		{"cancel too late", cancelling, job.FanOutCounts{Succeeded: 2}, job.StatusSucceeded},
	}
	for _, c := range cases {
		es, err := c.j.CompleteFanOut(job.CompleteFanOut{JobID: id, Counts: c.counts, At: at(9)})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if j := apply(c.j, es); j.Status != c.want || j.Counts != c.counts {
			t.Errorf("%s: %s, want %s", c.name, j.Status, c.want)
		}
	}
	// No node matched: the fan-out fails, so a mistyped selector is noticed.
	empty := fold(fanOutSubmitted, job.ChildrenSpawned{JobID: id, At: at(1)})
	es, err := empty.CompleteFanOut(job.CompleteFanOut{JobID: id, At: at(2)})
	if err != nil || apply(empty, es).Status != job.StatusFailed {
		t.Fatalf("fan-out to no node: %v %v", es, err)
	}
	bad := []struct {
		name  string
		run   func() ([]domain.Event, error)
		field string
	}{
		{"counts do not add up", func() ([]domain.Event, error) {
			return running.CompleteFanOut(job.CompleteFanOut{JobID: id, Counts: job.FanOutCounts{Succeeded: 3}, At: at(9)})
		}, "counts"},
		{"negative count", func() ([]domain.Event, error) {
			return running.CompleteFanOut(job.CompleteFanOut{JobID: id, Counts: job.FanOutCounts{Succeeded: 3, Failed: -1}, At: at(9)})
		}, "counts"},
		{"child listed twice", func() ([]domain.Event, error) {
			return fold(fanOutSubmitted).SpawnChildren(job.SpawnChildren{JobID: id, ChildIDs: []string{"a", "a"}, At: at(1)})
		}, "childIds[1]"},
		{"own child", func() ([]domain.Event, error) {
			return fold(fanOutSubmitted).SpawnChildren(job.SpawnChildren{JobID: id, ChildIDs: []string{id}, At: at(1)})
		}, "childIds[0]"},
		{"bad child id", func() ([]domain.Event, error) {
			return fold(fanOutSubmitted).SpawnChildren(job.SpawnChildren{JobID: id, ChildIDs: []string{""}, At: at(1)})
		}, "childIds[0]"},
	}
	for _, c := range bad {
		_, err := c.run()
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%s: want validation error on %s, got %v", c.name, c.field, err)
		}
	}
	// A child runs on one node and names its parent.
	es, err = job.Job{}.Submit(job.Submit{JobID: "job-1.a", ParentID: id, Spec: fanOutSubmitted.Spec,
		Target: job.Target{NodeID: nodeID}, Timeout: time.Minute, Submitter: "fan-out", At: at(1)})
	if err != nil || fold(es...).ParentID != id {
		t.Fatalf("child submission: %v %v", es, err)
	}
}

func TestMarkLostNeedsAReason(t *testing.T) {
	t.Parallel()
	_, err := fold(histories[false][job.StatusRunning]...).MarkLost(job.MarkLost{JobID: id, At: at(9)})
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || ve.Field != "reason" {
		t.Fatalf("lost without reason: %v", err)
	}
}

var samples = []domain.Event{
	submitted, leased, started, cancelAsk, finished(job.StatusFailed), lost, spawned, fanOutOK,
	job.Acknowledged{JobID: id, NodeID: nodeID, At: at(2)},
	job.LeaseExpired{JobID: id, NodeID: nodeID, Attempt: 1, At: at(3)},
	job.Cancelled{JobID: id, Reason: "no longer needed", At: at(3)},
	job.RetryScheduled{JobID: id, Attempt: 1, NotBefore: at(6), At: at(5)},
}

func TestEventsRoundTrip(t *testing.T) {
	t.Parallel()
	own := domain.NewRegistry()
	job.RegisterEvents(own)
	var types []string
	for _, e := range samples {
		types = append(types, e.EventType())
	}
	slices.Sort(types)
	if !slices.Equal(types, own.Types()) {
		t.Fatalf("samples cover %v, registered %v", types, own.Types())
	}
	reg := events.Registry()
	for _, e := range append(samples, fanOutSubmitted) {
		typ, version, payload, err := reg.Encode(e)
		if err != nil || version != 1 || typ != e.EventType() {
			t.Fatalf("encode %T: %s %d %v", e, typ, version, err)
		}
		decoded, err := reg.Decode(typ, version, json.RawMessage(payload))
		if err != nil {
			t.Fatalf("decode %s: %v", typ, err)
		}
		if got := decoded; !reflect.DeepEqual(got, e) {
			t.Errorf("%s round trip:\n got %#v\nwant %#v", typ, got, e)
		}
		base := fold(submitted)
		fromValue, fromPointer := base, base
		fromValue.Apply(e)
		fromPointer.Apply(decoded)
		if !reflect.DeepEqual(fromValue, fromPointer) {
			t.Errorf("%s: Apply(value) = %+v, Apply(decoded pointer) = %+v", typ, fromValue, fromPointer)
		}
		if reflect.DeepEqual(fromValue, base) && e.EventType() != submitted.EventType() {
			t.Errorf("%s: Apply changed nothing", typ)
		}
	}
}

// Events decided from commands fold the same as their stored copies, even
// with JSON the log rewrites (spacing, HTML characters).
func TestDecidedEventsFoldLikeStoredOnes(t *testing.T) {
	t.Parallel()
	reg := events.Registry()
	es, err := job.Job{}.Submit(job.Submit{JobID: id, Spec: job.Spec{Kind: job.KindAction, Action: "files.write",
		Args: json.RawMessage(`{ "path": "/etc/motd", "body": "<b>&</b>" }`)},
		Target: job.Target{NodeID: nodeID}, Timeout: time.Minute, Submitter: "u", At: at(0).Local()})
	if err != nil {
		t.Fatal(err)
	}
	var fromValue, fromStore job.Job
	for _, e := range es {
		typ, v, payload, err := reg.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := reg.Decode(typ, v, payload)
		if err != nil {
			t.Fatal(err)
		}
		fromValue.Apply(e)
		fromStore.Apply(decoded)
	}
	if !reflect.DeepEqual(fromValue, fromStore) {
		t.Fatalf("decided %+v\nstored  %+v", fromValue, fromStore)
	}
}
