// Package testproc runs the module's own binaries from tests: it builds
// them, starts them as processes with their output in a file, and stops them
// as an operator or a crash would.
package testproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Build builds the named commands of this module (cmd/<name>) into dir.
func Build(dir string, names ...string) error {
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	for _, n := range names {
		args = append(args, "cairn/cmd/"+n)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// FreeAddr is a loopback address with a port free at the time of the call.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// EnvironWithout is the test's environment minus the variables with the
// given names, or prefixes (ending in "_"), so that a program falls back to
// its defaults.
func EnvironWithout(prefixes ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) && (strings.HasSuffix(p, "_") || strings.HasPrefix(kv, p+"=")) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}

// Process is a program a test started, its output (stdout and stderr) in a
// file.
type Process struct {
	Name   string // the program's base name
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

// Start starts bin with args in an environment without DATABASE_URL and
// CAIRN_* variables, plus env. The process is killed when the test ends if it
// still runs then.
func Start(t testing.TB, bin string, env []string, args ...string) *Process {
	t.Helper()
	logFile, err := os.CreateTemp(t.TempDir(), filepath.Base(bin)+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(EnvironWithout("DATABASE_URL", "CAIRN_"), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Name: filepath.Base(bin), cmd: cmd, log: logFile.Name(), exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.Kill)
	return p
}

// Output is what the process has written so far.
func (p *Process) Output() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return string(b)
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has ended; Err then says how.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process ended (nil while it runs, or when it exited 0).
func (p *Process) Err() error {
	if p.Running() {
		return nil
	}
	return p.err
}

// Running reports whether the process has not ended yet.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Kill ends the process at once, as a crash would.
func (p *Process) Kill() {
	if p.Running() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Stop sends SIGTERM and waits up to grace for the process to exit; it
// returns the exit error, or an error if the process had to be killed.
func (p *Process) Stop(grace time.Duration) error {
	if !p.Running() {
		return p.err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("%s still ran %s after SIGTERM and was killed", p.Name, grace)
	}
}
