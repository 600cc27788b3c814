package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/agent"
	"cairn/commands/access"
	"cairn/commands/jobs"
	"cairn/dispatch/dispatchtest"
	"cairn/domain/job"
)

// gql sends an operation with a bearer token and returns the first error's
// code and message, if any.
func (s *server) gql(token, query string, vars map[string]any) (code, message string) {
	s.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequestWithContext(ctxFor(s.t), http.MethodPost, s.api.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Errors []struct {
			Message    string         `json:"message"`
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		s.t.Fatal(err)
	}
	if len(r.Errors) == 0 {
		return "", ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c, r.Errors[0].Message
}

// Bad input is refused with an error that says what is wrong, and nothing
// runs: join tokens used twice or expired, an agent acting for another
// node, unknown actions, arguments off their schema, a node that does not
// exist, a path outside the node's file roots.
func TestRefusals(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	token := s.joinToken(nil)
	a := s.startAgent(agent.Config{JoinToken: token})
	nodeA := s.nodeOnline(a)

	// The same join token again.
	again, err := agent.New(agent.Config{Server: s.api.URL, JoinToken: token, DataDir: t.TempDir(), RunnerCommand: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Run(ctxFor(t)); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Errorf("reused join token: %v", err)
	}
	// An expired one.
	short, err := s.Access.IssueJoinToken(ctxFor(t), dispatchtest.Operator, access.IssueJoinToken{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	late, err := agent.New(agent.Config{Server: s.api.URL, JoinToken: short.Token, DataDir: t.TempDir(), RunnerCommand: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := late.Run(ctxFor(t)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired join token: %v", err)
	}

	// Node A's credential acting for node B.
	b := s.startAgent(agent.Config{JoinToken: s.joinToken(nil)})
	nodeB := s.nodeOnline(b)
	credA, err := os.ReadFile(filepath.Join(a.cfg.DataDir, "credential"))
	if err != nil {
		t.Fatal(err)
	}
	code, msg := s.gql(strings.TrimSpace(string(credA)), `mutation($n: ID!) { heartbeat(input: {nodeId: $n}) { intervalSeconds } }`, map[string]any{"n": nodeB})
	if code != "FORBIDDEN" || !strings.Contains(msg, nodeA) {
		t.Errorf("credential of %s acting for %s: %s %q", nodeA, nodeB, code, msg)
	}
	code, _ = s.gql(strings.TrimSpace(string(credA)), `subscription($n: ID!) { agentJobs(nodeId: $n) { cursor } }`, map[string]any{"n": nodeB})
	if code != "FORBIDDEN" {
		t.Errorf("feed of another node: %q", code)
	}

	// Jobs the catalogue or the domain refuses are never queued.
	refused := []struct {
		name string
		in   jobs.Submit
		want string
	}{
		{"unknown action", jobs.Submit{Target: job.Target{NodeID: nodeA}, Spec: job.Spec{Kind: job.KindAction, Action: "sal.format_disk"}}, "sal.format_disk"},
		{"arguments off the schema", jobs.Submit{Target: job.Target{NodeID: nodeA},
			Spec: job.Spec{Kind: job.KindAction, Action: "sal.file.read", Args: json.RawMessage(`{"path": 42}`)}}, "spec.args"},
		{"node that does not exist", jobs.Submit{Target: job.Target{NodeID: "ghost"}, Spec: script("true")}, `node "ghost" does not exist`},
	}
	for _, tc := range refused {
		tc.in.Timeout = time.Minute
		if _, err := s.Jobs.Submit(context.Background(), dispatchtest.Operator, tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}

	// A path outside the node's roots is refused on the node, and the job
	// fails saying so; nothing was written.
	outside := filepath.Join(t.TempDir(), "nope.txt")
	id := s.submit(jobs.Submit{Target: job.Target{NodeID: nodeA}, Spec: job.Spec{Kind: job.KindAction, Action: "sal.file.write",
		Args: json.RawMessage(`{"path": "` + outside + `", "content": "x"}`)}})
	j := s.ended(id)
	if j.Status != job.StatusFailed || j.Result == nil || !strings.Contains(j.Result.Error, "refused") {
		t.Errorf("write outside the roots: %s %+v", j.Status, j.Result)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the file outside the roots was written")
	}
}
