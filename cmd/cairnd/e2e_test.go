package main

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn/internal/testproc"
)

// TestBinaryEmbedded builds cairnd and runs it as an operator would with no
// database configured: it must start its own PostgreSQL, become ready, and on
// SIGTERM exit 0 leaving no server behind.
func TestBinaryEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairnd and starts a PostgreSQL cluster")
	}
	bin := filepath.Join(t.TempDir(), "cairnd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	dataDir := filepath.Join(traversableTempDir(t), "data")
	addr := testproc.FreeAddr(t)
	logPath := filepath.Join(t.TempDir(), "cairnd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logs := func() string {
		b, err := os.ReadFile(logPath)
		if err != nil {
			return "(log unreadable: " + err.Error() + ")"
		}
		return string(b)
	}

	cmd := exec.Command(bin, "serve", "--data-dir", dataDir, "--listen", addr, "--log-format", "json")
	cmd.Env = testproc.EnvironWithout("DATABASE_URL", "CAIRN_")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	// Making a cluster, starting it and migrating: minutes on a loaded
	// machine.
	deadline := time.Now().Add(3 * time.Minute)
	for ready := false; !ready; {
		select {
		case err := <-exited:
			t.Fatalf("cairnd exited before becoming ready: %v\n%s", err, logs())
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := client.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
		}
		if !ready && time.Now().After(deadline) {
			t.Fatalf("cairnd not ready within 3 minutes\n%s", logs())
		}
	}
	if !strings.Contains(logs(), "cairnd listening on http://"+addr) {
		t.Errorf("cairnd did not log where it listens:\n%s", logs())
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("cairnd after SIGTERM: %v (want exit status 0)\n%s", err, logs())
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("cairnd still running 45s after SIGTERM\n%s", logs())
	}

	pgdata := filepath.Join(dataDir, "pgdata")
	if _, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); err != nil {
		t.Errorf("no cluster in the data directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(pgdata, "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("postmaster.pid left behind (%v): the server was not shut down cleanly", err)
	}
	if pids := postgresProcessesIn(t, pgdata); len(pids) > 0 {
		t.Errorf("postgres processes of %s still running: %v", pgdata, pids)
	}
}

// traversableTempDir is a temporary directory that PostgreSQL, which runs as
// an unprivileged user when the tests run as root, can pass through.
func traversableTempDir(t *testing.T) string {
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func postgresProcessesIn(t *testing.T, pgdata string) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("cannot list processes: %v", err)
	}
	var pids []string
	for _, e := range entries {
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || cwd != pgdata {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		pids = append(pids, e.Name()+" "+string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return pids
}
