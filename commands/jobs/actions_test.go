package jobs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/commands/commandstest"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/eventstore"
	"cairn/plugins"
	"cairn/plugins/agent"
	"cairn/projections"
	"cairn/projections/models"
	"cairn/projections/readmodel"
	"cairn/sal"
	"cairn/sal/catalog"
)

// fakeAgent stands for node n1's agent: it takes each job submitted for the
// node, reports it leased, acknowledged and started through the job
// commands, runs it on this machine's SAL, and reports how it ended.
func fakeAgent(ctx context.Context, t *testing.T, store *eventstore.Store, h *jobs.Handlers, sys *sal.System) {
	meta := commands.Meta{Actor: "n1"}
	_ = store.Subscribe(ctx, eventstore.SubscribeOptions{Filter: eventstore.Filter{EventTypes: []string{"job.submitted"}}},
		func(ctx context.Context, b eventstore.Batch) error {
			for _, rec := range b.Events {
				id, _ := domain.EntityID(domain.JobStream, rec.StreamID)
				j, _, err := commands.Load[job.Job](ctx, store, domain.JobStream, id)
				if err != nil || j.Target.NodeID != "n1" {
					continue
				}
				for _, step := range []func() (commands.Outcome, error){
					func() (commands.Outcome, error) { return h.Lease(ctx, meta, jobs.Lease{JobID: id, NodeID: "n1"}) },
					func() (commands.Outcome, error) {
						return h.Acknowledge(ctx, meta, jobs.Acknowledge{JobID: id, NodeID: "n1"})
					},
					func() (commands.Outcome, error) { return h.Start(ctx, meta, jobs.Start{JobID: id, NodeID: "n1"}) },
				} {
					if _, err := step(); err != nil {
						t.Errorf("agent: job %s: %v", id, err)
						return err
					}
				}
				fin := jobs.Finish{JobID: id, NodeID: "n1", Outcome: job.StatusSucceeded}
				// As the API's agent feed does: the agent a job is leased to
				// gets its secrets in clear.
				spec, err := h.Reveal(j.Spec)
				if err != nil {
					t.Errorf("agent: reveal %s: %v", id, err)
					return err
				}
				out, err := sys.Invoke(ctx, spec.Action, spec.Args)
				if err != nil {
					fin.Outcome, fin.Result = job.StatusFailed, job.Result{ExitCode: 1, Error: err.Error()}
				} else {
					fin.Result = job.Result{Output: out}
				}
				if _, err := h.Finish(ctx, meta, fin); err != nil {
					t.Errorf("agent: finish %s: %v", id, err)
					return err
				}
			}
			return nil
		})
}

// The agent plugin on a node of the cluster: placed from the nodes read
// model, every action a job in the log, run by the node's agent.
func TestAgentPluginThroughJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, pool := commandstest.NewStoreWithPool(t)
	clock := time.Now
	nh := nodes.NewHandlers(store, clock, commandstest.IDs("node"))
	if _, err := nh.Enroll(ctx, commands.Meta{Actor: "operator"}, nodes.Enroll{NodeID: "n1", Hostname: "n1.example.org", Labels: map[string]string{"role": "web"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := nh.Enroll(ctx, commands.Meta{Actor: "operator"}, nodes.Enroll{NodeID: "n2", Hostname: "n2.example.org", Labels: map[string]string{"role": "web"}}); err != nil {
		t.Fatal(err)
	}
	res, err := nh.Connect(ctx, commands.Meta{Actor: "n1"}, nodes.Connect{NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}

	// The nodes read model: n1 is online, n2 never connected.
	runner := projections.NewRunner(store, pool, projections.Options{Log: zerolog.Nop()})
	if err := runner.Register(models.All()...); err != nil {
		t.Fatal(err)
	}
	pctx, stopProjections := context.WithCancel(ctx)
	pdone := make(chan struct{})
	go func() { defer close(pdone); _ = runner.Run(pctx) }()
	t.Cleanup(func() { stopProjections(); <-pdone })
	// Setting up every read model first: generous for a loaded machine.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := runner.WaitFor(wctx, res.Cursor); err != nil {
		t.Fatal(err)
	}
	lister := readmodel.AgentNodes{Reader: readmodel.New(pool)}
	cands, err := lister.Candidates(ctx)
	if err != nil || len(cands) != 1 || cands[0].ID != "n1" || cands[0].Labels["role"] != "web" {
		t.Fatalf("candidates %+v %v", cands, err)
	}

	root := t.TempDir()
	sys, err := sal.New(sal.Config{FileRoots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	validator, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	jh := jobs.NewHandlers(store, clock, commandstest.IDs("job"), validator, commandstest.Sealer())
	actx, stopAgent := context.WithCancel(ctx)
	adone := make(chan struct{})
	go func() { defer close(adone); fakeAgent(actx, t, store, jh, sys) }()
	t.Cleanup(func() { stopAgent(); <-adone })

	p, err := agent.New(agent.Config{Runner: jobs.NewActionRunner(jh, store, jobs.ActionRunnerOptions{MaxPoll: 20 * time.Millisecond}), Nodes: lister})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "site")
	req := plugins.Request{ResourceID: "r1", Type: agent.TypeDirectory, Properties: []byte(`{"path":"` + dir + `"}`),
		Placement: &plugins.Placement{Labels: map[string]string{"role": "web"}}}
	out, err := p.Create(ctx, req)
	if err != nil || !strings.Contains(string(out), `"node":"n1"`) {
		t.Fatalf("create: %s %v", out, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("directory: %v", err)
	}
	var mkdirJobs int
	for _, id := range []string{"job-1", "job-2"} {
		j, _, _ := commands.Load[job.Job](ctx, store, domain.JobStream, id)
		if j.Spec.Action == catalog.ActionFileMkdir && j.Status == job.StatusSucceeded && j.Submitter == jobs.ActionActor {
			mkdirJobs++
		}
	}
	if mkdirJobs != 1 {
		t.Fatal("the directory was not made by a recorded job")
	}

	// A failing action comes back as the job's error.
	req.Properties = []byte(`{"path":"/not/in/the/roots","node":"n1"}`)
	_, err = p.Create(ctx, req)
	var je *jobs.JobError
	if !errors.As(err, &je) || je.Status != job.StatusFailed || !strings.Contains(err.Error(), "/not/in/the/roots") {
		t.Fatalf("failing job: %v", err)
	}
	// A file whose content holds a sensitive variable: written in clear on
	// the node, sealed everywhere else, and the job is the tenant's.
	const secret = "correct-horse-battery-staple"
	page := filepath.Join(dir, "credentials")
	file := plugins.Request{ResourceID: "r2", Type: agent.TypeFile, Sensitive: true, TenantID: "acme",
		Properties: []byte(`{"node":"n1","path":"` + page + `","content":"token=` + secret + `"}`)}
	if _, err := p.Create(ctx, file); err != nil {
		t.Fatalf("create the sensitive file: %v", err)
	}
	if b, err := os.ReadFile(page); err != nil || string(b) != "token="+secret {
		t.Fatalf("the file on the node: %q %v", b, err)
	}
	if n := commandstest.CountContaining(t, store, secret); n != 0 {
		t.Errorf("%d events hold the sensitive value in clear", n)
	}
	var writes int
	for _, rec := range commandstest.Events(t, store, eventstore.Filter{EventTypes: []string{"job.submitted"}}) {
		id, _ := domain.EntityID(domain.JobStream, rec.StreamID)
		j, _, _ := commands.Load[job.Job](ctx, store, domain.JobStream, id)
		if j.Spec.Action != catalog.ActionFileWrite {
			continue
		}
		writes++
		if !j.Spec.Sealed() || strings.Contains(string(j.Spec.Args), "token=") {
			t.Errorf("job %s carries args %s, sealed %v", id, j.Spec.Args, j.Spec.Sealed())
		}
		if rec.Metadata.Tenant != "acme" {
			t.Errorf("job %s belongs to tenant %q, not the service's (acme)", id, rec.Metadata.Tenant)
		}
	}
	if writes != 1 {
		t.Errorf("%d file.write jobs, want 1", writes)
	}
	if err := os.Remove(page); err != nil {
		t.Fatal(err)
	}

	req.Outputs = out
	req.Properties = []byte(`{"path":"` + dir + `"}`)
	if _, err := p.Destroy(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory left: %v", err)
	}
}
