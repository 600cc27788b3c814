package sal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProcesses(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	procs, err := s.Processes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var self *ProcessInfo
	for i := range procs {
		if int(procs[i].PID) == os.Getpid() {
			self = &procs[i]
		}
	}
	if self == nil {
		t.Fatalf("own pid %d not among %d processes", os.Getpid(), len(procs))
	}
	if self.Name == "" || len(self.Cmdline) == 0 || self.User == "" || self.RSSBytes == 0 ||
		self.CreateTime.IsZero() || int(self.PPID) != os.Getppid() {
		t.Errorf("own process: %+v", *self)
	}
}

func TestProcess(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	ctx := context.Background()
	st, err := s.Process(ctx, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.NumThreads < 1 || st.RSSBytes == 0 || st.VMSBytes < st.RSSBytes || st.Exe == "" {
		t.Errorf("own process: %+v", st)
	}

	pid := deadPID(t)
	if _, err := s.Process(ctx, pid); !errors.Is(err, ErrNoSuchProcess) {
		t.Errorf("exited pid: want ErrNoSuchProcess, got %v", err)
	}
	if _, err := s.Process(ctx, 0); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("pid 0: want ErrInvalidSpec, got %v", err)
	}
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

func TestSignal(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	ctx := context.Background()
	tests := []struct {
		name string
		pid  int
		want error
	}{
		{"zero would hit the group", 0, ErrInvalidSpec},
		{"minus one would hit everything", -1, ErrInvalidSpec},
		{"gone", deadPID(t), ErrNoSuchProcess},
	}
	for _, tt := range tests {
		if err := s.Signal(ctx, tt.pid, syscall.SIGTERM); !errors.Is(err, tt.want) {
			t.Errorf("%s: want %v, got %v", tt.name, tt.want, err)
		}
	}
}

func TestParseSignal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want syscall.Signal
	}{
		{"SIGTERM", syscall.SIGTERM}, {"term", syscall.SIGTERM}, {"KILL", syscall.SIGKILL}, {"SIGHUP", syscall.SIGHUP},
	}
	for _, tt := range tests {
		if got, err := ParseSignal(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseSignal(%q) = %v, %v", tt.in, got, err)
		}
	}
	if _, err := ParseSignal("SIGNOPE"); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("unknown signal: %v", err)
	}
}

func TestStartDetached(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := filepath.Join(root, "out.log")
	pid, err := s.StartDetached(ctx, ProcessSpec{
		Argv:       []string{"sh", "-c", `echo "started $CAIRN_X"; echo oops >&2; exec sleep 30`},
		Env:        map[string]string{"CAIRN_X": "x"},
		StdoutPath: out,
		StderrPath: filepath.Join(root, "err.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The caller's context ending must not touch the process.
	cancel()
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })

	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("pgid = %d, %v; want its own group %d", pgid, err, pid)
	}
	if sid, _ := getsid(pid); sid != pid {
		t.Errorf("session = %d, want its own %d", sid, pid)
	}
	eventually(t, wait, "output in the log files", func() bool {
		o, _ := os.ReadFile(out)
		e, _ := os.ReadFile(filepath.Join(root, "err.log"))
		return string(o) == "started x\n" && string(e) == "oops\n"
	})
	time.Sleep(50 * time.Millisecond)
	if !pidAlive(pid) {
		t.Fatal("the detached process died with its caller's context")
	}
	if err := s.Signal(context.Background(), pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "the process to die", func() bool { return !pidAlive(pid) })
}

func getsid(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}

func TestStartDetachedRefusals(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	ctx := context.Background()
	_, err := s.StartDetached(ctx, ProcessSpec{Argv: []string{"true"}, StdoutPath: filepath.Join(t.TempDir(), "x.log")})
	var pe *PathOutsideRootsError
	if !errors.As(err, &pe) {
		t.Errorf("log outside the roots: want *PathOutsideRootsError, got %v", err)
	}
	if _, err := s.StartDetached(ctx, ProcessSpec{}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("empty argv: want ErrInvalidSpec, got %v", err)
	}
	if _, err := s.StartDetached(ctx, ProcessSpec{Argv: []string{"/nonexistent/cairn-prog"}}); err == nil || !strings.Contains(err.Error(), "cairn-prog") {
		t.Errorf("missing program: %v", err)
	}
}
