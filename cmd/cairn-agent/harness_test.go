package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	gqlclient "cairn/graph/client"
	"cairn/internal/testdb"
	"cairn/internal/testproc"
)

// The end-to-end tests run the real binaries: cairnd on a test database and
// cairn-agent processes enrolled to it, talking over real HTTP and
// WebSockets.

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	code := func() int {
		defer func() {
			if binDir != "" {
				os.RemoveAll(binDir)
			}
		}()
		testdb.Main(m)
		return 0
	}()
	os.Exit(code)
}

// binaries builds cairnd and cairn-agent once per test run.
func binaries(t *testing.T) (cairnd, cairnAgent string) {
	t.Helper()
	buildAll(t)
	return filepath.Join(binDir, "cairnd"), filepath.Join(binDir, "cairn-agent")
}

// cliBinary is the cairn command-line client.
func cliBinary(t *testing.T) string {
	t.Helper()
	buildAll(t)
	return filepath.Join(binDir, "cairn")
}

func buildAll(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds cairnd and cairn-agent and runs them")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "cairn-e2e-bin-")
		if binErr != nil {
			return
		}
		binErr = testproc.Build(binDir, "cairnd", "cairn-agent", "cairn")
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
}

const wait = 60 * time.Second

// proc is a process a test started: stop fails the test when SIGTERM does
// not end it within wait.
type proc struct {
	*testproc.Process
	t *testing.T
}

func start(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	return &proc{Process: testproc.Start(t, name, env, args...), t: t}
}

func (p *proc) output() string { return p.Output() }

// kill ends the process at once, as a crash would.
func (p *proc) kill() { p.Kill() }

// stop ends the process with SIGTERM and waits for it.
func (p *proc) stop() {
	if p.Stop(wait) != nil && p.Running() {
		p.t.Errorf("%s still runs a minute after SIGTERM", p.Name)
	}
}

// controlPlane is a cairnd process on a test database.
type controlPlane struct {
	t     *testing.T
	db    testdb.DB
	addr  string
	dir   string
	proc  *proc
	token string   // the bootstrap admin's
	extra []string // more flags of cairnd serve
}

var adminToken = regexp.MustCompile(`cairn_[A-Za-z0-9._:-]+_[a-z2-7]{40,}`)

func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	cp := &controlPlane{t: t, db: testdb.New(t), addr: testproc.FreeAddr(t), dir: t.TempDir()}
	cp.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cairnd log:\n%s", cp.proc.output())
		}
	})
	return cp
}

func (cp *controlPlane) start() {
	t := cp.t
	t.Helper()
	cairnd, _ := binaries(t)
	args := append([]string{"serve", "--listen", cp.addr, "--data-dir", cp.dir, "--log-format", "json",
		// No test here wants a node to go down: an agent or a control plane
		// restarted on a loaded machine may be away a while.
		"--heartbeat-interval", "2s", "--disconnect-after", "2m", "--down-after", "2m"}, cp.extra...)
	cp.proc = start(t, cairnd, []string{"DATABASE_URL=" + cp.db.ConnString}, args...)
	deadline := time.Now().Add(wait)
	for {
		select {
		case <-cp.proc.Exited():
			t.Fatalf("cairnd exited: %v\n%s", cp.proc.Err(), cp.proc.output())
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + cp.addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("cairnd not ready\n%s", cp.proc.output())
		}
	}
	if cp.token == "" {
		cp.token = adminToken.FindString(cp.proc.output())
		if cp.token == "" {
			t.Fatalf("cairnd printed no admin token\n%s", cp.proc.output())
		}
	}
}

func (cp *controlPlane) url() string { return "http://" + cp.addr }

// with returns the control plane as seen by a subtest: its helpers then
// fail that subtest.
func (cp *controlPlane) with(t *testing.T) *controlPlane {
	c := *cp
	c.t = t
	return &c
}

// gql sends an operation as the admin and decodes data into out.
func (cp *controlPlane) gql(query string, vars map[string]any, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return gqlclient.New(cp.url(), cp.token, nil).Do(ctx, query, vars, out)
}

func (cp *controlPlane) mustGQL(query string, vars map[string]any, out any) {
	cp.t.Helper()
	if err := cp.gql(query, vars, out); err != nil {
		cp.t.Fatal(err)
	}
}

func (cp *controlPlane) joinToken(labels map[string]string) string {
	cp.t.Helper()
	var ls []map[string]string
	for k, v := range labels {
		ls = append(ls, map[string]string{"key": k, "value": v})
	}
	var out struct {
		CreateJoinToken struct{ Token string } `json:"createJoinToken"`
	}
	cp.mustGQL(`mutation($l: [LabelInput!]) { createJoinToken(input: {labels: $l}) { token } }`, map[string]any{"l": ls}, &out)
	return out.CreateJoinToken.Token
}

// agentProc is a cairn-agent process and its data directory.
type agentProc struct {
	*proc
	dataDir, fileRoot, transport string
	cp                           *controlPlane
}

func (cp *controlPlane) startAgent(transport string, labels map[string]string) *agentProc {
	cp.t.Helper()
	a := &agentProc{dataDir: filepath.Join(cp.t.TempDir(), "agent"), fileRoot: cp.t.TempDir(), transport: transport, cp: cp}
	a.run(cp.joinToken(labels))
	cp.t.Cleanup(func() {
		if cp.t.Failed() {
			cp.t.Logf("agent %s log:\n%s", a.dataDir, a.output())
		}
	})
	return a
}

func (a *agentProc) run(joinToken string) {
	_, bin := binaries(a.cp.t)
	env := []string{}
	if joinToken != "" {
		env = append(env, "CAIRN_JOIN_TOKEN="+joinToken)
	}
	a.proc = start(a.cp.t, bin, env, "--server", a.cp.url(), "--data-dir", a.dataDir, "--file-root", a.fileRoot,
		"--transport", a.transport, "--log-format", "json", "--log-level", "debug", "--stats-interval", "1s", "--stats-batch", "2")
}

// nodeID waits for the agent's enrollment and returns its node.
func (a *agentProc) nodeID() string {
	t := a.cp.t
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		b, err := os.ReadFile(filepath.Join(a.dataDir, "credential"))
		if err == nil {
			cred := strings.TrimSpace(string(b))
			rest := strings.TrimPrefix(cred, "cairn_node.")
			return rest[:strings.LastIndexByte(rest, '_')]
		}
		select {
		case <-a.Exited():
			t.Fatalf("cairn-agent exited: %v\n%s", a.Err(), a.output())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("cairn-agent did not enroll\n%s", a.output())
		}
	}
}

// waitOnline waits until every node is online: the last of its connection
// events is node.connected.
func (cp *controlPlane) waitOnline(ids ...string) {
	cp.t.Helper()
	for _, id := range ids {
		eventually(cp.t, "node "+id+" online", func() bool {
			types, err := cp.streamEvents("node-" + id)
			if err != nil {
				return false
			}
			last := ""
			for _, typ := range types {
				switch typ {
				case "node.connected", "node.disconnected", "node.went_down":
					last = typ
				}
			}
			return last == "node.connected"
		})
	}
}

// streamEvents lists the types of a stream's events, oldest first.
func (cp *controlPlane) streamEvents(stream string) ([]string, error) {
	var out struct {
		Events struct {
			Edges []struct{ Node struct{ Type string } }
		}
	}
	err := cp.gql(`query($s: String!) { events(first: 500, filter: {streamIds: [$s]}) { edges { node { type } } } }`,
		map[string]any{"s": stream}, &out)
	var types []string
	for _, e := range out.Events.Edges {
		types = append(types, e.Node.Type)
	}
	return types, err
}

type jobView struct {
	ID      string
	Status  string
	Attempt int
	NodeID  *string
	Result  *struct {
		ExitCode int
		Error    *string
	}
	Counts   *struct{ Succeeded, Failed int }
	Children struct {
		TotalCount int
		Edges      []struct {
			Node struct {
				ID, Status string
				NodeID     *string
			}
		}
	}
	Log struct {
		Edges []struct {
			Node struct {
				Seq          int
				Stream, Data string
			}
		}
	}
}

const jobQuery = `query($id: ID!) { job(id: $id) { id status attempt nodeId result { exitCode error } counts { succeeded failed }
  children(first: 100) { totalCount edges { node { id status nodeId } } }
  log(first: 500) { edges { node { seq stream data } } } } }`

func (cp *controlPlane) job(id string) jobView {
	cp.t.Helper()
	var out struct{ Job *jobView }
	cp.mustGQL(jobQuery, map[string]any{"id": id}, &out)
	if out.Job == nil {
		cp.t.Fatalf("job %s not found", id)
	}
	return *out.Job
}

var terminal = map[string]bool{"SUCCEEDED": true, "FAILED": true, "TIMED_OUT": true, "CANCELLED": true, "LOST": true}

func (cp *controlPlane) ended(id string) jobView {
	cp.t.Helper()
	var j jobView
	eventually(cp.t, "job "+id+" ended", func() bool {
		var out struct{ Job *jobView }
		if err := cp.gql(jobQuery, map[string]any{"id": id}, &out); err != nil || out.Job == nil {
			return false
		}
		j = *out.Job
		return terminal[j.Status]
	})
	return j
}

// output joins a job's stored output of one stream ("" for all), checking
// that its chunks are numbered without gaps.
func (cp *controlPlane) output(j jobView, stream string) string {
	cp.t.Helper()
	var b strings.Builder
	for i, e := range j.Log.Edges {
		if e.Node.Seq != i+1 {
			cp.t.Fatalf("job %s output: seq %d at position %d", j.ID, e.Node.Seq, i+1)
		}
		if stream == "" || e.Node.Stream == stream {
			b.WriteString(e.Node.Data)
		}
	}
	return b.String()
}

func (cp *controlPlane) submit(input map[string]any) string {
	cp.t.Helper()
	var out struct {
		SubmitJob struct{ Job struct{ ID string } }
	}
	cp.mustGQL(`mutation($input: SubmitJobInput!) { submitJob(input: $input) { job { id } } }`, map[string]any{"input": input}, &out)
	return out.SubmitJob.Job.ID
}

func scriptSpec(body string) map[string]any {
	return map[string]any{"kind": "SCRIPT", "script": map[string]any{"interpreter": "sh", "body": body}}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
