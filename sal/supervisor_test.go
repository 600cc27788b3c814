package sal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestSupervisorRestartsAndStops(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	sv := s.Supervisor()
	ctx := context.Background()
	policy := RestartPolicy{MaxRestarts: -1, InitialBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	st, err := sv.StartSupervised(ctx, "sleeper", ProcessSpec{
		Argv:       []string{"sh", "-c", "echo up; exec sleep 30"},
		StdoutPath: filepath.Join(root, "sleeper.log"),
	}, policy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sv.StopAll(time.Second) })
	if st.State != StateRunning || st.PID <= 0 {
		t.Fatalf("after start: %+v", st)
	}
	first := st.PID

	if _, err := sv.StartSupervised(ctx, "sleeper", ProcessSpec{Argv: []string{"true"}}, policy); err == nil {
		t.Fatal("a second start of a running name was accepted")
	} else if ae := (*AlreadySupervisedError)(nil); !errors.As(err, &ae) || ae.PID != first {
		t.Errorf("want *AlreadySupervisedError naming pid %d, got %v", first, err)
	}

	eventually(t, wait, "the first run logged", func() bool {
		b, _ := os.ReadFile(filepath.Join(root, "sleeper.log"))
		return string(b) == "up\n"
	})
	// Kill it behind the supervisor's back: it comes back with a new pid.
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "a restart", func() bool {
		st, _ = sv.Status("sleeper")
		return st.State == StateRunning && st.PID != first && st.PID > 0
	})
	if st.Restarts != 1 || st.LastSignal != "SIGKILL" || st.LastExitCode != -1 {
		t.Errorf("after restart: %+v", st)
	}
	eventually(t, wait, "two runs logged", func() bool {
		b, _ := os.ReadFile(filepath.Join(root, "sleeper.log"))
		return string(b) == "up\nup\n"
	})

	second := st.PID
	if err := sv.Stop("sleeper", time.Second); err != nil {
		t.Fatal(err)
	}
	if pidAlive(second) {
		t.Errorf("pid %d still alive after Stop", second)
	}
	if st, _ = sv.Status("sleeper"); st.State != StateStopped || st.PID != 0 {
		t.Errorf("after stop: %+v", st)
	}
	if err := sv.Stop("sleeper", time.Second); err != nil {
		t.Errorf("a second Stop: %v", err)
	}

	// A stopped name can be started again.
	if _, err := sv.StartSupervised(ctx, "sleeper", ProcessSpec{Argv: []string{"sleep", "30"}}, policy); err != nil {
		t.Errorf("restart of a stopped name: %v", err)
	}
}

func TestSupervisorGivesUp(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	sv := s.Supervisor()
	log := filepath.Join(root, "runs.log")
	_, err := sv.StartSupervised(context.Background(), "crasher", ProcessSpec{
		Argv:       []string{"sh", "-c", "echo run; exit 3"},
		StdoutPath: log,
	}, RestartPolicy{MaxRestarts: 2, InitialBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var st SupervisedStatus
	eventually(t, wait, "supervision to give up", func() bool {
		st, _ = sv.Status("crasher")
		return st.State == StateFailed
	})
	if st.Restarts != 2 || st.LastExitCode != 3 || !strings.Contains(st.LastError, "gave up after 2 restarts") {
		t.Errorf("final status: %+v", st)
	}
	if b, _ := os.ReadFile(log); string(b) != "run\nrun\nrun\n" {
		t.Errorf("runs logged: %q, want three", b)
	}
	if err := sv.Stop("crasher", 0); err != nil {
		t.Errorf("stopping a failed process: %v", err)
	}
}

func TestSupervisorStopEscalates(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	sv := s.Supervisor()
	log := filepath.Join(root, "stubborn.log")
	st, err := sv.StartSupervised(context.Background(), "stubborn", ProcessSpec{
		Argv:       []string{"sh", "-c", "trap '' TERM; echo trapped; while :; do sleep 0.05; done"},
		StdoutPath: log,
	}, DefaultRestartPolicy())
	if err != nil {
		t.Fatal(err)
	}
	// Until the shell has installed its trap, SIGTERM would still end it.
	eventually(t, wait, "the trap to be installed", func() bool {
		b, _ := os.ReadFile(log)
		return string(b) == "trapped\n"
	})
	start := time.Now()
	if err := sv.Stop("stubborn", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// At least the grace; the upper bound only catches a Stop that waited
	// for the process to give in rather than escalating.
	if d := time.Since(start); d < 200*time.Millisecond || d > wait {
		t.Errorf("stop took %s, want the grace and a little more", d)
	}
	if groupAlive(st.PID) {
		t.Errorf("group %d survived Stop", st.PID)
	}
	final, _ := sv.Status("stubborn")
	if final.State != StateStopped || final.LastSignal != "SIGKILL" {
		t.Errorf("after stop: %+v", final)
	}
}

func TestSupervisorRefusals(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	sv := s.Supervisor()
	ctx := context.Background()
	tests := []struct {
		name, proc string
		spec       ProcessSpec
		want       error
	}{
		{"bad name", "-x", ProcessSpec{Argv: []string{"true"}}, ErrInvalidSpec},
		{"slash in name", "a/b", ProcessSpec{Argv: []string{"true"}}, ErrInvalidSpec},
		{"no argv", "x", ProcessSpec{}, ErrInvalidSpec},
		{"missing program", "x", ProcessSpec{Argv: []string{"/nonexistent/cairn-prog"}}, os.ErrNotExist},
	}
	for _, tt := range tests {
		if _, err := sv.StartSupervised(ctx, tt.proc, tt.spec, DefaultRestartPolicy()); !errors.Is(err, tt.want) {
			t.Errorf("%s: want %v, got %v", tt.name, tt.want, err)
		}
	}
	if _, err := sv.Status("x"); !errors.Is(err, ErrNotSupervised) {
		t.Errorf("a failed first start must not be registered: %v", err)
	}
	if err := sv.Stop("nobody", 0); !errors.Is(err, ErrNotSupervised) {
		t.Errorf("stop unknown: %v", err)
	}
	if len(sv.List()) != 0 {
		t.Errorf("list: %+v", sv.List())
	}
}

func TestSupervisorStopsLeftoversBeforeRestart(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	sv := s.Supervisor()
	pidFile := filepath.Join(root, "child.pid")
	_, err := sv.StartSupervised(context.Background(), "forker", ProcessSpec{
		Argv: []string{"sh", "-c", `sleep 30 & echo $! > "$PID_FILE"; exit 1`},
		Env:  map[string]string{"PID_FILE": pidFile},
	}, RestartPolicy{MaxRestarts: 0})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "supervision to end", func() bool {
		st, _ := sv.Status("forker")
		return st.State == StateFailed
	})
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if child <= 0 || pidAlive(child) {
		t.Errorf("child %d of the exited process is still alive", child)
	}
}
