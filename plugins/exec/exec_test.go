package exec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/plugins"
	"cairn/plugins/exec"
)

// python finds the interpreter itself: version-manager shims on PATH can
// take seconds to start.
var python = sync.OnceValues(func() (string, error) {
	out, err := osexec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	return strings.TrimSpace(string(out)), err
})

func python3(t *testing.T) string {
	t.Helper()
	py, err := python()
	if err != nil || py == "" {
		t.Skipf("python3 is not available (%v): the example plugins are Python scripts", err)
	}
	return py
}

func start(t *testing.T, command ...string) *exec.Plugin {
	t.Helper()
	p, err := exec.New(context.Background(), exec.Config{Command: command, Restart: time.Millisecond, StopGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func fileReq(id, content string) plugins.Request {
	props, _ := json.Marshal(map[string]string{"name": "motd.txt", "content": content})
	return plugins.Request{ResourceID: id, Type: "file", Properties: props}
}

// The example filestore plugin, driven through the protocol.
func TestFilestoreExample(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := start(t, python3(t), "../../examples/plugins/filestore/filestore.py", root)
	if ts := p.ResourceTypes(); len(ts) != 1 || ts[0].Name != "file" || !strings.Contains(string(ts[0].Schema), `"content"`) {
		t.Fatalf("types %+v", ts)
	}
	ctx := context.Background()
	id := "0123456789abcdef0123456789abcdef"
	var first json.RawMessage
	for i := range 2 {
		out, err := p.Create(ctx, fileReq(id, "hello"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = out
		} else if string(out) != string(first) {
			t.Fatalf("repeated create answered %s, first %s", out, first)
		}
	}
	path := filepath.Join(root, id, "motd.txt")
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello" {
		t.Fatalf("file: %q %v", b, err)
	}
	var outs struct {
		Path string `json:"path"`
		Size int    `json:"size"`
	}
	if err := json.Unmarshal(first, &outs); err != nil || outs.Path != path || outs.Size != 5 {
		t.Fatalf("outputs %s", first)
	}
	for _, call := range []func(context.Context, plugins.Request) (json.RawMessage, error){p.Start, p.Stop, p.Observe} {
		if _, err := call(ctx, fileReq(id, "hello")); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := p.Destroy(ctx, fileReq(id, "hello")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("still there after destroy: %v", err)
	}
	if _, err := p.Observe(ctx, fileReq(id, "hello")); !errors.Is(err, plugins.ErrNotFound) {
		t.Fatalf("observe after destroy: %v", err)
	}
	_, err := p.Create(ctx, plugins.Request{ResourceID: "../escape", Type: "file", Properties: json.RawMessage(`{"name":"x","content":""}`)})
	var re *exec.RemoteError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "not a plain id") {
		t.Fatalf("escaping id: %v", err)
	}
}

// Calls from many goroutines share one process and get their own answers.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := start(t, python3(t), "../../examples/plugins/filestore/filestore.py", root)
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for i := range errs {
		wg.Go(func() {
			id := fmt.Sprintf("%032x", i)
			out, err := p.Create(context.Background(), fileReq(id, strings.Repeat("x", i)))
			if err == nil && !strings.Contains(string(out), fmt.Sprintf(`"size": %d`, i)) && !strings.Contains(string(out), fmt.Sprintf(`"size":%d`, i)) {
				err = fmt.Errorf("resource %d got %s", i, out)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func TestMisbehavingPlugin(t *testing.T) {
	t.Parallel()
	p := start(t, python3(t), "testdata/misbehave.py")
	ctx := context.Background()
	req := func(id string) plugins.Request { return plugins.Request{ResourceID: id, Type: "thing"} }
	pid := func() string {
		t.Helper()
		out, err := p.Create(ctx, req("ok"))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	before := pid()

	_, err := p.Create(ctx, req("garbage"))
	var pe *exec.ProtocolError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "Traceback") || !strings.Contains(err.Error(), "stderr") {
		t.Fatalf("garbage: %v", err)
	}
	// The process that broke the protocol was replaced.
	if after := pid(); after == before {
		t.Fatal("the plugin was not restarted after breaking the protocol")
	}

	_, err = p.Create(ctx, req("crash"))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "lost my marbles") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("crash: %v", err)
	}
	pid()

	for id, want := range map[string]string{"no-result": "neither result nor error", "outputs-list": ""} {
		out, err := p.Create(ctx, req(id))
		if id == "outputs-list" {
			// The raw outputs reach the registry, which refuses them.
			if _, cerr := plugins.CheckOutputs(out); err != nil || cerr == nil {
				t.Fatalf("%s: %s %v %v", id, out, err, cerr)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v", id, err)
		}
	}

	// "slow" answers after ten seconds: the call ends well before, however
	// loaded the machine, when its context does.
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := p.Create(tctx, req("slow")); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 8*time.Second {
		t.Fatalf("slow: %v after %s", err, time.Since(start))
	}
}

func TestStartFailures(t *testing.T) {
	t.Parallel()
	py := python3(t)
	_, err := exec.New(context.Background(), exec.Config{Command: []string{py, "testdata/misbehave.py", "bad-describe"}})
	if err == nil || !strings.Contains(err.Error(), `"types"`) {
		t.Fatalf("bad describe: %v", err)
	}
	_, err = exec.New(context.Background(), exec.Config{Command: []string{"/nonexistent/plugin"}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/plugin") {
		t.Fatalf("missing program: %v", err)
	}
	_, err = exec.New(context.Background(), exec.Config{Command: []string{py, "-c", "import sys; print('usage: x', file=sys.stderr); sys.exit(2)"}})
	if err == nil || !strings.Contains(err.Error(), "usage: x") {
		t.Fatalf("exiting program: %v", err)
	}
}
