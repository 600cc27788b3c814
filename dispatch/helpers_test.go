package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands"
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

func TestMain(m *testing.M) { testdb.Main(m) }

// wait is how long a test waits for something that should happen at once:
// generous, because the machines that run the tests are loaded.
const wait = 30 * time.Second

// fastOptions make the dispatcher look at time-based work often. Leases and
// a node's silence last long, so that a loaded machine, however slow between
// two steps of a test, does not expire a lease or take a node for down by
// accident; the tests about expiry and liveness shorten them for themselves.
func fastOptions() dispatch.Options {
	return dispatch.Options{
		Lease:             time.Minute,
		HeartbeatInterval: 300 * time.Millisecond,
		DisconnectAfter:   time.Minute,
		DownAfter:         time.Minute,
		Tick:              50 * time.Millisecond,
	}
}

type env struct {
	*dispatchtest.Env
	t *testing.T
}

func start(t *testing.T, opts dispatch.Options) env {
	t.Helper()
	db := testdb.New(t)
	return startOn(t, db, opts)
}

func startOn(t *testing.T, db testdb.DB, opts dispatch.Options) env {
	t.Helper()
	e, err := dispatchtest.Start(db.AppPool(t), opts, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := e.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return env{Env: e, t: t}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// enroll enrolls nodes by hand with labels.
func (e env) enroll(labels map[string]string, ids ...string) {
	e.t.Helper()
	for _, id := range ids {
		must(e.t)(e.Nodes.Enroll(ctxFor(e.t), dispatchtest.Operator, nodes.Enroll{NodeID: id, Hostname: id, Labels: labels}))
	}
}

func (e env) submit(in jobs.Submit) string {
	e.t.Helper()
	if in.Timeout == 0 {
		in.Timeout = time.Minute
	}
	out, err := e.Jobs.Submit(ctxFor(e.t), dispatchtest.Operator, in)
	if err != nil {
		e.t.Fatal(err)
	}
	return out.ID
}

func (e env) job(id string) job.Job {
	e.t.Helper()
	j, _, err := commands.Load[job.Job](ctxFor(e.t), e.Store, domain.JobStream, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

func (e env) node(id string) node.Node {
	e.t.Helper()
	n, _, err := commands.Load[node.Node](ctxFor(e.t), e.Store, domain.NodeStream, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// eventually waits until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitOnline waits until the nodes are recorded online.
func (e env) waitOnline(ids ...string) {
	e.t.Helper()
	eventually(e.t, "nodes online", func() bool {
		for _, id := range ids {
			if e.node(id).Status != node.StatusOnline {
				return false
			}
		}
		return true
	})
}

func (e env) waitStatus(id string, want job.Status) job.Job {
	e.t.Helper()
	var j job.Job
	eventually(e.t, fmt.Sprintf("job %s %s", id, want), func() bool {
		j = e.job(id)
		return j.Status == want
	})
	return j
}

// agent is a simulated agent: a subscription whose items land in a channel.
type agent struct {
	t      *testing.T
	e      env
	nodeID string
	stream *dispatch.Stream
	items  chan dispatch.AgentJob
	errs   chan error
	cancel context.CancelFunc
}

func (e env) connect(nodeID string, after eventstore.Cursor) *agent {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := e.Dispatcher.Subscribe(ctxFor(e.t), nodeID, after)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	a := &agent{t: e.t, e: e, nodeID: nodeID, stream: s, items: make(chan dispatch.AgentJob, 100), errs: make(chan error, 1), cancel: cancel}
	go func() {
		for {
			it, err := s.Next(ctx)
			if err != nil {
				a.errs <- err
				return
			}
			a.items <- it
		}
	}()
	e.t.Cleanup(a.close)
	return a
}

func (a *agent) close() {
	a.cancel()
	a.stream.Close()
}

func (a *agent) next() dispatch.AgentJob {
	a.t.Helper()
	select {
	case it := <-a.items:
		return it
	case err := <-a.errs:
		a.t.Fatalf("feed of %s ended: %v", a.nodeID, err)
	case <-time.After(wait):
		a.t.Fatalf("node %s received nothing", a.nodeID)
	}
	return dispatch.AgentJob{}
}

// quiet checks that nothing arrives for a while.
func (a *agent) quiet(d time.Duration) {
	a.t.Helper()
	select {
	case it := <-a.items:
		a.t.Fatalf("node %s received job %s (cancel %v) unexpectedly", a.nodeID, it.Job.ID, it.CancelRequested)
	case <-time.After(d):
	}
}

func (a *agent) caller() dispatch.Caller { return dispatch.Caller{NodeID: a.nodeID} }

func (a *agent) start(jobID string) {
	a.t.Helper()
	must(a.t)(a.e.Dispatcher.Start(ctxFor(a.t), a.caller(), jobID))
}

func (a *agent) log(jobID string, lines ...string) {
	a.t.Helper()
	var chunks []joblogs.Chunk
	for i, l := range lines {
		chunks = append(chunks, joblogs.Chunk{Seq: int64(i + 1), Stream: joblogs.StreamStdout, Data: l + "\n", Time: time.Now()})
	}
	if _, err := a.e.Dispatcher.AppendLog(ctxFor(a.t), a.caller(), jobID, chunks); err != nil {
		a.t.Fatal(err)
	}
}

func (a *agent) finish(jobID string, outcome job.Status, exit int) {
	a.t.Helper()
	must(a.t)(a.e.Dispatcher.Finish(ctxFor(a.t), a.caller(), jobID, outcome, job.Result{ExitCode: exit}))
}

// run starts, logs and finishes a job.
func (a *agent) run(jobID string, outcome job.Status) {
	a.t.Helper()
	a.start(jobID)
	a.log(jobID, "hello from "+a.nodeID)
	exit := 0
	if outcome != job.StatusSucceeded {
		exit = 1
	}
	a.finish(jobID, outcome, exit)
}

func must(t *testing.T) func(commands.Outcome, error) {
	return func(_ commands.Outcome, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

var echo = job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"echo", "hi"}}}

func isA[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}
