package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// SuperUser is the bootstrap role initdb creates in every cluster it makes.
const SuperUser = "cairn"

// Options configure a cluster.
type Options struct {
	// DataDir keeps the cluster between runs. Empty: a temporary directory
	// removed on Stop.
	DataDir string
	// Durable keeps fsync on. Tests turn it off for speed; `cairnd` keeps it.
	Durable bool
	// Settings are extra server settings (name → value).
	Settings map[string]string
	// Log receives the server's own log lines; nil discards them.
	Log func(line string)
	// BaseBackupFrom, when set, makes a new data directory a streaming
	// standby of the server this connection string reaches (as a role that
	// may replicate), with pg_basebackup, instead of initdb.
	BaseBackupFrom string
	// Restart, when set, starts the server again after it exits
	// unexpectedly (killed, crashed), with backoff, until Stop: the
	// clients' pools reconnect as soon as it is back.
	Restart bool
}

// Cluster is a running private PostgreSQL server listening on a Unix socket only.
type Cluster struct {
	dataDir   string
	socketDir string
	temporary bool
	port      int
	stopOnce  sync.Once
	logBuf    *lockedBuffer
	binDir    string
	runAs     *syscall.Credential
	opts      Options

	// attached: the server is another process's (Attach); Stop leaves it.
	attached bool

	mu       sync.Mutex
	run      *serverRun // the current run of the server
	stopping bool
	restarts int
}

// serverRun is one run of the postmaster.
type serverRun struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when it has exited
	waitErr error
}

// Attach finds the server another process runs on dataDir (a cairnd
// serving, while `cairnd token create` runs beside it) by its
// postmaster.pid, and returns it; ok is false when none runs. Stop leaves
// an attached server running.
func Attach(dataDir string) (c *Cluster, ok bool, err error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, false, err
	}
	b, err := os.ReadFile(filepath.Join(abs, "postmaster.pid"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the server's pid file: %w", err)
	}
	// Lines: pid, data directory, start time, port, socket directory, ...
	lines := strings.Split(string(b), "\n")
	if len(lines) < 5 {
		return nil, false, nil // being written: not up yet
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(lines[0]))
	port, err2 := strconv.Atoi(strings.TrimSpace(lines[3]))
	socketDir := strings.TrimSpace(lines[4])
	if err1 != nil || err2 != nil || socketDir == "" {
		return nil, false, nil
	}
	// Signal 0 checks the process exists; EPERM: it does, as another user.
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return nil, false, nil // a stale file of a server that died
	}
	if _, err := os.Stat(filepath.Join(socketDir, fmt.Sprintf(".s.PGSQL.%d", port))); err != nil {
		return nil, false, nil
	}
	return &Cluster{dataDir: abs, socketDir: socketDir, port: port, attached: true, logBuf: &lockedBuffer{}}, true, nil
}

// Start initialises the data directory if needed and starts the server. It
// returns once the server accepts connections.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	binDir, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	runAs, err := serverCredential()
	if err != nil {
		return nil, err
	}

	c := &Cluster{dataDir: opts.DataDir, port: 5432, logBuf: &lockedBuffer{}, binDir: binDir, runAs: runAs, opts: opts}
	if c.dataDir == "" {
		dir, err := os.MkdirTemp("", "cairn-pgdata-")
		if err != nil {
			return nil, fmt.Errorf("create temporary data directory: %w", err)
		}
		c.dataDir, c.temporary = dir, true
	} else if c.dataDir, err = filepath.Abs(c.dataDir); err != nil {
		return nil, fmt.Errorf("data directory %q: %w", opts.DataDir, err)
	}
	// Socket paths are limited to ~100 bytes, so the socket lives in a short
	// temporary directory rather than under the data directory.
	if c.socketDir, err = os.MkdirTemp("", "cairn-pg-"); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	cleanup := func() {
		_ = os.RemoveAll(c.socketDir)
		if c.temporary {
			_ = os.RemoveAll(c.dataDir)
		}
	}
	if err := c.prepare(ctx, binDir, runAs); err != nil {
		cleanup()
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		cleanup()
		return nil, err
	}
	return c, nil
}

// prepare creates the data directory with initdb unless it already holds a cluster.
func (c *Cluster) prepare(ctx context.Context, binDir string, runAs *syscall.Credential) error {
	if err := os.MkdirAll(c.dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory %q: %w", c.dataDir, err)
	}
	if err := handOver(runAs, c.dataDir, c.socketDir); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); err == nil {
		return nil
	}
	if c.opts.BaseBackupFrom != "" {
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "pg_basebackup"),
			"-D", c.dataDir, "-R", "-X", "stream", "--no-sync", "-d", c.opts.BaseBackupFrom)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: runAs}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pg_basebackup into %q failed: %w\n%s", c.dataDir, err, out)
		}
		return nil
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"-D", c.dataDir, "-U", SuperUser, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: runAs}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb in %q failed: %w\n%s", c.dataDir, err, out)
	}
	return nil
}

func (c *Cluster) start(ctx context.Context) error {
	run, err := c.spawn()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, c.ConnString("postgres"))
		if err == nil {
			_ = conn.Close(ctx)
			if c.opts.Restart {
				go c.supervise(run)
			}
			return nil
		}
		select {
		case <-run.done:
			return fmt.Errorf("postgres exited during start-up (%v):\n%s", run.waitErr, c.logBuf.String())
		case <-ctx.Done():
			_ = c.Stop()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.Stop()
			return fmt.Errorf("postgres did not accept connections within 60s: %w\n%s", err, c.logBuf.String())
		}
	}
}

// spawn starts the postmaster once, as the current run.
func (c *Cluster) spawn() (*serverRun, error) {
	settings := map[string]string{
		"listen_addresses":           "",
		"unix_socket_directories":    c.socketDir,
		"port":                       strconv.Itoa(c.port),
		"max_connections":            "300",
		"shared_buffers":             "256MB",
		"dynamic_shared_memory_type": "mmap",
		"logging_collector":          "off",
		"log_min_messages":           "warning",
	}
	if !c.opts.Durable {
		settings["fsync"] = "off"
		settings["synchronous_commit"] = "off"
		settings["full_page_writes"] = "off"
	}
	for k, v := range c.opts.Settings {
		settings[k] = v
	}
	args := []string{"-D", c.dataDir}
	for k, v := range settings {
		args = append(args, "-c", k+"="+v)
	}
	cmd := exec.Command(filepath.Join(c.binDir, "postgres"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: c.runAs,
		Setpgid:    true,
		// The server must not outlive us if we are killed without Stop.
		Pdeathsig: syscall.SIGQUIT,
	}
	w := &lineWriter{buf: c.logBuf, log: c.opts.Log}
	cmd.Stdout, cmd.Stderr = w, w
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return nil, errors.New("the cluster is stopping")
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	run := &serverRun{cmd: cmd, done: make(chan struct{})}
	c.run = run
	go func() {
		run.waitErr = cmd.Wait()
		close(run.done)
	}()
	return run, nil
}

// supervise starts the server again each time it exits without Stop: a
// killed or crashed postmaster is back within seconds (PostgreSQL recovers
// from its WAL), and nothing committed is lost.
func (c *Cluster) supervise(run *serverRun) {
	backoff := 200 * time.Millisecond
	for {
		<-run.done
		c.mu.Lock()
		stopping := c.stopping
		c.mu.Unlock()
		if stopping {
			return
		}
		c.logLine(fmt.Sprintf("cairn: postgres exited unexpectedly (%v); starting it again in %s", run.waitErr, backoff))
		time.Sleep(backoff)
		next, err := c.spawn()
		if err != nil {
			c.mu.Lock()
			stopping = c.stopping
			c.mu.Unlock()
			if stopping {
				return
			}
			c.logLine("cairn: could not start postgres again: " + err.Error())
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		c.mu.Lock()
		c.restarts++
		c.mu.Unlock()
		// A start that fails at once (the old server's backends still hold
		// its shared memory) is retried with a longer wait.
		select {
		case <-next.done:
			backoff = min(2*backoff, 10*time.Second)
		case <-time.After(5 * time.Second):
			backoff = 200 * time.Millisecond
		}
		run = next
	}
}

func (c *Cluster) logLine(line string) {
	c.logBuf.Write([]byte(line + "\n"))
	if c.opts.Log != nil {
		c.opts.Log(line)
	}
}

// Restarts counts the times the server was started again after an
// unexpected exit.
func (c *Cluster) Restarts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restarts
}

// Pid is the current postmaster's process id.
func (c *Cluster) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run == nil || c.run.cmd.Process == nil {
		return 0
	}
	return c.run.cmd.Process.Pid
}

// ConnString returns a libpq connection string for a database of the cluster.
func (c *Cluster) ConnString(database string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", c.socketDir, c.port, SuperUser, database)
}

// URL returns a postgres:// URL for a database of the cluster, as the
// bootstrap superuser.
func (c *Cluster) URL(database string) string {
	return c.URLAs(database, SuperUser)
}

// URLAs returns a postgres:// URL for a database of the cluster, as a role.
func (c *Cluster) URLAs(database, role string) string {
	return fmt.Sprintf("postgres://%s@/%s?host=%s&port=%d&sslmode=disable", role, database, c.socketDir, c.port)
}

// DataDir is where the cluster keeps its files.
func (c *Cluster) DataDir() string { return c.dataDir }

// SocketDir is the directory holding the server's Unix socket.
func (c *Cluster) SocketDir() string { return c.socketDir }

// Stop shuts the server down (fast mode: open sessions are rolled back) and
// removes temporary directories.
func (c *Cluster) Stop() error {
	if c.attached {
		return nil
	}
	var err error
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopping = true
		run := c.run
		c.mu.Unlock()
		if run != nil && run.cmd.Process != nil {
			_ = run.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-run.done:
			case <-time.After(30 * time.Second):
				_ = run.cmd.Process.Signal(syscall.SIGQUIT)
				<-run.done
				err = errors.New("postgres did not stop within 30s; it was stopped immediately")
			}
		}
		_ = os.RemoveAll(c.socketDir)
		if c.temporary {
			_ = os.RemoveAll(c.dataDir)
		}
	})
	return err
}

// serverCredential returns the user the server runs as. PostgreSQL refuses to
// run as root, so as root we hand the cluster to an unprivileged system user.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("running as root, and PostgreSQL refuses to: create a 'postgres' system user, or run as an ordinary user, or set DATABASE_URL")
}

// handOver gives the directories to the server's user and checks it can reach them.
func handOver(runAs *syscall.Credential, dirs ...string) error {
	if runAs == nil {
		return nil
	}
	for _, dir := range dirs {
		if err := os.Chown(dir, int(runAs.Uid), int(runAs.Gid)); err != nil {
			return fmt.Errorf("give %q to the server's user: %w", dir, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("chmod %q: %w", dir, err)
		}
		// Every parent must be searchable by the server's user.
		for p := filepath.Dir(dir); p != "/" && p != "."; p = filepath.Dir(p) {
			st, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("stat %q: %w", p, err)
			}
			if st.Mode().Perm()&0o001 == 0 {
				return fmt.Errorf("the PostgreSQL server runs as uid %d and cannot enter %q (mode %v): choose a data directory outside it", runAs.Uid, p, st.Mode().Perm())
			}
		}
	}
	return nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		b.buf.Reset()
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lineWriter keeps recent server output for error messages and forwards lines.
type lineWriter struct {
	buf     *lockedBuffer
	log     func(string)
	mu      sync.Mutex
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	_, _ = w.buf.Write(p)
	if w.log == nil {
		return len(p), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.log(strings.TrimRight(string(w.partial[:i]), "\r"))
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}
