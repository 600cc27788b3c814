package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cairn/plugins"
	"cairn/plugins/agent"
	"cairn/plugins/agent/local"
	"cairn/sal"
	"cairn/sal/catalog"
)

// recorder is a JobRunner that records each job and hands it to the real
// SAL of this machine, standing for the agent of node "n1".
type recorder struct {
	local.Runner
	mu   sync.Mutex
	jobs []string // "node action"
}

func (r *recorder) RunAction(ctx context.Context, a agent.Action) (json.RawMessage, error) {
	r.mu.Lock()
	r.jobs = append(r.jobs, a.NodeID+" "+a.Action)
	r.mu.Unlock()
	return r.Runner.RunAction(ctx, a)
}

func (r *recorder) count(action string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, j := range r.jobs {
		if strings.HasSuffix(j, " "+action) {
			n++
		}
	}
	return n
}

func setup(t *testing.T) (*agent.Plugin, *recorder, string) {
	t.Helper()
	root := t.TempDir()
	sys, err := sal.New(sal.Config{FileRoots: []string{root}, KillGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Supervisor().StopAll(time.Second) })
	rec := &recorder{Runner: local.Runner{System: sys, NodeID: "n1"}}
	p, err := agent.New(agent.Config{Runner: rec, Nodes: agent.StaticNodes{
		{ID: "n1", Location: "eu-west-1", Labels: map[string]string{"role": "web"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p, rec, root
}

func request(typ, id string, props any) plugins.Request {
	raw, _ := json.Marshal(props)
	return plugins.Request{ResourceID: id, Type: typ, Properties: raw,
		Placement: &plugins.Placement{Location: "eu-west-1", Labels: map[string]string{"role": "web"}}}
}

func TestDirectoryAndFile(t *testing.T) {
	t.Parallel()
	p, _, root := setup(t)
	ctx := context.Background()
	dir := filepath.Join(root, "site")
	dreq := request(agent.TypeDirectory, "r-dir", map[string]string{"path": dir, "mode": "0750"})
	for range 2 {
		out, err := p.Create(ctx, dreq)
		if err != nil {
			t.Fatal(err)
		}
		var o map[string]any
		_ = json.Unmarshal(out, &o)
		if o["node"] != "n1" || o["path"] != dir || o["mode"] != "0750" {
			t.Fatalf("directory outputs %s", out)
		}
		dreq.Outputs = out
	}
	freq := request(agent.TypeFile, "r-file", map[string]string{"node": "n1", "path": dir + "/index.html", "content": "<h1>hi</h1>"})
	out, err := p.Create(ctx, freq)
	if err != nil || !strings.Contains(string(out), `"size":11`) {
		t.Fatalf("file: %s %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "index.html")); string(b) != "<h1>hi</h1>" {
		t.Fatalf("content %q", b)
	}
	if _, err := p.Start(ctx, freq); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := p.Destroy(ctx, freq); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Observe(ctx, freq); !errors.Is(err, plugins.ErrNotFound) {
		t.Fatalf("observe a removed file: %v", err)
	}
	for range 2 {
		if _, err := p.Destroy(ctx, dreq); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory still there: %v", err)
	}
}

func TestProcess(t *testing.T) {
	t.Parallel()
	p, rec, root := setup(t)
	ctx := context.Background()
	req := request(agent.TypeProcess, "r-proc", map[string]any{"argv": []string{"sleep", "300"}, "stdout": root + "/out.log"})
	out, err := p.Create(ctx, req)
	if err != nil || rec.count(catalog.ActionSupervisorStart) != 0 {
		t.Fatalf("create: %s %v (a process runs only once started)", out, err)
	}
	req.Outputs = out
	var first struct {
		PID   int    `json:"pid"`
		State string `json:"state"`
		Name  string `json:"name"`
	}
	out, err = p.Start(ctx, req)
	if err != nil || json.Unmarshal(out, &first) != nil || first.PID == 0 || first.State != "running" || first.Name != "cairn-r-proc" {
		t.Fatalf("start: %s %v", out, err)
	}
	if err := syscall.Kill(first.PID, 0); err != nil {
		t.Fatalf("process %d is not running: %v", first.PID, err)
	}
	// A repeated start (after a crash, say) finds it running.
	out, err = p.Start(ctx, req)
	if err != nil || !strings.Contains(string(out), `"pid":`) || rec.count(catalog.ActionSupervisorStart) != 1 {
		t.Fatalf("second start: %s %v, %d starts", out, err, rec.count(catalog.ActionSupervisorStart))
	}
	for range 2 {
		if _, err := p.Stop(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if rec.count(catalog.ActionSupervisorStop) != 1 {
		t.Fatalf("%d stops for two stop calls", rec.count(catalog.ActionSupervisorStop))
	}
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(first.PID, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after stop", first.PID)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Start, then destroy without stopping: destroy stops it.
	if _, err := p.Start(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Destroy(ctx, req); err != nil {
		t.Fatal(err)
	}
	if out, _ := p.Observe(ctx, req); !strings.Contains(string(out), `"state":"stopped"`) {
		t.Fatalf("observe after destroy: %s", out)
	}
}

func TestBadPropertiesNeverReachANode(t *testing.T) {
	t.Parallel()
	p, rec, _ := setup(t)
	_, err := p.Create(context.Background(), request(agent.TypeDirectory, "r1", map[string]string{"path": "/srv/../etc"}))
	var ia *catalog.InvalidArgumentsError
	if !errors.As(err, &ia) {
		t.Fatalf("err = %v", err)
	}
	_, err = p.Create(context.Background(), request(agent.TypeDirectory, "r1", map[string]string{"path": "/outside/the/roots"}))
	if err == nil || !strings.Contains(err.Error(), "n1") {
		t.Fatalf("outside the roots: %v", err)
	}
	if len(rec.jobs) != 1 {
		t.Fatalf("jobs sent: %v", rec.jobs)
	}
}

func TestPlacement(t *testing.T) {
	t.Parallel()
	nodes := []agent.Node{
		{ID: "a", Location: "eu", Labels: map[string]string{"role": "web", "disk": "ssd"}},
		{ID: "b", Location: "eu", Labels: map[string]string{"role": "web", "disk": "hdd"}},
		{ID: "c", Location: "us", Labels: map[string]string{"role": "web", "disk": "ssd"}},
		{ID: "d", Location: "eu", Labels: map[string]string{"role": "db"}},
	}
	got, err := agent.Place("r1", &plugins.Placement{Location: "eu", Labels: map[string]string{"disk": "ssd"}}, nodes)
	if err != nil || got != "a" {
		t.Fatalf("got %q %v", got, err)
	}
	// Deterministic, and the same whatever the order of the candidates.
	counts := map[string]int{}
	for i := range 200 {
		id := "res-" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		x, _ := agent.Place(id, &plugins.Placement{Labels: map[string]string{"role": "web"}}, nodes)
		y, _ := agent.Place(id, &plugins.Placement{Labels: map[string]string{"role": "web"}}, []agent.Node{nodes[3], nodes[2], nodes[1], nodes[0]})
		if x != y || x == "d" {
			t.Fatalf("%s: %q vs %q", id, x, y)
		}
		counts[x]++
	}
	for _, n := range []string{"a", "b", "c"} {
		if counts[n] < 30 {
			t.Fatalf("uneven spread %v", counts)
		}
	}
	_, err = agent.Place("r1", &plugins.Placement{Location: "ap", Labels: map[string]string{"role": "web"}}, nodes)
	var pe *agent.PlacementError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "location ap and label role=web") {
		t.Fatalf("err = %v", err)
	}
}

// A resource recorded on a node stays there, whatever placement would
// choose now.
func TestRecordedNodeWins(t *testing.T) {
	t.Parallel()
	p, rec, root := setup(t)
	req := request(agent.TypeDirectory, "r1", map[string]string{"path": root + "/x"})
	req.Placement = &plugins.Placement{Labels: map[string]string{"role": "none"}}
	if _, err := p.Create(context.Background(), req); err == nil {
		t.Fatal("placed on a node without the label")
	}
	req.Outputs = json.RawMessage(`{"node":"n1","path":"/x"}`)
	if _, err := p.Destroy(context.Background(), req); err != nil || rec.count(catalog.ActionFileRemove) != 1 {
		t.Fatalf("destroy on the recorded node: %v", err)
	}
}

// Health checks run on the resource's node: the process runs, a port
// answers, an HTTP server answers the expected status; and a process
// updated in place runs with its new properties.
func TestHealthChecksAndUpdate(t *testing.T) {
	t.Parallel()
	p, rec, root := setup(t)
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sick" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	req := request(agent.TypeProcess, "r-hc", map[string]any{"argv": []string{"sleep", "300"}, "stdout": root + "/out.log"})
	out, err := p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Outputs = out
	check := func(typ string, props map[string]any) plugins.Health {
		t.Helper()
		raw, _ := json.Marshal(props)
		h, err := p.CheckHealth(ctx, req, plugins.Check{Name: typ, Type: typ, Properties: raw, Timeout: time.Second})
		if err != nil {
			t.Fatalf("%s check: %v", typ, err)
		}
		return h
	}
	if h := check("process", nil); h.Healthy || !strings.Contains(h.Detail, "not supervised") {
		t.Fatalf("process check before start: %+v", h)
	}
	if req.Outputs, err = p.Start(ctx, req); err != nil {
		t.Fatal(err)
	}
	if h := check("process", nil); !h.Healthy {
		t.Fatalf("process check once started: %+v", h)
	}
	if h := check("tcp", map[string]any{"port": port}); !h.Healthy {
		t.Fatalf("tcp check of a listening port: %+v", h)
	}
	if h := check("http", map[string]any{"port": port, "path": "/"}); !h.Healthy {
		t.Fatalf("http check: %+v", h)
	}
	if h := check("http", map[string]any{"port": port, "path": "/sick"}); h.Healthy || !strings.Contains(h.Detail, "500") {
		t.Fatalf("http check of a sick page: %+v", h)
	}
	if _, err := p.CheckHealth(ctx, req, plugins.Check{Name: "c", Type: "command"}); !errors.Is(err, plugins.ErrCheckUnsupported) {
		t.Fatalf("command check: %v", err)
	}
	if rec.count(catalog.ActionNetHTTP) != 2 || rec.count(catalog.ActionNetTCP) != 1 {
		t.Fatalf("checks did not run on the node: %d http, %d tcp", rec.count(catalog.ActionNetHTTP), rec.count(catalog.ActionNetTCP))
	}

	// Updated in place: stopped as it was, started with the new argv.
	var before, after struct{ PID int }
	_ = json.Unmarshal(req.Outputs, &before)
	req.Properties, _ = json.Marshal(map[string]any{"argv": []string{"sleep", "301"}, "stdout": root + "/out.log"})
	out, err = p.Update(ctx, req)
	if err != nil || json.Unmarshal(out, &after) != nil || after.PID == 0 || after.PID == before.PID {
		t.Fatalf("update: %s %v (pid was %d)", out, err, before.PID)
	}
	req.Outputs = out
	if _, err := p.Destroy(ctx, req); err != nil {
		t.Fatal(err)
	}
	// A directory is replaced, not updated.
	if _, err := p.Update(ctx, request(agent.TypeDirectory, "r-dir", map[string]any{"path": root + "/d"})); !errors.Is(err, plugins.ErrReplace) {
		t.Fatalf("directory update: %v", err)
	}
}
