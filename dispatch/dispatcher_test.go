package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/cluster"
	"cairn/commands/access"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/dispatch"
	"cairn/dispatch/dispatchtest"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/eventstore"
	"cairn/internal/testdb"
	"cairn/joblogs"
)

// A job for one node reaches that node's agent, which starts it, streams its
// output and finishes it; the log keeps every step.
func TestJobOnOneNode(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	e.enroll(nil, "n1", "n2")
	a1, a2 := e.connect("n1", eventstore.Cursor{}), e.connect("n2", eventstore.Cursor{})
	eventually(t, "n1 online", func() bool { return e.node("n1").Status == node.StatusOnline })

	id := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	it := a1.next()
	if it.Job.ID != id || it.Attempt != 1 || it.CancelRequested || it.Cursor.IsZero() || it.Job.Spec.Exec.Argv[0] != "echo" {
		t.Fatalf("delivered %+v", it)
	}
	a2.quiet(300 * time.Millisecond)
	must(t)(e.Dispatcher.Acknowledge(ctxFor(t), a1.caller(), id))
	a1.run(id, job.StatusSucceeded)
	j := e.waitStatus(id, job.StatusSucceeded)
	if j.NodeID != "n1" || j.Attempt != 1 || !j.Acknowledged {
		t.Errorf("job %+v", j)
	}
	page, more, err := e.Logs.Page(ctxFor(t), id, 0, 10)
	if err != nil || more || len(page) != 1 || page[0].Data != "hello from n1\n" || page[0].Seq != 1 {
		t.Errorf("log %+v, %v, %v", page, more, err)
	}
}

// A selector with mode any picks one matching node whose agent is connected
// and spreads work over them.
func TestAnyMatchingNode(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	e.enroll(map[string]string{"role": "web"}, "w1", "w2", "w3")
	e.enroll(map[string]string{"role": "db"}, "d1")
	agents := map[string]*agent{}
	for _, id := range []string{"w1", "w2", "d1"} { // w3 is not connected
		agents[id] = e.connect(id, eventstore.Cursor{})
	}
	e.waitOnline("w1", "w2")
	got := map[string]int{}
	for range 4 {
		id := e.submit(jobs.Submit{Spec: echo, Target: job.Target{Selector: map[string]string{"role": "web"}, Mode: job.ModeAny}})
		j := e.waitStatus(id, job.StatusDispatched)
		got[j.NodeID]++
		a := agents[j.NodeID]
		if a == nil {
			t.Fatalf("job leased to %s, which is not connected or does not match", j.NodeID)
		}
		if it := a.next(); it.Job.ID != id {
			t.Fatalf("%s received %s, want %s", j.NodeID, it.Job.ID, id)
		}
	}
	if got["w1"] == 0 || got["w2"] == 0 {
		t.Errorf("work not spread over the idle nodes: %v", got)
	}
	agents["d1"].quiet(200 * time.Millisecond)
}

// A fan-out runs one child on every matching node, at most maxParallel at a
// time, and completes with their tally.
func TestFanOutAll(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	e.enroll(map[string]string{"tier": "edge"}, "e1", "e2", "e3")
	e.enroll(map[string]string{"tier": "core"}, "c1")
	var agents []*agent
	for _, id := range []string{"e1", "e2", "e3", "c1"} {
		agents = append(agents, e.connect(id, eventstore.Cursor{}))
	}
	e.waitOnline("e1", "e2", "e3", "c1")
	parent := e.submit(jobs.Submit{Spec: echo, Target: job.Target{Selector: map[string]string{"tier": "edge"}, Mode: job.ModeAll, MaxParallel: 2}})
	p := e.waitStatus(parent, job.StatusRunning)
	if len(p.Children) != 3 {
		t.Fatalf("children %v", p.Children)
	}
	// Two children are leased; the third waits for a free slot.
	var held []struct {
		a  *agent
		id string
	}
	eventually(t, "two children leased", func() bool {
		for _, a := range agents[:3] {
			select {
			case it := <-a.items:
				held = append(held, struct {
					a  *agent
					id string
				}{a, it.Job.ID})
			default:
			}
		}
		return len(held) == 2
	})
	for _, a := range agents[:3] {
		a.quiet(100 * time.Millisecond)
	}
	outcomes := []job.Status{job.StatusSucceeded, job.StatusFailed}
	for i, h := range held {
		h.a.run(h.id, outcomes[i])
	}
	// The last child now gets its slot.
	var last dispatch.AgentJob
	var lastAgent *agent
	eventually(t, "third child leased", func() bool {
		for _, a := range agents[:3] {
			select {
			case it := <-a.items:
				last, lastAgent = it, a
				return true
			default:
			}
		}
		return false
	})
	if last.Job.ParentID != parent {
		t.Fatalf("third item %+v", last)
	}
	lastAgent.run(last.Job.ID, job.StatusSucceeded)
	p = e.waitStatus(parent, job.StatusFailed)
	if p.Counts != (job.FanOutCounts{Succeeded: 2, Failed: 1}) {
		t.Errorf("counts %+v", p.Counts)
	}
	agents[3].quiet(100 * time.Millisecond)
}

// A fan-out's children are spawned and leased by the dispatcher itself;
// it tells the job handlers' cache what it wrote, so each agent's start and
// finish decide without reading the child's stream back.
func TestFanOutChildrenDecideWithoutReads(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	ids := []string{"w1", "w2", "w3"}
	e.enroll(nil, ids...)
	agents := map[string]*agent{}
	for _, id := range ids {
		agents[id] = e.connect(id, eventstore.Cursor{})
	}
	e.waitOnline(ids...)
	parent := e.submit(jobs.Submit{Spec: echo, Target: job.Target{Every: true, Mode: job.ModeAll}})
	leased := map[string]string{}
	eventually(t, "every child leased", func() bool {
		for id, a := range agents {
			select {
			case it := <-a.items:
				leased[id] = it.Job.ID
			default:
			}
		}
		return len(leased) == len(ids)
	})
	before := e.JobStreamReads.Load()
	for id, child := range leased {
		agents[id].run(child, job.StatusSucceeded)
	}
	if n := e.JobStreamReads.Load() - before; n != 0 {
		t.Errorf("the children's starts and finishes read %d job streams, want none", n)
	}
	e.waitStatus(parent, job.StatusSucceeded)
}

// A lease's period starts when it is appended, not when it was decided: a
// fan-out decides every child's lease in one pass, and the appends queue
// behind the dispatcher's workers (on a loaded server, for many seconds).
// With one worker and a clock that moves on every reading, leases timed at
// their decision would share one time.
func TestLeaseIsTimedWhenAppended(t *testing.T) {
	t.Parallel()
	opts := fastOptions()
	opts.Workers = 1
	var ticks atomic.Int64
	base := time.Now()
	opts.Clock = func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	e := start(t, opts)
	var ids []string
	for i := range 20 {
		ids = append(ids, fmt.Sprintf("lt%02d", i))
	}
	e.enroll(nil, ids...)
	agents := map[string]*agent{}
	for _, id := range ids {
		agents[id] = e.connect(id, eventstore.Cursor{})
	}
	e.waitOnline(ids...)
	e.submit(jobs.Submit{Spec: echo, Target: job.Target{Every: true, Mode: job.ModeAll}})
	at := map[time.Time]string{}
	for id, a := range agents {
		var it dispatch.AgentJob
		select {
		case it = <-a.items:
		case <-time.After(wait):
			t.Fatalf("node %s received no lease", id)
		}
		leased := e.job(it.Job.ID) // not started: its last change is the lease
		if got := leased.LeaseUntil.Sub(leased.UpdatedAt); got != opts.Lease {
			t.Errorf("child %s leased for %s, want %s", it.Job.ID, got, opts.Lease)
		}
		if other, ok := at[leased.UpdatedAt]; ok {
			t.Errorf("children %s and %s were leased at the same reading of the clock: timed when decided, not appended", other, it.Job.ID)
		}
		at[leased.UpdatedAt] = it.Job.ID
	}
}

// Job targets beyond a label map: every node, the nodes of a location, and
// set-based requirements; a fan-out reaches exactly the nodes they select.
func TestFanOutTargetSets(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	must(t)(e.Access.CreateLocation(ctxFor(t), dispatchtest.Operator, access.CreateLocation{LocationID: "ams", Name: "Amsterdam"}))
	for _, n := range []struct {
		id, loc string
		labels  map[string]string
	}{
		{"s1", "ams", map[string]string{"zone": "a", "gpu": "a100"}},
		{"s2", "ams", map[string]string{"zone": "b"}},
		{"s3", "", map[string]string{"zone": "c"}},
		{"s4", "", map[string]string{}},
	} {
		must(t)(e.Nodes.Enroll(ctxFor(t), dispatchtest.Operator, nodes.Enroll{NodeID: n.id, Hostname: n.id, LocationID: n.loc, Labels: n.labels}))
	}
	agents := map[string]*agent{}
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		agents[id] = e.connect(id, eventstore.Cursor{})
	}
	e.waitOnline("s1", "s2", "s3", "s4")
	for _, tc := range []struct {
		name   string
		target job.Target
		want   []string
	}{
		{"every node", job.Target{Every: true, Mode: job.ModeAll}, []string{"s1", "s2", "s3", "s4"}},
		{"a location", job.Target{Location: "ams", Mode: job.ModeAll}, []string{"s1", "s2"}},
		{"zone notin (a,b)", job.Target{Requirements: node.Selector{{Key: "zone", Op: node.OpNotIn, Values: []string{"a", "b"}}}, Mode: job.ModeAll}, []string{"s3", "s4"}},
		{"!gpu in ams", job.Target{Location: "ams", Requirements: node.Selector{{Key: "gpu", Op: node.OpNotExists}}, Mode: job.ModeAll}, []string{"s2"}},
	} {
		parent := e.submit(jobs.Submit{Spec: echo, Target: tc.target})
		var got []string
		eventually(t, tc.name+": children leased", func() bool {
			for id, a := range agents {
				select {
				case it := <-a.items:
					if it.Job.ParentID != parent {
						t.Fatalf("%s: %s received %s of another job", tc.name, id, it.Job.ID)
					}
					got = append(got, id)
					a.run(it.Job.ID, job.StatusSucceeded)
				default:
				}
			}
			return len(got) >= len(tc.want)
		})
		e.waitStatus(parent, job.StatusSucceeded)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s ran on %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, a := range agents {
		a.quiet(100 * time.Millisecond)
	}
}

// A fan-out that matches no node fails at once.
func TestFanOutNoMatch(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	id := e.submit(jobs.Submit{Spec: echo, Target: job.Target{Selector: map[string]string{"x": "y"}, Mode: job.ModeAll}})
	j := e.waitStatus(id, job.StatusFailed)
	if len(j.Children) != 0 || j.Counts.Total() != 0 {
		t.Errorf("job %+v", j)
	}
}

// Jobs of one serial queue run one at a time on a node, in submission order.
func TestSerialQueue(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	e.enroll(nil, "n1")
	a := e.connect("n1", eventstore.Cursor{})
	first := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}, Queue: "apt"})
	second := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}, Queue: "apt"})
	other := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	got := []string{a.next().Job.ID, a.next().Job.ID}
	slices.Sort(got)
	want := []string{first, other}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("first deliveries %v, want %v", got, want)
	}
	a.quiet(300 * time.Millisecond)
	a.run(first, job.StatusSucceeded)
	if it := a.next(); it.Job.ID != second {
		t.Fatalf("after the first, got %s", it.Job.ID)
	}
}

// A lease nobody acknowledges expires and the job is leased again; a
// reconnecting agent gets the new lease.
func TestLeaseExpires(t *testing.T) {
	t.Parallel()
	opts := fastOptions()
	opts.Lease = time.Second
	e := start(t, opts)
	e.enroll(nil, "n1")
	a := e.connect("n1", eventstore.Cursor{})
	id := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	first := a.next()
	second := a.next() // not acknowledged: leased again after the lease time
	if second.Job.ID != id || second.Attempt != 2 || !first.Cursor.Less(second.Cursor) {
		t.Fatalf("first %+v, second %+v", first, second)
	}
	// An acknowledged lease is not taken back. A loaded machine may let the
	// second lease expire too before the acknowledgement lands: refused while
	// the job waits to be leased again, it acknowledges the next lease; what
	// was leased up to then may still arrive, nothing after it.
	for {
		_, err := e.Dispatcher.Acknowledge(ctxFor(t), a.caller(), id)
		if err == nil {
			break
		}
		if !isA[*domain.StateError](err) {
			t.Fatal(err)
		}
		if it := a.next(); it.Job.ID != id {
			t.Fatalf("leased %+v, want job %s again", it, id)
		}
	}
	acked := e.job(id)
	if !acked.Acknowledged {
		t.Fatalf("after the acknowledgement: %+v", acked)
	}
	deadline := time.After(2 * time.Second)
quiet:
	for {
		select {
		case it := <-a.items:
			if it.Attempt > acked.Attempt {
				t.Fatalf("leased again after the acknowledgement of attempt %d: %+v", acked.Attempt, it)
			}
		case <-deadline:
			break quiet
		}
	}
	a.run(id, job.StatusSucceeded)
	e.waitStatus(id, job.StatusSucceeded)
}

// A failed job with retries left runs again after its backoff.
func TestRetryAfterBackoff(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	e.enroll(nil, "n1")
	a := e.connect("n1", eventstore.Cursor{})
	id := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}, Retry: job.RetryPolicy{Max: 1, Backoff: 300 * time.Millisecond}})
	a.next()
	a.start(id)
	a.log(id, "hello from n1")
	// Before the failure is recorded, so that however long its reply takes,
	// the backoff counts from a moment after this one.
	failedAt := time.Now()
	a.finish(id, job.StatusFailed, 1)
	it := a.next()
	if it.Attempt != 2 {
		t.Fatalf("second delivery %+v", it)
	}
	if waited := time.Since(failedAt); waited < 250*time.Millisecond {
		t.Errorf("retried after %s, before its backoff", waited)
	}
	// The second attempt's output continues the log.
	a.run(id, job.StatusFailed)
	j := e.waitStatus(id, job.StatusFailed)
	if j.Attempt != 2 {
		t.Errorf("attempts %d", j.Attempt)
	}
	page, _, err := e.Logs.Page(ctxFor(t), id, 0, 10)
	if err != nil || len(page) != 2 || page[1].Seq != 2 {
		t.Errorf("log %+v, %v", page, err)
	}
	a.quiet(500 * time.Millisecond)
}

// Cancelling a running job tells its agent; the agent reports the job
// cancelled. Cancelling a leased job that did not start ends it at once and
// its start is refused.
func TestCancel(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	e.enroll(nil, "n1")
	a := e.connect("n1", eventstore.Cursor{})
	id := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	lease := a.next()
	a.start(id)
	e.waitStatus(id, job.StatusRunning)
	must(t)(e.Jobs.Cancel(ctxFor(t), dispatchtest.Operator, jobs.Cancel{JobID: id, Reason: "enough"}))
	stop := a.next()
	if stop.Job.ID != id || !stop.CancelRequested || !lease.Cursor.Less(stop.Cursor) {
		t.Fatalf("stop item %+v", stop)
	}
	hb, err := e.Dispatcher.Heartbeat(ctxFor(t), a.caller(), []string{id, "unknown-job"})
	if err != nil || !slices.Equal(hb.CancelJobIDs, []string{id, "unknown-job"}) {
		t.Errorf("heartbeat %+v, %v", hb, err)
	}
	a.finish(id, job.StatusCancelled, -1)
	e.waitStatus(id, job.StatusCancelled)

	queued := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	a.next()
	must(t)(e.Jobs.Cancel(ctxFor(t), dispatchtest.Operator, jobs.Cancel{JobID: queued}))
	if stop := a.next(); !stop.CancelRequested || stop.Job.ID != queued {
		t.Errorf("stop item %+v", stop)
	}
	_, err = e.Dispatcher.Start(ctxFor(t), a.caller(), queued)
	var se *domain.StateError
	if !errors.As(err, &se) {
		t.Errorf("start of a cancelled job: %v", err)
	}
}

// An agent that reconnects from the cursor of the last item it received gets
// the items after it, and nothing it saw; from no cursor it gets every item
// of its open jobs. Long polls see the same feed.
func TestResume(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	e.enroll(nil, "n1")
	a := e.connect("n1", eventstore.Cursor{})
	j1 := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	first := a.next()
	a.start(j1)
	j2 := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	second := a.next()
	must(t)(e.Dispatcher.Acknowledge(ctxFor(t), a.caller(), j2))
	a.close()

	b := e.connect("n1", first.Cursor)
	if it := b.next(); it.Job.ID != j2 || it.Cursor != second.Cursor {
		t.Fatalf("resumed with %+v", it)
	}
	b.quiet(200 * time.Millisecond)
	b.close()

	all := e.connect("n1", eventstore.Cursor{})
	if got := []string{all.next().Job.ID, all.next().Job.ID}; !slices.Equal(got, []string{j1, j2}) {
		t.Fatalf("from the start: %v", got)
	}
	all.close()

	items, cursor, err := e.Dispatcher.Poll(ctxFor(t), "n1", first.Cursor, 0)
	if err != nil || len(items) != 1 || items[0].Job.ID != j2 || cursor != second.Cursor {
		t.Fatalf("poll: %+v, %v, %v", items, cursor, err)
	}
	// A long poll waits for the next lease.
	got := make(chan []dispatch.AgentJob, 1)
	go func() {
		items, _, err := e.Dispatcher.Poll(context.Background(), "n1", cursor, 20*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- items
	}()
	time.Sleep(100 * time.Millisecond)
	j3 := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	select {
	case items := <-got:
		// The lease as it was handed out, though the poll may return
		// before the dispatcher applied its event: an attempt 0 was
		// refused by the agent, which reconnected after a backoff.
		if len(items) != 1 || items[0].Job.ID != j3 || items[0].Attempt != 1 ||
			items[0].Job.Status != job.StatusDispatched || items[0].Job.NodeID != "n1" || items[0].LeaseUntil.IsZero() {
			t.Errorf("long poll returned %+v", items)
		}
	case <-time.After(wait):
		t.Fatal("long poll did not return the new lease")
	}
}

// A node whose agent goes silent is disconnected after the grace period and
// down after the window; its running job pinned to it is lost, while a job
// that any node could run is retried on another. The node that comes back
// is the same node.
func TestNodeDown(t *testing.T) {
	t.Parallel()
	opts := fastOptions()
	opts.DisconnectAfter, opts.DownAfter = time.Second, time.Second
	e := start(t, opts)
	e.enroll(map[string]string{"pool": "a"}, "n1", "n2")
	a1 := e.connect("n1", eventstore.Cursor{})
	pinned := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}, Retry: job.RetryPolicy{Max: 2}})
	a1.next()
	a1.start(pinned)
	// Only n1 is connected, so the selector job lands there too.
	movable := e.submit(jobs.Submit{Spec: echo, Target: job.Target{Selector: map[string]string{"pool": "a"}, Mode: job.ModeAny}, Retry: job.RetryPolicy{Max: 1}})
	a1.next()
	a1.start(movable)
	// Two more leased to it and not started, one of them acknowledged:
	// their leases (a minute) outlast the test, and end when the node is
	// marked down. A repair waiting on such a job waited out the lease
	// after the node was known to be gone.
	leased := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	a1.next()
	acked := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	a1.next()
	if _, err := e.Dispatcher.Acknowledge(ctxFor(t), a1.caller(), acked); err != nil {
		t.Fatal(err)
	}
	a1.close()

	eventually(t, "n1 down", func() bool { return e.node("n1").Status == node.StatusDown })
	// A job pinned to the node, submitted while it is down, is cancelled
	// saying why rather than waiting for ever (a repair placing work there
	// would wait with it).
	late := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	if j := e.waitStatus(late, job.StatusCancelled); !strings.Contains(j.CancelReason, "is down") {
		t.Errorf("a job for a down node: %+v", j)
	}
	for _, id := range []string{pinned, leased, acked} {
		if lost := e.waitStatus(id, job.StatusLost); lost.LostReason == "" {
			t.Errorf("lost without a reason: %+v", lost)
		}
	}
	eventually(t, "movable job back in the queue", func() bool {
		j := e.job(movable)
		t.Logf("movable: %s attempt %d", j.Status, j.Attempt)
		return j.Status == job.StatusQueued
	})
	a2 := e.connect("n2", eventstore.Cursor{})
	if it := a2.next(); it.Job.ID != movable || it.Attempt != 2 {
		t.Fatalf("n2 received %+v", it)
	}
	// n1 returns: online again, same node, and told to stop its stale job.
	back := e.connect("n1", eventstore.Cursor{})
	eventually(t, "n1 back online", func() bool { return e.node("n1").Status == node.StatusOnline })
	hb, err := e.Dispatcher.Heartbeat(ctxFor(t), back.caller(), []string{pinned, movable})
	if err != nil || !slices.Equal(hb.CancelJobIDs, []string{pinned, movable}) {
		t.Errorf("heartbeat %+v, %v", hb.CancelJobIDs, err)
	}
	if _, err := e.Dispatcher.Finish(ctxFor(t), back.caller(), pinned, job.StatusSucceeded, job.Result{}); err == nil {
		t.Error("a lost job took a late result")
	}
}

// An agent acts only for its own node's jobs, and a decommissioned node's
// agent is refused.
func TestAgentRefusals(t *testing.T) {
	t.Parallel()
	// The lease lasts a minute: the job below ends because its node was
	// decommissioned, not because the lease ran out.
	e := start(t, fastOptions())
	e.enroll(nil, "n1", "n2")
	a1 := e.connect("n1", eventstore.Cursor{})
	id := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	a1.next()
	other := dispatch.Caller{NodeID: "n2"}
	if _, err := e.Dispatcher.Start(ctxFor(t), other, id); !isA[*job.LeaseError](err) {
		t.Errorf("start from another node: %v", err)
	}
	chunk := []joblogs.Chunk{{Seq: 1, Stream: joblogs.StreamStdout, Data: "x", Time: time.Now()}}
	if _, err := e.Dispatcher.AppendLog(ctxFor(t), other, id, chunk); !isA[*job.LeaseError](err) {
		t.Errorf("log from another node: %v", err)
	}
	if _, err := e.Dispatcher.AppendLog(ctxFor(t), a1.caller(), "no-such-job", chunk); !isA[*domain.NotFoundError](err) {
		t.Errorf("log of an unknown job: %v", err)
	}
	bad := []joblogs.Chunk{{Seq: 0, Stream: joblogs.StreamStdout, Data: "x", Time: time.Now()}}
	if _, err := e.Dispatcher.AppendLog(ctxFor(t), a1.caller(), id, bad); !isA[*domain.ValidationError](err) {
		t.Errorf("chunk with seq 0: %v", err)
	}
	if _, err := e.Jobs.Submit(ctxFor(t), dispatchtest.Operator, jobs.Submit{Spec: echo, Target: job.Target{NodeID: "ghost"}, Timeout: time.Minute}); !isA[*domain.NotFoundError](err) {
		t.Errorf("job for a node that does not exist: %v", err)
	}
	waiting := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n2"}})
	must(t)(e.Nodes.Decommission(ctxFor(t), dispatchtest.Operator, nodes.Decommission{NodeID: "n2"}))
	// Still queued, it is cancelled saying why; leased already (the node was
	// within its grace period to connect), its lease ends at once as lost.
	var j job.Job
	eventually(t, "job for a decommissioned node ended", func() bool {
		j = e.job(waiting)
		return j.Status == job.StatusCancelled || j.Status == job.StatusLost
	})
	if j.Status == job.StatusCancelled && !strings.Contains(j.CancelReason, "decommissioned") {
		t.Errorf("job for a decommissioned node: %+v", j)
	}
	eventually(t, "n2 decommissioned", func() bool {
		_, err := e.Dispatcher.Subscribe(ctxFor(t), "n2", eventstore.Cursor{})
		return isA[*dispatch.NodeGoneError](err)
	})
	if _, err := e.Dispatcher.Subscribe(ctxFor(t), "ghost", eventstore.Cursor{}); !isA[*domain.NotFoundError](err) {
		t.Errorf("feed of an unknown node: %v", err)
	}
}

// A restarted dispatcher rebuilds its state from the log: open leases are
// still delivered, and work goes on.
func TestRestart(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	e := startOn(t, db, fastOptions())
	e.enroll(nil, "n1")
	a := e.connect("n1", eventstore.Cursor{})
	running := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	first := a.next()
	a.start(running)
	a.close()
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}

	e2 := startOn(t, db, fastOptions())
	b := e2.connect("n1", eventstore.Cursor{})
	if it := b.next(); it.Job.ID != running || it.Cursor != first.Cursor {
		t.Fatalf("after restart: %+v", it)
	}
	b.log(running, "still running")
	b.finish(running, job.StatusSucceeded, 0)
	e2.waitStatus(running, job.StatusSucceeded)
}

// Many agents connected at once each get their own jobs, exactly once.
func TestManyAgents(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	const n = 20
	var ids []string
	for i := range n {
		ids = append(ids, "m"+string(rune('a'+i)))
	}
	e.enroll(map[string]string{"fleet": "yes"}, ids...)
	var agents []*agent
	for _, id := range ids {
		agents = append(agents, e.connect(id, eventstore.Cursor{}))
	}
	eventually(t, "fleet online", func() bool {
		for _, id := range ids {
			if e.node(id).Status != node.StatusOnline {
				return false
			}
		}
		return true
	})
	parent := e.submit(jobs.Submit{Spec: echo, Target: job.Target{Selector: map[string]string{"fleet": "yes"}, Mode: job.ModeAll}})
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case it := <-a.items:
				if _, err := e.Dispatcher.Start(context.Background(), a.caller(), it.Job.ID); err != nil {
					t.Error(err)
					return
				}
				if _, err := e.Dispatcher.Finish(context.Background(), a.caller(), it.Job.ID, job.StatusSucceeded, job.Result{}); err != nil {
					t.Error(err)
				}
			case <-time.After(wait):
				t.Errorf("%s got nothing", a.nodeID)
			}
		}()
	}
	wg.Wait()
	p := e.waitStatus(parent, job.StatusSucceeded)
	if p.Counts.Succeeded != n {
		t.Errorf("counts %+v", p.Counts)
	}
	for _, a := range agents {
		a.quiet(0)
	}
}

// A fleet larger than the heartbeat budget is asked to beat less often, so
// that its heartbeats cost the server a bounded rate; a small one keeps the
// configured interval.
func TestHeartbeatIntervalStretchesWithTheFleet(t *testing.T) {
	t.Parallel()
	opts := fastOptions()
	opts.MaxHeartbeatsPerSecond = 4
	e := start(t, opts)
	e.enroll(nil, "n0")
	a := e.connect("n0", eventstore.Cursor{})
	hb, err := e.Dispatcher.Heartbeat(ctxFor(t), a.caller(), nil)
	if err != nil || hb.Interval != opts.HeartbeatInterval {
		t.Fatalf("one node: heartbeat %+v, %v; want the interval %s", hb, err, opts.HeartbeatInterval)
	}
	var more []string
	for i := 1; i < 40; i++ {
		more = append(more, fmt.Sprintf("n%d", i))
	}
	e.enroll(nil, more...)
	eventually(t, "a 40-node fleet to be asked for a heartbeat every 10 s", func() bool {
		hb, err := e.Dispatcher.Heartbeat(ctxFor(t), a.caller(), nil)
		return err == nil && hb.Interval == 10*time.Second
	})
}

// presenceCounter counts how often each node is published as connected.
type presenceCounter struct {
	dispatch.Presence
	mu        sync.Mutex
	published map[string]int
	rounds    int
}

func (p *presenceCounter) Publish(ctx context.Context, nodeIDs []string) error {
	p.mu.Lock()
	p.rounds++
	for _, id := range nodeIDs {
		p.published[id]++
	}
	p.mu.Unlock()
	return p.Presence.Publish(ctx, nodeIDs)
}

func (p *presenceCounter) counts() (rounds, published int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rounds, p.published["n0"]
}

// A replica writes that an agent is connected to it about every other round
// of its exchange with the others (every heartbeat interval), not every
// round: the row stays fresh for the others either way.
func TestPresenceIsWrittenEveryInterval(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	opts := fastOptions()
	counter := &presenceCounter{Presence: cluster.NewPresence(db.AppPool(t), "replica-a"), published: map[string]int{}}
	d, err := dispatchtest.StartReplica(db.AppPool(t), opts, nil, counter, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := d.WaitReady(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	e := env{Env: d, t: t}
	e.enroll(nil, "n0")
	e.connect("n0", eventstore.Cursor{})
	time.Sleep(10 * opts.HeartbeatInterval)
	rounds, published := counter.counts()
	t.Logf("%d rounds, node written %d times", rounds, published)
	if published == 0 || rounds < 12 {
		t.Fatalf("%d rounds of presence, the connected node written %d times", rounds, published)
	}
	if published > rounds*2/3 {
		t.Errorf("the connected node was written in %d of %d rounds of presence: every round", published, rounds)
	}
}
