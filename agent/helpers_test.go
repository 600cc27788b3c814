package agent_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/agent"
	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/jobs"
	"cairn/dispatch"
	"cairn/dispatch/dispatchtest"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/graph"
	"cairn/graph/graphtest"
	"cairn/internal/testdb"
	"cairn/joblogs"
)

// runJobFlag makes the test binary a job runner, as cairn-agent's hidden
// run-job subcommand is.
const runJobFlag = "-cairn-run-job"

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == runJobFlag {
		if err := agent.RunJob(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testdb.Main(m)
}

const wait = 60 * time.Second

type server struct {
	*dispatchtest.Env
	api *graphtest.API
	t   *testing.T
}

func startServer(t *testing.T) *server {
	t.Helper()
	db := testdb.New(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	// No test here wants a node to go down; an agent restarted on a loaded
	// machine may be silent for a while, which must not give up its jobs.
	e, err := dispatchtest.Start(db.AppPool(t), dispatch.Options{
		HeartbeatInterval: time.Second, DisconnectAfter: time.Minute, DownAfter: time.Minute,
		Lease: 20 * time.Second, Tick: 50 * time.Millisecond,
	}, log)
	if err != nil {
		t.Fatal(err)
	}
	api, err := graphtest.ServeJobSide(e, graph.Config{}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		api.Close()
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	return &server{Env: e, api: api, t: t}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

func (s *server) joinToken(labels map[string]string) string {
	s.t.Helper()
	out, err := s.Access.IssueJoinToken(ctxFor(s.t), dispatchtest.Operator, access.IssueJoinToken{Labels: labels})
	if err != nil {
		s.t.Fatal(err)
	}
	return out.Token
}

type runningAgent struct {
	*agent.Agent
	cfg    agent.Config
	cancel context.CancelFunc
	done   chan error
}

// startAgent runs an agent in this process; its jobs run in runner
// processes (this test binary, see TestMain).
func (s *server) startAgent(cfg agent.Config) *runningAgent {
	s.t.Helper()
	cfg.Server = s.api.URL
	if cfg.DataDir == "" {
		cfg.DataDir = s.t.TempDir()
	}
	if cfg.FileRoots == nil {
		cfg.FileRoots = []string{s.t.TempDir()}
	}
	cfg.RunnerCommand = []string{os.Args[0], runJobFlag}
	cfg.MinBackoff, cfg.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond
	cfg.StatsInterval, cfg.StatsBatch = 200*time.Millisecond, 2
	cfg.Log = zerolog.New(zerolog.NewTestWriter(s.t)).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	a, err := agent.New(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ra := &runningAgent{Agent: a, cfg: cfg, cancel: cancel, done: make(chan error, 1)}
	go func() { ra.done <- a.Run(ctx) }()
	s.t.Cleanup(ra.stop)
	return ra
}

func (ra *runningAgent) stop() {
	ra.cancel()
	<-ra.done
	ra.done <- nil
}

// nodeOnline waits until the agent enrolled and its node is online.
func (s *server) nodeOnline(ra *runningAgent) string {
	s.t.Helper()
	var id string
	eventually(s.t, "agent online", func() bool {
		if id = ra.NodeID(); id == "" {
			return false
		}
		n, _, err := commands.Load[node.Node](ctxFor(s.t), s.Store, domain.NodeStream, id)
		return err == nil && n.Status == node.StatusOnline
	})
	return id
}

func (s *server) submit(in jobs.Submit) string {
	s.t.Helper()
	if in.Timeout == 0 {
		in.Timeout = time.Minute
	}
	if in.Grace == 0 {
		in.Grace = time.Second
	}
	out, err := s.Jobs.Submit(ctxFor(s.t), dispatchtest.Operator, in)
	if err != nil {
		s.t.Fatal(err)
	}
	return out.ID
}

func (s *server) job(id string) job.Job {
	s.t.Helper()
	j, _, err := commands.Load[job.Job](ctxFor(s.t), s.Store, domain.JobStream, id)
	if err != nil {
		s.t.Fatal(err)
	}
	return j
}

// ended waits until the job ended for good and returns it.
func (s *server) ended(id string) job.Job {
	s.t.Helper()
	var j job.Job
	eventually(s.t, "job "+id+" ended", func() bool {
		j = s.job(id)
		return j.Terminal()
	})
	return j
}

// output returns the job's stored output of one stream, joined.
func (s *server) output(id string, stream joblogs.Stream) string {
	s.t.Helper()
	page, _, err := s.Logs.Page(ctxFor(s.t), id, 0, joblogs.MaxPage)
	if err != nil {
		s.t.Fatal(err)
	}
	var b strings.Builder
	for i, c := range page {
		if c.Seq != int64(i+1) {
			s.t.Fatalf("job %s output has seq %d at position %d", id, c.Seq, i+1)
		}
		if stream == "" || c.Stream == stream {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func script(body string) job.Spec {
	return job.Spec{Kind: job.KindScript, Script: &job.Script{Interpreter: "sh", Body: body}}
}
