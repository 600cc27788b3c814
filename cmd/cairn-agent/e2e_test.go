package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"cairn/internal/testdb"
	"cairn/internal/testproc"
)

// Three real agents on one real cairnd, over each transport: a job on one
// node, on any of them, on all of them; output arriving in order while the
// job runs; a timeout that kills the process; a cancel that stops it.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"websocket", "poll"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			cp := startControlPlane(t)
			labels := map[string]string{"fleet": "e2e"}
			agents := []*agentProc{cp.startAgent(transport, labels), cp.startAgent(transport, labels), cp.startAgent(transport, labels)}
			var nodes []string
			for _, a := range agents {
				nodes = append(nodes, a.nodeID())
			}
			cp.waitOnline(nodes...)
			if transport == "poll" && !strings.Contains(agents[0].output(), `"transport":"long poll"`) {
				t.Errorf("the agent did not use long polls:\n%s", agents[0].output())
			}

			t.Run("one node", func(t *testing.T) {
				cp := cp.with(t)
				id := cp.submit(map[string]any{"target": map[string]any{"nodeId": nodes[1]},
					"spec": map[string]any{"kind": "EXEC", "exec": map[string]any{"argv": []string{"sh", "-c", "echo hello from $0", "node"}}}})
				j := cp.ended(id)
				if j.Status != "SUCCEEDED" || *j.NodeID != nodes[1] || cp.output(j, "STDOUT") != "hello from node\n" {
					t.Errorf("job %+v output %q", j, cp.output(j, ""))
				}
			})

			t.Run("any", func(t *testing.T) {
				cp := cp.with(t)
				id := cp.submit(map[string]any{"target": map[string]any{"selector": []map[string]string{{"key": "fleet", "value": "e2e"}}, "mode": "ANY"},
					"spec": scriptSpec("hostname >/dev/null; echo picked")})
				j := cp.ended(id)
				if j.Status != "SUCCEEDED" || j.NodeID == nil || !slices.Contains(nodes, *j.NodeID) {
					t.Errorf("job %+v", j)
				}
			})

			t.Run("all", func(t *testing.T) {
				cp := cp.with(t)
				id := cp.submit(map[string]any{"target": map[string]any{"selector": []map[string]string{{"key": "fleet", "value": "e2e"}}, "mode": "ALL", "maxParallel": 2},
					"spec": scriptSpec("echo child")})
				j := cp.ended(id)
				if j.Status != "SUCCEEDED" || j.Counts == nil || j.Counts.Succeeded != 3 || j.Children.TotalCount != 3 {
					t.Fatalf("fan-out %+v", j)
				}
				var ran []string
				for _, c := range j.Children.Edges {
					ran = append(ran, *c.Node.NodeID)
				}
				slices.Sort(ran)
				want := slices.Clone(nodes)
				slices.Sort(want)
				if !slices.Equal(ran, want) {
					t.Errorf("children ran on %v, want %v", ran, want)
				}
			})

			t.Run("output while running", func(t *testing.T) {
				cp := cp.with(t)
				marker := filepath.Join(t.TempDir(), "go")
				id := cp.submit(map[string]any{"target": map[string]any{"nodeId": nodes[0]}, "spec": scriptSpec(
					"for i in $(seq 1 20); do echo line $i; done; while [ ! -e " + marker + " ]; do sleep 0.05; done; for i in $(seq 21 40); do echo line $i; done")})
				eventually(t, "the first lines", func() bool {
					return strings.Contains(cp.output(cp.job(id), "STDOUT"), "line 20\n")
				})
				if j := cp.job(id); terminal[j.Status] {
					t.Fatalf("the job ended before its marker: %s", j.Status)
				}
				if err := os.WriteFile(marker, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				j := cp.ended(id)
				var want strings.Builder
				for i := 1; i <= 40; i++ {
					fmt.Fprintf(&want, "line %d\n", i)
				}
				if got := cp.output(j, "STDOUT"); got != want.String() {
					t.Errorf("output out of order or incomplete:\n%s", got)
				}
			})

			t.Run("timeout", func(t *testing.T) {
				cp := cp.with(t)
				// A shell that has not written its pid when the timeout
				// strikes was not set up yet (no trap): that says nothing
				// about the agent, so the job is submitted again with a
				// longer timeout.
				var pidFile string
				for timeout := 1; ; timeout *= 2 {
					pidFile = filepath.Join(t.TempDir(), "pid")
					id := cp.submit(map[string]any{"target": map[string]any{"nodeId": nodes[2]}, "timeoutSeconds": timeout, "graceSeconds": 1,
						"spec": scriptSpec("trap '' TERM; echo $$ > " + pidFile + "; while true; do sleep 0.1; done")})
					j := cp.ended(id)
					if j.Status != "TIMED_OUT" {
						t.Fatalf("job %+v", j)
					}
					if _, err := os.Stat(pidFile); err == nil || timeout >= 16 {
						break
					}
					t.Logf("the shell was not set up within the %ds timeout; again with a longer one", timeout)
				}
				b, _ := os.ReadFile(pidFile)
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				if pid == 0 || syscall.Kill(pid, 0) == nil {
					t.Errorf("process %d still runs after the timeout", pid)
				}
			})

			t.Run("cancel", func(t *testing.T) {
				cp := cp.with(t)
				id := cp.submit(map[string]any{"target": map[string]any{"nodeId": nodes[0]}, "spec": scriptSpec("echo started; sleep 600")})
				eventually(t, "the job runs", func() bool { return cp.output(cp.job(id), "") != "" })
				cp.mustGQL(`mutation($id: ID!) { cancelJob(input: {jobId: $id, reason: "enough"}) { job { status } } }`, map[string]any{"id": id}, nil)
				if j := cp.ended(id); j.Status != "CANCELLED" {
					t.Errorf("job %+v", j)
				}
			})

			// Every lease reached its agent whole. A refused one costs the
			// agent a reconnect and a backoff: a long poll woken by a lease
			// once read the job as still queued, attempt 0.
			for _, a := range agents {
				if out := a.output(); strings.Contains(out, "the control plane sent a lease") {
					t.Errorf("an agent refused a lease:\n%s", out)
				}
			}
		})
	}
}

// A job survives the crash of its agent and of the control plane: no output
// is lost, the job runs once, its result is recorded once.
func TestFaults(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t)
	a := cp.startAgent("websocket", nil)
	node := a.nodeID()
	cp.waitOnline(node)

	run := func(t *testing.T, crash func(), recover func()) {
		cp := cp.with(t)
		dir := t.TempDir()
		count, marker := filepath.Join(dir, "runs"), filepath.Join(dir, "go")
		id := cp.submit(map[string]any{"target": map[string]any{"nodeId": node}, "spec": scriptSpec(
			"echo run >> " + count + "; for i in $(seq 1 100); do echo line $i; done; " +
				"while [ ! -e " + marker + " ]; do sleep 0.05; done; for i in $(seq 101 200); do echo line $i; sleep 0.005; done")})
		eventually(t, "the first half of the output", func() bool {
			return strings.Contains(cp.output(cp.job(id), "STDOUT"), "line 100\n")
		})
		crash()
		// The job goes on without its agent (or its control plane): its
		// runner records the result in the job's directory of the agent's
		// data directory (jobs/<id>@<attempt>).
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		result := filepath.Join(a.dataDir, "jobs", id+"@1", "result.json")
		eventually(t, "the runner to record the result", func() bool {
			_, err := os.Stat(result)
			return err == nil
		})
		recover()
		j := cp.ended(id)
		if j.Status != "SUCCEEDED" || j.Attempt != 1 {
			t.Fatalf("job %+v", j)
		}
		var want strings.Builder
		for i := 1; i <= 200; i++ {
			fmt.Fprintf(&want, "line %d\n", i)
		}
		if got := cp.output(j, "STDOUT"); got != want.String() {
			t.Errorf("output lost or repeated:\n%s", got)
		}
		if runs, _ := os.ReadFile(count); string(runs) != "run\n" {
			t.Errorf("the job ran %d times", strings.Count(string(runs), "run"))
		}
		types, err := cp.streamEvents("job-" + id)
		if err != nil {
			t.Fatal(err)
		}
		finished := 0
		for _, typ := range types {
			if typ == "job.finished" {
				finished++
			}
		}
		if finished != 1 {
			t.Errorf("result recorded %d times: %v", finished, types)
		}
	}

	t.Run("agent killed", func(t *testing.T) {
		run(t, a.kill, func() { a.run("") })
	})
	t.Run("control plane killed", func(t *testing.T) {
		run(t, cp.proc.kill, cp.start)
	})
}

// cairnd --local-agent runs an agent next to itself, enrolled on the first
// start and reusing its credential afterwards: a job runs on it at once.
func TestLocalAgent(t *testing.T) {
	t.Parallel()
	_, agentBin := binaries(t)
	cp := &controlPlane{t: t, db: testdb.New(t), addr: testproc.FreeAddr(t), dir: t.TempDir()}
	cp.extra = []string{"--local-agent", agentBin}
	cp.start()
	for round := range 2 {
		id := cp.submit(map[string]any{"target": map[string]any{"selector": []map[string]string{{"key": "local", "value": "true"}}},
			"spec": scriptSpec("echo round " + strconv.Itoa(round))})
		if j := cp.ended(id); j.Status != "SUCCEEDED" || cp.output(j, "STDOUT") != "round "+strconv.Itoa(round)+"\n" {
			t.Fatalf("round %d: %+v\n%s", round, j, cp.proc.output())
		}
		cp.proc.stop()
		if round == 0 {
			cp.start()
		}
	}
}

// The operator's side: cairn nodes join-token enrolls an agent; cairn run
// follows a job's output and exits with its status; cairn jobs logs prints
// what a job wrote.
func TestCLI(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t)
	cli := cliBinary(t)
	cairn := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(cli, args...)
		cmd.Env = append(testproc.EnvironWithout("CAIRN_"), "CAIRN_SERVER="+cp.url(), "CAIRN_TOKEN="+cp.token, "XDG_CONFIG_HOME="+t.TempDir())
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}

	token, errOut, code := cairn("", "nodes", "join-token", "--label", "team=cli")
	if code != 0 || !strings.HasPrefix(token, "cairnjoin_") || !strings.Contains(errOut, "cairn-agent --server") {
		t.Fatalf("join-token: %d %q %q", code, token, errOut)
	}
	a := &agentProc{dataDir: filepath.Join(t.TempDir(), "agent"), fileRoot: t.TempDir(), transport: "auto", cp: cp}
	a.run(strings.TrimSpace(token))
	node := a.nodeID()
	cp.waitOnline(node)

	out, errOut, code := cairn("", "run", "--node", node, "--", "sh", "-c", "echo out; echo err >&2; exit 7")
	if code != 7 || out != "out\n" || !strings.Contains(errOut, "err\n") {
		t.Errorf("run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, code = cairn("data from stdin", "run", "--selector", "team=cli", "--stdin", "--", "cat")
	if code != 0 || out != "data from stdin" {
		t.Errorf("run with stdin: exit %d, stdout %q", code, out)
	}
	// A fan-out's lines are tagged with the node's hostname.
	var nodesOut []struct{ ID, Hostname string }
	nodesJSON, _, _ := cairn("", "nodes", "-o", "json")
	if err := json.Unmarshal([]byte(nodesJSON), &nodesOut); err != nil || len(nodesOut) == 0 {
		t.Fatalf("nodes -o json: %v %q", err, nodesJSON)
	}
	host := nodesOut[0].Hostname
	out, _, code = cairn("", "run", "--selector", "team=cli", "--all", "--script", "sh", "--", "echo one; echo two")
	if code != 0 || out != "["+host+"] one\n["+host+"] two\n" {
		t.Errorf("run on all: exit %d, stdout %q", code, out)
	}
	_, errOut, code = cairn("", "run", "--node", node, "--timeout-after", "1s", "--grace", "0s", "--", "sleep", "30")
	if code != 124 {
		t.Errorf("run past its timeout: exit %d, stderr %q", code, errOut)
	}
	id, _, code := cairn("", "run", "-d", "--node", node, "--script", "sh", "--", "for i in 1 2 3; do echo line $i; done")
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("run -d: %d %q", code, id)
	}
	if out, _, code := cairn("", "jobs", "logs", id, "-f"); code != 0 || out != "line 1\nline 2\nline 3\n" {
		t.Errorf("jobs logs -f: exit %d, %q", code, out)
	}
	if out, _, code := cairn("", "jobs", "logs", id); code != 0 || out != "line 1\nline 2\nline 3\n" {
		t.Errorf("jobs logs: exit %d, %q", code, out)
	}
	if _, errOut, code := cairn("", "run", "--node", "no-such-node", "--", "true"); code != 1 || !strings.Contains(errOut, `no node has the id or name "no-such-node"`) {
		t.Errorf("run on a node that does not exist: exit %d, %q", code, errOut)
	}
	if _, errOut, code := cairn("", "run", "--", "true"); code != 2 || !strings.Contains(errOut, "--node") {
		t.Errorf("run without a target: exit %d, %q", code, errOut)
	}
	// Every node, and a set-based selector; one that selects no node is
	// refused before anything runs, and one that does not parse says why.
	if out, _, code := cairn("", "run", "--all", "--", "echo", "everywhere"); code != 0 || out != "["+host+"] everywhere\n" {
		t.Errorf("run on every node: exit %d, stdout %q", code, out)
	}
	if out, _, code := cairn("", "run", "--selector", "team in (cli, ops), !gpu", "--", "echo", "set"); code != 0 || out != "set\n" {
		t.Errorf("run with a set-based selector: exit %d, stdout %q", code, out)
	}
	if _, errOut, code := cairn("", "run", "--selector", "team notin (cli)", "--all", "--", "true"); code != 1 || !strings.Contains(errOut, "no node matches team notin (cli)") {
		t.Errorf("run on a selector matching nothing: exit %d, %q", code, errOut)
	}
	if _, errOut, code := cairn("", "run", "--selector", "team ~ cli", "--", "true"); code != 2 || !strings.Contains(errOut, `unknown operator "~"`) {
		t.Errorf("run with an unknown operator: exit %d, %q", code, errOut)
	}
}
