package agent_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"cairn/agent"
	"cairn/commands/jobs"
	"cairn/domain/job"
)

// Supervised processes belong to the agent, not to the job that started
// one: the next job's status finds it, a later job stops it, and stopping
// the agent stops what it still supervises, so no process is left running
// that no agent can see.
func TestSupervisedProcesses(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := s.startAgent(agent.Config{JoinToken: s.joinToken(nil)})
	id := s.nodeOnline(a)
	type status struct {
		Name, State string
		PID         int
	}
	action := func(name, args string, out any) {
		t.Helper()
		j := s.ended(s.submit(jobs.Submit{Target: job.Target{NodeID: id},
			Spec: job.Spec{Kind: job.KindAction, Action: name, Args: json.RawMessage(args)}}))
		if j.Status != job.StatusSucceeded {
			t.Fatalf("%s: %s %+v", name, j.Status, j.Result)
		}
		if err := json.Unmarshal(j.Result.Output, out); err != nil {
			t.Fatalf("%s answered %s: %v", name, j.Result.Output, err)
		}
	}
	var started status
	action("sal.supervisor.start", `{"name":"sleeper","argv":["sleep","600"]}`, &started)
	if started.State != "running" || started.PID <= 0 {
		t.Fatalf("started %+v", started)
	}
	t.Cleanup(func() { killSleeper(started.PID) })
	if err := syscall.Kill(started.PID, 0); err != nil {
		t.Fatalf("pid %d: %v", started.PID, err)
	}

	var list []status
	action("sal.supervisor.status", `{}`, &list)
	if len(list) != 1 || list[0].Name != "sleeper" || list[0].State != "running" || list[0].PID != started.PID {
		t.Fatalf("a later job's status lists %+v, want sleeper running as pid %d", list, started.PID)
	}

	var stopped status
	action("sal.supervisor.stop", `{"name":"sleeper"}`, &stopped)
	if stopped.State != "stopped" {
		t.Errorf("stopped %+v", stopped)
	}
	if err := syscall.Kill(started.PID, 0); err == nil {
		t.Errorf("pid %d still runs after the stop", started.PID)
	}

	var again status
	action("sal.supervisor.start", `{"name":"sleeper","argv":["sleep","600"]}`, &again)
	t.Cleanup(func() { killSleeper(again.PID) })
	if again.State != "running" || again.PID <= 0 || again.PID == started.PID {
		t.Fatalf("started again %+v", again)
	}
	a.stop()
	if err := syscall.Kill(again.PID, 0); err == nil {
		t.Errorf("pid %d still runs after its agent stopped", again.PID)
	}
}

// killSleeper kills a process the test started if the agent left it
// running (checking that the pid is still that process).
func killSleeper(pid int) {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err == nil && strings.HasPrefix(string(cmdline), "sleep\x00600") {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
