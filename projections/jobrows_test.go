package projections_test

import (
	"testing"
	"time"

	"cairn/domain"
	"cairn/domain/job"
	"cairn/eventstore"
	"cairn/projections/eventgen"
	"cairn/projections/models"
)

// A job's row is written whole when the job is submitted and, after that,
// only in the columns its later events change. Applied one event at a
// time, every path of a job's life (a fan-out and its children, a retry, an
// expired lease, a loss, a cancellation) leaves the same rows as a replay
// of the whole log at once.
func TestJobRowsChangedEventByEventMatchAReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := start(t, e, fastOptions(), models.Jobs{})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tick := func() time.Time { at = at.Add(time.Second); return at }
	spec := job.Spec{Kind: job.KindAction, Action: "host.facts"}
	submit := func(id, parent string, target job.Target) domain.Event {
		return job.Submitted{JobID: id, ParentID: parent, Spec: spec, Target: target, Timeout: time.Minute,
			Retry: job.RetryPolicy{Max: 2, Backoff: time.Second}, Submitter: "operator", At: tick()}
	}
	life := []struct {
		job string
		ev  func() domain.Event
	}{
		{"fan", func() domain.Event { return submit("fan", "", job.Target{Every: true, Mode: job.ModeAll}) }},
		{"kid-1", func() domain.Event { return submit("kid-1", "fan", job.Target{NodeID: "n1"}) }},
		{"kid-2", func() domain.Event { return submit("kid-2", "fan", job.Target{NodeID: "n2"}) }},
		{"fan", func() domain.Event {
			return job.ChildrenSpawned{JobID: "fan", ChildIDs: []string{"kid-1", "kid-2"}, At: tick()}
		}},
		{"kid-1", func() domain.Event {
			return job.Leased{JobID: "kid-1", NodeID: "n1", Attempt: 1, LeaseUntil: tick().Add(time.Minute), At: at}
		}},
		{"kid-2", func() domain.Event {
			return job.Leased{JobID: "kid-2", NodeID: "n2", Attempt: 1, LeaseUntil: tick().Add(time.Minute), At: at}
		}},
		{"kid-1", func() domain.Event { return job.Started{JobID: "kid-1", NodeID: "n1", At: tick()} }},
		{"kid-1", func() domain.Event {
			return job.Finished{JobID: "kid-1", NodeID: "n1", Attempt: 1, Outcome: job.StatusSucceeded, Result: job.Result{ExitCode: 0}, At: tick()}
		}},
		{"kid-2", func() domain.Event {
			return job.Lost{JobID: "kid-2", NodeID: "n2", Attempt: 1, Reason: "node lost", At: tick()}
		}},
		{"fan", func() domain.Event {
			return job.FanOutCompleted{JobID: "fan", Counts: job.FanOutCounts{Succeeded: 1, Lost: 1}, Outcome: job.StatusFailed, At: tick()}
		}},
		{"retry", func() domain.Event { return submit("retry", "", job.Target{NodeID: "n1"}) }},
		{"retry", func() domain.Event {
			return job.Leased{JobID: "retry", NodeID: "n1", Attempt: 1, LeaseUntil: tick().Add(time.Minute), At: at}
		}},
		{"retry", func() domain.Event { return job.Acknowledged{JobID: "retry", NodeID: "n1", At: tick()} }},
		{"retry", func() domain.Event { return job.Started{JobID: "retry", NodeID: "n1", At: tick()} }},
		{"retry", func() domain.Event {
			return job.Finished{JobID: "retry", NodeID: "n1", Attempt: 1, Outcome: job.StatusFailed, Result: job.Result{ExitCode: 2, Error: "exit status 2"}, At: tick()}
		}},
		{"retry", func() domain.Event {
			return job.RetryScheduled{JobID: "retry", Attempt: 1, NotBefore: tick().Add(time.Second), At: at}
		}},
		{"retry", func() domain.Event {
			return job.Leased{JobID: "retry", NodeID: "n2", Attempt: 2, LeaseUntil: tick().Add(time.Minute), At: at}
		}},
		{"retry", func() domain.Event { return job.LeaseExpired{JobID: "retry", NodeID: "n2", Attempt: 2, At: tick()} }},
		{"stop", func() domain.Event { return submit("stop", "", job.Target{NodeID: "n1"}) }},
		{"stop", func() domain.Event {
			return job.Leased{JobID: "stop", NodeID: "n1", Attempt: 1, LeaseUntil: tick().Add(time.Minute), At: at}
		}},
		{"stop", func() domain.Event { return job.CancelRequested{JobID: "stop", Reason: "not needed", At: tick()} }},
		{"stop", func() domain.Event { return job.Cancelled{JobID: "stop", Reason: "not needed", At: tick()} }},
	}
	for _, step := range life {
		item := eventgen.Item{StreamID: domain.StreamID("job", step.job), StreamType: "job", Events: []domain.Event{step.ev()},
			Metadata: eventstore.Metadata{Actor: "operator", Tenant: "acme"}}
		if _, err := eventgen.Append(testCtx(t), e.store, []eventgen.Item{item}); err != nil {
			t.Fatal(err)
		}
		waitAll(t, e, r.Runner) // each event a batch of its own
	}
	if got := count(t, e.app, `SELECT count(*) FROM read.jobs WHERE spec IS NOT NULL AND tenant_id = 'acme' AND submitter = 'operator'`); got != 5 {
		t.Fatalf("%d jobs kept what their submission said, want 5", got)
	}
	sameAsReplay(t, e, "jobs")
}
