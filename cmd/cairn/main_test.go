package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cairn/graph/client"
	"cairn/internal/testdb"
	"cairn/internal/testproc"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds cairn and cairnd once for the package's tests.
func binaries(t *testing.T) (cairn, cairnd string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "cairn-cli-test-")
		if buildErr != nil {
			return
		}
		buildErr = testproc.Build(binDir, "cairn", "cairnd")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "cairn"), filepath.Join(binDir, "cairnd")
}

// server is a cairnd serving a fresh database, with its bootstrap admin token.
type server struct {
	url   string
	token string
	db    string // its DATABASE_URL
}

var tokenLine = regexp.MustCompile(`(?m)^\s+(cairn_\S+)\s*$`)

func startServer(t *testing.T, args ...string) server {
	t.Helper()
	_, cairnd := binaries(t)
	db := testdb.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(t.TempDir(), "cairnd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	cmd := exec.Command(cairnd, append([]string{"serve", "--listen", addr, "--log-format", "json", "--data-dir", t.TempDir()}, args...)...)
	cmd.Env = append(testproc.EnvironWithout("DATABASE_URL", "CAIRN_"), "DATABASE_URL="+db.ConnString)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	logs := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-exited:
			t.Fatalf("cairnd exited before becoming ready: %v\n%s", err, logs())
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if m := tokenLine.FindStringSubmatch(logs()); resp.StatusCode == http.StatusOK && m != nil {
				return server{url: "http://" + addr, token: m[1], db: db.ConnString}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("cairnd not ready with a bootstrap token within 2 minutes\n%s", logs())
		}
	}
}

// cli runs the cairn binary with its own configuration directory.
type cli struct {
	t      *testing.T
	bin    string
	config string
	// databaseURL, when set, is the DATABASE_URL the commands see.
	databaseURL string
}

func newCLI(t *testing.T) *cli {
	bin, _ := binaries(t)
	return &cli{t: t, bin: bin, config: t.TempDir()}
}

func (c *cli) command(ctx context.Context, stdin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = append(testproc.EnvironWithout("CAIRN_", "XDG_CONFIG_HOME", "DATABASE_URL"), "XDG_CONFIG_HOME="+c.config)
	if c.databaseURL != "" {
		cmd.Env = append(cmd.Env, "DATABASE_URL="+c.databaseURL)
	}
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

// run returns stdout, stderr and the exit code.
func (c *cli) run(args ...string) (string, string, int) {
	c.t.Helper()
	return c.runInput("", args...)
}

func (c *cli) runInput(stdin string, args ...string) (string, string, int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := c.command(ctx, stdin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	}
	c.t.Fatalf("cairn %s: %v", strings.Join(args, " "), err)
	return "", "", -1
}

func (c *cli) must(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("cairn %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// eventually runs the command until its output satisfies ok: the read
// models apply events a moment after they commit.
func (c *cli) eventually(ok func(string) bool, args ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := c.must(args...)
		if ok(out) {
			return out
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("cairn %s: output never as expected:\n%s", strings.Join(args, " "), out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func gql(t *testing.T, c *client.Client, query string, vars map[string]any, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Do(ctx, query, vars, out); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// enroll makes a node through a join token, as an agent would.
func enroll(t *testing.T, admin *client.Client, hostname string, labels map[string]string) string {
	t.Helper()
	var jt struct {
		CreateJoinToken struct{ Token string }
	}
	gql(t, admin, `mutation { createJoinToken(input: {}) { token } }`, nil, &jt)
	var ls []map[string]string
	for k, v := range labels {
		ls = append(ls, map[string]string{"key": k, "value": v})
	}
	var en struct {
		EnrollAgent struct{ Node struct{ ID string } }
	}
	gql(t, admin.WithToken(""), `mutation($t: String!, $h: String!, $l: [LabelInput!]) {
		enrollAgent(input: {joinToken: $t, hostname: $h, labels: $l}) { node { id } } }`,
		map[string]any{"t": jt.CreateJoinToken.Token, "h": hostname, "l": ls}, &en)
	return en.EnrollAgent.Node.ID
}

func TestCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn and cairnd and runs the server")
	}
	srv := startServer(t)
	c := newCLI(t)

	// Not logged in yet: a non-zero exit that says what to do.
	if _, errOut, code := c.run("nodes"); code == 0 || !strings.Contains(errOut, "cairn login") {
		t.Fatalf("nodes before login: exit %d, %q", code, errOut)
	}
	// A token the server refuses is not stored; the server's code shows.
	if _, errOut, code := c.run("login", "--server", srv.url, "--token", "cairn_nope_nope"); code != 1 || !strings.Contains(errOut, "UNAUTHENTICATED") {
		t.Fatalf("login with a bad token: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(c.config, "cairn", "config.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused token was stored: %v", err)
	}
	if _, _, code := c.run("nodes", "-o", "xml"); code != exitUsage {
		t.Fatalf("unknown output format: exit %d, want %d", code, exitUsage)
	}

	// Log in with the token on standard input.
	out, errOut, code := c.runInput(srv.token+"\n", "login", "--server", srv.url)
	if code != 0 || !strings.Contains(out, "ADMIN") {
		t.Fatalf("login: exit %d, %q %q", code, out, errOut)
	}
	path := filepath.Join(c.config, "cairn", "config.json")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config file %s: %v, mode %v", path, err, st.Mode())
	}
	var stored config
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &stored); err != nil || stored.Server != srv.url || stored.Token != srv.token {
		t.Fatalf("stored config %s: %v", b, err)
	}

	admin := client.New(srv.url, srv.token, nil)
	web := enroll(t, admin, "web-1", map[string]string{"role": "web"})
	db := enroll(t, admin, "db-1", map[string]string{"role": "db"})

	// Nodes, in both outputs and filtered.
	out = c.eventually(func(s string) bool { return strings.Contains(s, "web-1") && strings.Contains(s, "db-1") }, "nodes")
	if !strings.HasPrefix(out, "HOSTNAME") || strings.Contains(out, web) || !strings.Contains(out, "role=web") {
		t.Fatalf("nodes table (hostnames, no ids):\n%s", out)
	}
	if out := c.must("nodes", "-o", "wide"); !strings.HasPrefix(out, "ID") || !strings.Contains(out, web) {
		t.Fatalf("nodes -o wide:\n%s", out)
	}
	var nodes []nodeRow
	if err := json.Unmarshal([]byte(c.must("nodes", "-o", "json", "--label", "role=db")), &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].ID != db || nodes[0].Hostname != "db-1" {
		t.Fatalf("nodes --label role=db: %+v", nodes)
	}
	if out := c.must("nodes", "-o", "yaml", "--label", "role=db"); !strings.Contains(out, "hostname: db-1") {
		t.Fatalf("nodes -o yaml:\n%s", out)
	}
	if err := json.Unmarshal([]byte(c.must("nodes", "-o", "json", "--status", "decommissioned")), &nodes); err != nil || len(nodes) != 0 {
		t.Fatalf("nodes --status decommissioned: %+v %v", nodes, err)
	}
	if _, errOut, code := c.run("nodes", "--status", "sleeping"); code != 1 || !strings.Contains(errOut, "SLEEPING") {
		t.Fatalf("nodes with an unknown status: exit %d, %q", code, errOut)
	}

	// Jobs.
	var sj struct {
		SubmitJob struct{ Job struct{ ID string } }
	}
	gql(t, admin, `mutation($n: ID) { submitJob(input: {spec: {kind: SCRIPT, script: {interpreter: "sh", body: "true"}}, target: {nodeId: $n}}) { job { id } } }`,
		map[string]any{"n": web}, &sj)
	job := sj.SubmitJob.Job.ID
	out = c.eventually(func(s string) bool { return strings.Contains(s, job) }, "jobs")
	if !strings.Contains(out, "SCRIPT") || !strings.Contains(out, "QUEUED") {
		t.Fatalf("jobs table:\n%s", out)
	}
	var jobs []jobRow
	if err := json.Unmarshal([]byte(c.must("jobs", "-o", "json", "--status", "queued,running")), &jobs); err != nil || len(jobs) != 1 || jobs[0].ID != job {
		t.Fatalf("jobs -o json --status: %+v %v", jobs, err)
	}

	// Services: none deployed on this server (its catalog has no template
	// whose plugins it runs), so both outputs show an empty list.
	out = c.must("services")
	if strings.TrimSpace(out) != "NAME  TENANT  TEMPLATE  STATUS  UPDATED" {
		t.Fatalf("services table:\n%q", out)
	}
	if out := c.must("services", "-o", "json", "--status", "running"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("services -o json: %q", out)
	}

	// The event log without following.
	out = c.must("events", "tail", "--stream-type", "node", "-n", "1")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "CURSOR") {
		t.Fatalf("events tail -n 1:\n%s", out)
	}
	var evs []eventRow
	if err := json.Unmarshal([]byte(c.must("events", "tail", "--after", "0", "--stream-type", "node", "-o", "json")), &evs); err != nil {
		t.Fatal(err)
	}
	if len(evs) < 2 || evs[0].StreamType != "node" || evs[0].Cursor == "" {
		t.Fatalf("events tail --after 0: %+v", evs)
	}
	// The administrator who made the join token acted: the table names them.
	if out := c.must("events", "tail", "-n", "20"); !strings.Contains(out, "Administrator") {
		t.Errorf("events tail shows no actor by name:\n%s", out)
	}
	var rest []eventRow
	if err := json.Unmarshal([]byte(c.must("events", "tail", "--after", evs[0].Cursor, "--stream-type", "node", "-o", "json")), &rest); err != nil || len(rest) != len(evs)-1 {
		t.Fatalf("events tail --after the first: %d events, want %d (%v)", len(rest), len(evs)-1, err)
	}

	// Following receives a live event. The follower's whole life, markers
	// included, fits in this deadline however loaded the machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	follow := c.command(ctx, "", "events", "tail", "--follow", "-n", "0", "--stream-type", "node", "-o", "json")
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var followErr bytes.Buffer
	follow.Stderr = &followErr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() eventRow {
		t.Helper()
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("events tail --follow ended: %s", followErr.String())
			}
			var e eventRow
			if err := json.Unmarshal([]byte(line), &e); err != nil || e.Cursor == "" {
				t.Fatalf("followed event %q: %v", line, err)
			}
			return e
		case <-time.After(30 * time.Second):
			t.Fatalf("no event followed within 30s; stderr: %s", followErr.String())
		}
		return eventRow{}
	}
	// Following from now starts wherever the log is when the command has
	// looked, which may be after an event made right after starting it; so
	// markers (label changes of node web) are made every half second until
	// one is followed, and then the output is read up to the newest marker.
	var mu sync.Mutex
	var newest string
	stopMarkers := make(chan struct{})
	markersDone := make(chan struct{})
	go func() {
		defer close(markersDone)
		for i := 0; ; i++ {
			var out struct{ SetNodeLabels struct{ Cursor string } }
			mctx, mcancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := admin.Do(mctx, `mutation($n: ID!, $v: String!) { setNodeLabels(input: {nodeId: $n,
				labels: [{key: "role", value: "web"}, {key: "marker", value: $v}]}) { cursor } }`,
				map[string]any{"n": web, "v": strconv.Itoa(i)}, &out)
			mcancel()
			if err != nil {
				t.Errorf("marker: %v", err)
				return
			}
			mu.Lock()
			newest = out.SetNodeLabels.Cursor
			mu.Unlock()
			select {
			case <-stopMarkers:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	first := next()
	close(stopMarkers)
	<-markersDone
	mu.Lock()
	last := newest
	mu.Unlock()
	for e := first; e.Cursor != last; e = next() {
		if e.StreamID != "node-"+web {
			t.Fatalf("followed %+v, want a marker of node-%s", e, web)
		}
	}
	// Now it follows: the next event is the drain.
	gql(t, admin, `mutation($n: ID!) { drainNode(input: {nodeId: $n, reason: "test"}) { cursor } }`, map[string]any{"n": db}, nil)
	if e := next(); e.StreamID != "node-"+db {
		t.Fatalf("followed %+v, want the drain of node-%s", e, db)
	}
	_ = follow.Process.Signal(os.Interrupt)
	if err := follow.Wait(); err != nil {
		t.Fatalf("events tail --follow after an interrupt: %v\n%s", err, followErr.String())
	}
	for range lines {
	}
}
