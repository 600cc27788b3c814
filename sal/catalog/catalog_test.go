package catalog

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestSchemasCompile(t *testing.T) {
	t.Parallel()
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	for name := range ActionSchemas() {
		if !strings.HasPrefix(name, "sal.") {
			t.Errorf("action %q does not start with sal.", name)
		}
		if !v.Has(name) {
			t.Errorf("validator lacks %s", name)
		}
	}
	for name := range JobSchemas() {
		if !v.Has(name) {
			t.Errorf("validator lacks job kind %s", name)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, action, args string
		wantProblem        string // substring of one problem; "" means valid
	}{
		{"empty args for no-arg action", ActionHost, ``, ""},
		{"null-free empty object", ActionMemory, `{}`, ""},
		{"extra field on no-arg action", ActionHost, `{"x":1}`, "/: additional properties 'x'"},
		{"tcp ok", ActionNetTCP, `{"host":"127.0.0.1","port":80}`, ""},
		{"tcp port too high", ActionNetTCP, `{"host":"h","port":70000}`, "/port: maximum"},
		{"tcp port wrong type", ActionNetTCP, `{"host":"h","port":"80"}`, "/port: got string, want integer"},
		{"tcp missing host", ActionNetTCP, `{"port":80}`, "/: missing property 'host'"},
		{"read absolute path", ActionFileRead, `{"path":"/srv/a.txt"}`, ""},
		{"read relative path", ActionFileRead, `{"path":"srv/a.txt"}`, "/path: "},
		{"read dotdot", ActionFileRead, `{"path":"/srv/../etc/passwd"}`, "/path: "},
		{"read trailing dotdot", ActionFileRead, `{"path":"/srv/.."}`, "/path: "},
		{"read dot names are fine", ActionFileRead, `{"path":"/srv/.cfg/..x/.../a..b/."}`, ""},
		{"read max_bytes too large", ActionFileRead, `{"path":"/a","max_bytes":999999999}`, "/max_bytes: maximum"},
		{"write bad mode", ActionFileWrite, `{"path":"/a","content":"x","mode":"4755"}`, "/mode: "},
		{"write good mode", ActionFileWrite, `{"path":"/a","content":"x","mode":"0600"}`, ""},
		{"signal unknown", ActionProcessSignal, `{"pid":1,"signal":"SIGFOO"}`, "/signal: "},
		{"signal pid zero", ActionProcessSignal, `{"pid":0}`, "/pid: minimum"},
		{"not JSON", ActionHost, `{`, "/: not valid JSON"},
		{"exec ok", JobExec, `{"argv":["echo","hi"],"env":{"A":"1"},"stdin":"x","timeout_ms":1000}`, ""},
		{"exec empty program", JobExec, `{"argv":[""]}`, "/argv/0: minLength"},
		{"exec empty argv", JobExec, `{"argv":[]}`, "/argv: minItems"},
		{"exec env name with =", JobExec, `{"argv":["x"],"env":{"A=B":"1"}}`, "/: 'A=B' does not match pattern"},
		{"script ok", JobScript, `{"interpreter":"python3","body":"print(1)","args":["a"]}`, ""},
		{"script bad interpreter", JobScript, `{"interpreter":"perl","body":"1"}`, "/interpreter: "},
		{"supervisor restart unknown field", ActionSupervisorStart, `{"name":"web","argv":["x"],"restart":{"forever":true}}`, "/restart: additional properties 'forever'"},
		{"supervisor bad name", ActionSupervisorStart, `{"name":"-web","argv":["x"]}`, "/name: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := v.Validate(tt.action, json.RawMessage(tt.args))
			if tt.wantProblem == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ia *InvalidArgumentsError
			if !errors.As(err, &ia) {
				t.Fatalf("want *InvalidArgumentsError, got %v", err)
			}
			if ia.Action != tt.action {
				t.Errorf("Action = %q, want %q", ia.Action, tt.action)
			}
			for _, p := range ia.Problems {
				if strings.Contains(p, tt.wantProblem) {
					return
				}
			}
			t.Errorf("no problem contains %q: %q", tt.wantProblem, ia.Problems)
		})
	}
}

func TestValidateUnknown(t *testing.T) {
	t.Parallel()
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	err = v.Validate("sal.reboot", nil)
	var ua *UnknownActionError
	if !errors.As(err, &ua) || ua.Name != "sal.reboot" {
		t.Fatalf("want *UnknownActionError for sal.reboot, got %v", err)
	}
}

func TestSchemasAreFreshCopies(t *testing.T) {
	t.Parallel()
	m := ActionSchemas()
	delete(m, ActionHost)
	if _, ok := ActionSchemas()[ActionHost]; !ok {
		t.Fatal("changing a returned map changed the catalogue")
	}
}

// The schemas spell the limits out as literals; this keeps both in step.
func TestLimitsMatchSchemas(t *testing.T) {
	t.Parallel()
	actions, jobs := ActionSchemas(), JobSchemas()
	tests := []struct {
		schema, keyword string
		limit           int
	}{
		{actions[ActionFileRead], `"maximum":`, MaxReadBytes},
		{jobs[JobExec], `"maximum":`, MaxTimeoutMS},
		{jobs[JobScript], `"maximum":`, MaxKillGraceMS},
		{actions[ActionNetTCP], `"maximum":`, MaxTCPTimeoutMS},
	}
	for _, tt := range tests {
		if !strings.Contains(tt.schema, tt.keyword+strconv.Itoa(tt.limit)) {
			t.Errorf("no %s%d in %s", tt.keyword, tt.limit, tt.schema)
		}
	}
}
