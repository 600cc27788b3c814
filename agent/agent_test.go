package agent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cairn/agent"
	"cairn/commands/jobs"
	"cairn/dispatch/dispatchtest"
	"cairn/domain/job"
	"cairn/eventstore"
	"cairn/joblogs"
)

// An agent enrolls with a join token, keeps its credential private, and runs
// a job leased to it over each transport: its output arrives in order and
// its result is recorded.
func TestRunJob(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{agent.TransportWebSocket, agent.TransportPoll} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			s := startServer(t)
			overHTTP := &operationCounter{}
			a := s.startAgent(agent.Config{JoinToken: s.joinToken(map[string]string{"role": "test"}), Transport: transport,
				HTTPClient: &http.Client{Transport: overHTTP}})
			id := s.nodeOnline(a)
			fi, err := os.Stat(filepath.Join(a.cfg.DataDir, "credential"))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("credential file: %v, %v", fi, err)
			}
			jobID := s.submit(jobs.Submit{Target: job.Target{NodeID: id},
				Spec: script("for i in 1 2 3; do echo line $i; done; echo oops >&2; exit 3")})
			j := s.ended(jobID)
			if j.Status != job.StatusFailed || j.Result.ExitCode != 3 {
				t.Fatalf("job %s %+v", j.Status, j.Result)
			}
			if got := s.output(jobID, joblogs.StreamStdout); got != "line 1\nline 2\nline 3\n" {
				t.Errorf("stdout %q", got)
			}
			if got := s.output(jobID, joblogs.StreamStderr); got != "oops\n" {
				t.Errorf("stderr %q", got)
			}
			// Over a WebSocket, the job's reports travel on it; long polls
			// send them as requests.
			reports := overHTTP.count("Start") + overHTTP.count("AppendLog") + overHTTP.count("Finish")
			if transport == agent.TransportWebSocket && reports > 0 {
				t.Errorf("%d of the job's reports were sent over HTTP beside the agent's WebSocket", reports)
			}
			if transport == agent.TransportPoll && reports == 0 {
				t.Error("no report of the job was sent over HTTP, with long polls")
			}
			// An action returns its output as the result.
			actionID := s.submit(jobs.Submit{Target: job.Target{NodeID: id},
				Spec: job.Spec{Kind: job.KindAction, Action: "sal.load"}})
			if j := s.ended(actionID); j.Status != job.StatusSucceeded || !json.Valid(j.Result.Output) || len(j.Result.Output) < 10 {
				t.Errorf("action job %s %+v", j.Status, j.Result)
			}
			// A secret reaches the agent in clear, and nothing else.
			secretID := s.submit(jobs.Submit{Target: job.Target{NodeID: id},
				Spec:    job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"sh", "-c", `test "$DB_PASSWORD" = pw-5f0e`}}},
				Secrets: jobs.Secrets{Env: map[string]string{"DB_PASSWORD": "pw-5f0e"}}})
			if j := s.ended(secretID); j.Status != job.StatusSucceeded || !j.Spec.Sealed() || j.Spec.Exec.Env["DB_PASSWORD"] != "" {
				t.Errorf("secret job %s %+v, spec %+v", j.Status, j.Result, j.Spec.Exec)
			}
			// Statistics arrive in batches.
			eventually(t, "statistics", func() bool {
				st, err := s.Stats.Query(ctxFor(t), id, time.Time{}, time.Time{}, 10)
				return err == nil && len(st) >= 2
			})
		})
	}
}

// Output appears while the job runs, not only at its end.
func TestLiveOutput(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := s.startAgent(agent.Config{JoinToken: s.joinToken(nil)})
	id := s.nodeOnline(a)
	marker := filepath.Join(t.TempDir(), "go")
	jobID := s.submit(jobs.Submit{Target: job.Target{NodeID: id},
		Spec: script("echo first; while [ ! -e " + marker + " ]; do sleep 0.05; done; echo second")})
	tail, err := s.Logs.Tail(ctxFor(t), jobID, 0)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-tail.C:
		if c.Data != "first\n" {
			t.Fatalf("first chunk %q", c.Data)
		}
	case <-time.After(wait):
		t.Fatal("no output while the job ran")
	}
	if j := s.job(jobID); j.Terminal() {
		t.Fatalf("job ended before its marker: %s", j.Status)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for c := range tail.C {
		rest = append(rest, c.Data)
	}
	if strings.Join(rest, "") != "second\n" {
		t.Errorf("rest %q", rest)
	}
	if j := s.ended(jobID); j.Status != job.StatusSucceeded {
		t.Errorf("status %s", j.Status)
	}
}

// A job past its timeout is stopped, its process killed, and recorded as
// timed out; a cancelled job is stopped and recorded as cancelled.
func TestTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := s.startAgent(agent.Config{JoinToken: s.joinToken(nil)})
	id := s.nodeOnline(a)
	// The shell ignores SIGTERM, so only the kill after the grace ends it.
	// A shell that has not written its pid when the timeout strikes was not
	// set up yet (no trap): that says nothing about the agent, so the job is
	// submitted again with a longer timeout.
	var slow, pidFile string
	timeout := time.Second
	for {
		pidFile = filepath.Join(t.TempDir(), "pid")
		slow = s.submit(jobs.Submit{Target: job.Target{NodeID: id}, Timeout: timeout, Grace: time.Second,
			Spec: script("trap '' TERM; echo $$ > " + pidFile + "; echo started; while true; do sleep 0.1; done")})
		j := s.ended(slow)
		if j.Status != job.StatusTimedOut {
			t.Fatalf("slow job %s %+v", j.Status, j.Result)
		}
		if _, err := os.Stat(pidFile); err == nil || timeout >= wait/2 {
			break
		}
		t.Logf("the shell was not set up within the %s timeout; again with a longer one", timeout)
		timeout *= 2
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("process %d still runs after the timeout", pid)
	}
	if out := s.output(slow, joblogs.StreamSystem); !strings.Contains(out, "timed out after "+timeout.String()) {
		t.Errorf("system lines %q", out)
	}

	long := s.submit(jobs.Submit{Target: job.Target{NodeID: id}, Timeout: time.Hour,
		Spec: script("echo running; sleep 600")})
	eventually(t, "long job output", func() bool { return s.output(long, "") != "" })
	if _, err := s.Jobs.Cancel(ctxFor(t), dispatchtest.Operator, jobs.Cancel{JobID: long, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	defer func() { t.Logf("cancel took %s", time.Since(t0)) }()
	if j := s.ended(long); j.Status != job.StatusCancelled {
		t.Errorf("cancelled job %s %+v", j.Status, j.Result)
	}
}

// An agent stopped while its job runs picks the job up when it starts
// again: the job is not run twice, no output is lost, the result is
// recorded once.
func TestAgentRestart(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := s.startAgent(agent.Config{JoinToken: s.joinToken(nil)})
	id := s.nodeOnline(a)
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	marker := filepath.Join(dir, "go")
	jobID := s.submit(jobs.Submit{Target: job.Target{NodeID: id}, Spec: script(
		"echo run >> " + count + "; for i in $(seq 1 50); do echo line $i; sleep 0.01; done; " +
			"while [ ! -e " + marker + " ]; do sleep 0.05; done; for i in $(seq 51 100); do echo line $i; done")})
	eventually(t, "job output", func() bool { return strings.Contains(s.output(jobID, ""), "line 50\n") })
	a.stop()
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The runner finishes the job while no agent runs: wait for its result
	// in the job's directory (jobs/<id>@<attempt>).
	result := filepath.Join(a.cfg.DataDir, "jobs", jobID+"@1", "result.json")
	eventually(t, "the runner to record the result", func() bool {
		_, err := os.Stat(result)
		return err == nil
	})
	s.startAgent(agent.Config{DataDir: a.cfg.DataDir, FileRoots: a.cfg.FileRoots})
	j := s.ended(jobID)
	if j.Status != job.StatusSucceeded || j.Attempt != 1 {
		t.Fatalf("job %s attempt %d %+v", j.Status, j.Attempt, j.Result)
	}
	var want strings.Builder
	for i := 1; i <= 100; i++ {
		want.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	if got := s.output(jobID, joblogs.StreamStdout); got != want.String() {
		t.Errorf("output after the restart:\n%s", got)
	}
	runs, _ := os.ReadFile(count)
	if string(runs) != "run\n" {
		t.Errorf("the job ran %d times", strings.Count(string(runs), "run"))
	}
	finishes := 0
	evs, err := s.Store.ReadStream(ctxFor(t), "job-"+jobID, eventstore.ReadStreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == "job.finished" {
			finishes++
		}
	}
	if finishes != 1 {
		t.Errorf("result recorded %d times", finishes)
	}
}

// operationCounter is an HTTP transport that counts the GraphQL operations
// sent through it, by name.
type operationCounter struct {
	mu     sync.Mutex
	byName map[string]int
}

func (o *operationCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct{ OperationName string }
		_ = json.Unmarshal(body, &req)
		o.mu.Lock()
		if o.byName == nil {
			o.byName = map[string]int{}
		}
		o.byName[req.OperationName]++
		o.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (o *operationCounter) count(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.byName[name]
}
