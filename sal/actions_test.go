package sal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/sal/catalog"
)

func TestActionsListMatchesCatalogue(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	schemas := ActionSchemas()
	acts := s.Actions()
	if len(acts) != len(schemas) {
		t.Fatalf("%d actions, %d schemas", len(acts), len(schemas))
	}
	for i, a := range acts {
		if i > 0 && acts[i-1].Name >= a.Name {
			t.Errorf("not sorted at %s", a.Name)
		}
		if a.Schema != schemas[a.Name] || !json.Valid([]byte(a.Schema)) {
			t.Errorf("%s: schema missing or not JSON", a.Name)
		}
	}
	for _, want := range []string{"sal.host", "sal.cpu", "sal.memory", "sal.disks", "sal.net.interfaces", "sal.load",
		"sal.processes", "sal.process.signal", "sal.process.start", "sal.file.read", "sal.file.write",
		"sal.file.stat", "sal.file.remove", "sal.net.tcp", "sal.net.dns"} {
		if _, ok := schemas[want]; !ok {
			t.Errorf("action %s is missing", want)
		}
	}
}

func TestInvokeRefusals(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	tests := []struct {
		name, action, args string
		wantProblem        string // for *InvalidArgumentsError; "" with unknown set
		unknown            bool
	}{
		{"unknown action", "sal.reboot", `{}`, "", true},
		{"job kinds are not actions", "exec", `{"argv":["true"]}`, "", true},
		{"missing property", catalog.ActionFileRead, `{}`, "/: missing property 'path'", false},
		{"wrong type", catalog.ActionNetTCP, `{"host":"127.0.0.1","port":"http"}`, "/port: got string, want integer", false},
		{"out of range", catalog.ActionNetTCP, `{"host":"127.0.0.1","port":0}`, "/port: minimum", false},
		{"unknown property", catalog.ActionFileStat, `{"path":"/x","follow":true}`, "/: additional properties 'follow'", false},
		{"nested", catalog.ActionSupervisorStart, `{"name":"a","argv":["x"],"restart":{"max_restarts":"many"}}`, "/restart/max_restarts: got string, want integer", false},
		{"bad base64", catalog.ActionFileWrite, fmt.Sprintf(`{"path":%q,"content":"!!","encoding":"base64"}`, root+"/f"), "/content: not valid base64", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := s.Invoke(context.Background(), tt.action, json.RawMessage(tt.args))
			if tt.unknown {
				var ue *UnknownActionError
				if !errors.As(err, &ue) || ue.Name != tt.action {
					t.Fatalf("want *UnknownActionError{%s}, got %v", tt.action, err)
				}
				return
			}
			var ie *InvalidArgumentsError
			if !errors.As(err, &ie) {
				t.Fatalf("want *InvalidArgumentsError, got %v", err)
			}
			if ie.Action != tt.action || !slices.ContainsFunc(ie.Problems, func(p string) bool { return strings.Contains(p, tt.wantProblem) }) {
				t.Errorf("got %s %q, want a problem containing %q", ie.Action, ie.Problems, tt.wantProblem)
			}
		})
	}
}

func TestInvoke(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	ctx := context.Background()
	invoke := func(action string, args any, out any) {
		t.Helper()
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Invoke(ctx, action, raw)
		if err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		if out != nil {
			if err := json.Unmarshal(res, out); err != nil {
				t.Fatalf("%s: result %s: %v", action, res, err)
			}
		}
	}

	var mem MemoryInfo
	invoke(catalog.ActionMemory, nil, &mem)
	if mem.TotalBytes == 0 {
		t.Errorf("memory: %+v", mem)
	}

	dir := filepath.Join(root, "etc")
	var fi FileInfo
	invoke(catalog.ActionFileMkdir, map[string]any{"path": dir, "mode": "0700"}, &fi)
	if fi.Type != "dir" || fi.Mode != "0700" {
		t.Errorf("mkdir: %+v", fi)
	}
	p := filepath.Join(dir, "app.conf")
	invoke(catalog.ActionFileWrite, map[string]any{"path": p, "content": "port=80\n", "mode": "0640"}, &fi)
	if fi.Size != 8 || fi.Mode != "0640" {
		t.Errorf("write: %+v", fi)
	}
	var fc FileContent
	invoke(catalog.ActionFileRead, map[string]any{"path": p}, &fc)
	if fc.Content != "port=80\n" || fc.Encoding != "utf-8" {
		t.Errorf("read: %+v", fc)
	}
	bin := filepath.Join(dir, "blob")
	invoke(catalog.ActionFileWrite, map[string]any{"path": bin, "content": "/w==", "encoding": "base64"}, nil)
	invoke(catalog.ActionFileRead, map[string]any{"path": bin}, &fc)
	if fc.Encoding != "base64" || fc.Content != "/w==" || fc.Size != 1 {
		t.Errorf("binary read: %+v", fc)
	}
	var rr RemoveResult
	invoke(catalog.ActionFileRemove, map[string]any{"path": p}, &rr)
	if !rr.Removed {
		t.Errorf("remove: %+v", rr)
	}
	invoke(catalog.ActionFileRemove, map[string]any{"path": p}, &rr)
	if rr.Removed {
		t.Errorf("second remove claims to have removed: %+v", rr)
	}
	invoke(catalog.ActionFileRemove, map[string]any{"path": dir, "recursive": true}, &rr)
	if !rr.Removed {
		t.Errorf("recursive remove: %+v", rr)
	}

	_, err := s.Invoke(ctx, catalog.ActionFileRead, json.RawMessage(`{"path":"/etc/hostname"}`))
	var pe *PathOutsideRootsError
	if !errors.As(err, &pe) {
		t.Errorf("read outside roots: want *PathOutsideRootsError, got %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var tcp TCPCheckResult
	invoke(catalog.ActionNetTCP, map[string]any{"host": "127.0.0.1", "port": ln.Addr().(*net.TCPAddr).Port, "timeout_ms": 1000}, &tcp)
	if !tcp.Reachable {
		t.Errorf("tcp: %+v", tcp)
	}
	var dns DNSResult
	invoke(catalog.ActionNetDNS, map[string]any{"name": "localhost"}, &dns)
	if len(dns.Addresses) == 0 {
		t.Errorf("dns: %+v", dns)
	}

	var started StartResult
	invoke(catalog.ActionProcessStart, map[string]any{"argv": []string{"sleep", "30"}}, &started)
	var ps ProcessStats
	invoke(catalog.ActionProcessGet, map[string]any{"pid": started.PID}, &ps)
	if ps.Name != "sleep" {
		t.Errorf("process.get: %+v", ps)
	}
	var sig SignalResult
	invoke(catalog.ActionProcessSignal, map[string]any{"pid": started.PID, "signal": "SIGKILL"}, &sig)
	if sig.Signal != "SIGKILL" {
		t.Errorf("signal: %+v", sig)
	}
	eventually(t, wait, "the started process to die", func() bool { return !pidAlive(started.PID) })

	var sup SupervisedStatus
	invoke(catalog.ActionSupervisorStart, map[string]any{"name": "svc", "argv": []string{"sleep", "30"}, "restart": map[string]any{"max_restarts": 1}}, &sup)
	if sup.State != StateRunning {
		t.Errorf("supervisor.start: %+v", sup)
	}
	var list []SupervisedStatus
	invoke(catalog.ActionSupervisorStatus, nil, &list)
	if len(list) != 1 || list[0].Name != "svc" {
		t.Errorf("supervisor.status: %+v", list)
	}
	invoke(catalog.ActionSupervisorStop, map[string]any{"name": "svc", "grace_ms": 500}, &sup)
	if sup.State != StateStopped {
		t.Errorf("supervisor.stop: %+v", sup)
	}
}

// TestArgumentStructsCoverSchemas feeds each action a document using every
// property of its schema, so an argument struct that lags behind its schema
// (and would refuse a valid job) fails here rather than on a node.
func TestArgumentStructsCoverSchemas(t *testing.T) {
	t.Parallel()
	full := map[string]string{
		catalog.ActionProcessGet:       `{"pid":1}`,
		catalog.ActionProcessSignal:    `{"pid":1,"signal":"SIGHUP"}`,
		catalog.ActionProcessStart:     `{"argv":["x"],"env":{"A":"1"},"clear_env":true,"dir":"/","stdout":"/a","stderr":"/b"}`,
		catalog.ActionSupervisorStart:  `{"name":"n","argv":["x"],"env":{"A":"1"},"clear_env":true,"dir":"/","stdout":"/a","stderr":"/b","restart":{"max_restarts":1,"initial_backoff_ms":1,"max_backoff_ms":2,"reset_after_ms":3}}`,
		catalog.ActionSupervisorStop:   `{"name":"n","grace_ms":1}`,
		catalog.ActionSupervisorStatus: `{"name":"n"}`,
		catalog.ActionFileRead:         `{"path":"/a","max_bytes":1}`,
		catalog.ActionFileWrite:        `{"path":"/a","content":"x","encoding":"utf-8","mode":"0644"}`,
		catalog.ActionFileStat:         `{"path":"/a"}`,
		catalog.ActionFileRemove:       `{"path":"/a","recursive":true}`,
		catalog.ActionFileMkdir:        `{"path":"/a","mode":"0755"}`,
		catalog.ActionNetTCP:           `{"host":"h","port":1,"timeout_ms":1}`,
		catalog.ActionNetHTTP:          `{"url":"http://h:1/x","expect_status":204,"timeout_ms":1}`,
		catalog.ActionNetDNS:           `{"name":"n"}`,
	}
	args := map[string]any{
		catalog.ActionProcessGet:       &pidArgs{},
		catalog.ActionProcessSignal:    &signalArgs{},
		catalog.ActionProcessStart:     &processStartArgs{},
		catalog.ActionSupervisorStart:  &supervisorStartArgs{},
		catalog.ActionSupervisorStop:   &supervisorNameArgs{},
		catalog.ActionSupervisorStatus: &supervisorNameArgs{},
		catalog.ActionFileRead:         &fileReadArgs{},
		catalog.ActionFileWrite:        &fileWriteArgs{},
		catalog.ActionFileStat:         &pathArgs{},
		catalog.ActionFileRemove:       &fileRemoveArgs{},
		catalog.ActionFileMkdir:        &fileMkdirArgs{},
		catalog.ActionNetTCP:           &tcpArgs{},
		catalog.ActionNetHTTP:          &httpArgs{},
		catalog.ActionNetDNS:           &dnsArgs{},
	}
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	for name, schema := range ActionSchemas() {
		doc, ok := full[name]
		if !ok {
			if !strings.Contains(schema, `"properties"`) {
				continue // takes no arguments
			}
			t.Errorf("%s: add a full argument document to this test", name)
			continue
		}
		if err := v.Validate(name, json.RawMessage(doc)); err != nil {
			t.Errorf("%s: sample is invalid: %v", name, err)
		}
		if err := decodeArgs(name, json.RawMessage(doc), args[name]); err != nil {
			t.Errorf("%s: argument struct refuses a valid document: %v", name, err)
		}
	}
}

func TestDecodeJobs(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	es, err := s.DecodeExec(json.RawMessage(`{"argv":["echo","hi"],"env":{"A":"1"},"clear_env":true,"stdin":"in","dir":"/tmp","timeout_ms":1500,"kill_grace_ms":250}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(es.Argv, []string{"echo", "hi"}) || es.Env["A"] != "1" || !es.ClearEnv || string(es.Stdin) != "in" ||
		es.Dir != "/tmp" || es.Timeout != 1500*time.Millisecond || es.KillGrace != 250*time.Millisecond {
		t.Errorf("exec spec: %+v", es)
	}
	ss, err := s.DecodeScript(json.RawMessage(`{"interpreter":"sh","body":"echo 1","args":["a"],"timeout_ms":10000}`))
	if err != nil {
		t.Fatal(err)
	}
	if ss.Interpreter != "sh" || ss.Body != "echo 1" || !slices.Equal(ss.Args, []string{"a"}) || ss.Timeout != 10*time.Second || ss.Stdin != nil {
		t.Errorf("script spec: %+v", ss)
	}
	res, err := s.RunScript(context.Background(), ss, nil)
	if err != nil || res.ExitCode != 0 {
		t.Errorf("decoded script run: %+v %v", res, err)
	}

	_, err = s.DecodeExec(json.RawMessage(`{"argv":"echo hi"}`))
	var ie *InvalidArgumentsError
	if !errors.As(err, &ie) || ie.Action != catalog.JobExec || !strings.HasPrefix(ie.Problems[0], "/argv") {
		t.Errorf("bad exec args: %v", err)
	}
}
