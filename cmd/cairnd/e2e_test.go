package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gqlclient "cairn/graph/client"
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

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cairnd output:\n%s", logs())
		}
	})
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

	// The embedded postmaster dies as in a crash: cairnd starts it again,
	// writes meanwhile fail as UNAVAILABLE (never INTERNAL), and then work.
	m := firstStartToken.FindStringSubmatch(logs())
	if m == nil {
		t.Fatalf("cairnd printed no administrator token\n%s", logs())
	}
	admin := gqlClient{url: "http://" + addr + "/graphql", token: m[1]}
	pidFile, err := os.ReadFile(filepath.Join(dataDir, "pgdata", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	postmaster, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pidFile), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(postmaster, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Until a new postmaster runs and a write goes through: a write may go
	// through at first on a backend of the killed one that has not noticed.
	restarted := func() bool {
		b, err := os.ReadFile(filepath.Join(dataDir, "pgdata", "postmaster.pid"))
		if err != nil {
			return false
		}
		pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		return err == nil && pid != postmaster && syscall.Kill(pid, 0) == nil
	}
	codes := map[string]int{}
	for i := 0; ; i++ {
		err := admin.do(`mutation($n: String!) { createTenant(input: {name: $n}) { cursor } }`, map[string]any{"n": fmt.Sprintf("after-crash-%d", i)}, nil)
		if err == nil && restarted() {
			break
		}
		if err == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		codes[gqlclient.CodeOf(err)]++
		if time.Now().After(deadline.Add(time.Minute)) {
			t.Fatalf("writes still fail after the postmaster was killed: %v (codes %v)\n%s", err, codes, logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("writes refused while the database was away, by code: %v", codes)
	for code := range codes {
		if code != "UNAVAILABLE" {
			t.Errorf("while the database was away a write got %s (codes %v); want UNAVAILABLE only", code, codes)
		}
	}
	if code, body := get(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the database came back: %d %s", code, body)
	}

	// A lost admin token is recovered beside the running server, on the
	// same data directory: the command uses the cluster cairnd runs.
	tokenCmd := exec.Command(bin, "token", "create", "--user", "admin", "--ttl", "1h", "--data-dir", dataDir, "--log-format", "json")
	tokenCmd.Env = testproc.EnvironWithout("DATABASE_URL", "CAIRN_")
	out, err := tokenCmd.Output()
	if err != nil {
		t.Fatalf("token create while cairnd runs: %v\n%s", err, out)
	}
	recovered := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	var who struct{ Viewer struct{ UserID, Role string } }
	if err := (gqlClient{url: admin.url, token: recovered}).do(`{ viewer { userId role } }`, nil, &who); err != nil || who.Viewer.Role != "ADMIN" {
		t.Fatalf("the recovered token: %+v %v (printed %q)", who, err, out)
	}
	if code, _ := get(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("cairnd is not ready after token create ran beside it: %d", code)
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
