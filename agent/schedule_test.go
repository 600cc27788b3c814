package agent_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"cairn/agent"
	"cairn/auth"
	"cairn/domain/job"
)

// An operator schedules a job through the API; the control plane submits it
// at each instant under an id derived from the instant, and the agent runs
// it. Pausing stops the firings.
func TestScheduleThroughAPI(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := s.startAgent(agent.Config{JoinToken: s.joinToken(nil)})
	node := s.nodeOnline(a)
	admin := s.adminToken()

	type payload struct {
		Schedule struct {
			ID, Status string
			NextRunAt  *time.Time
		}
	}
	var created struct{ CreateSchedule payload }
	s.mustGQL(admin, `mutation($n: ID!) { createSchedule(input: {scheduleId: "tick", everySeconds: 1,
		job: {target: {nodeId: $n}, spec: {kind: SCRIPT, script: {interpreter: "sh", body: "echo tick"}}}}) {
		schedule { id status nextRunAt } } }`, map[string]any{"n": node}, &created)
	first := created.CreateSchedule.Schedule
	if first.Status != "ACTIVE" || first.NextRunAt == nil {
		t.Fatalf("created %+v", first)
	}
	jobID := "tick." + first.NextRunAt.UTC().Format("20060102T150405Z")
	if j := s.ended(jobID); j.Status != job.StatusSucceeded || s.output(jobID, "") != "tick\n" {
		t.Errorf("first firing %s: %s", jobID, j.Status)
	}
	var paused struct{ PauseSchedule payload }
	s.mustGQL(admin, `mutation { pauseSchedule(input: {scheduleId: "tick"}) { schedule { id status nextRunAt } } }`, nil, &paused)
	if p := paused.PauseSchedule.Schedule; p.Status != "PAUSED" || p.NextRunAt != nil {
		t.Errorf("paused %+v", p)
	}
	code, msg := s.gql(admin, `mutation { createSchedule(input: {scheduleId: "bad", cron: "61 * * * *",
		job: {target: {nodeId: "x"}, spec: {kind: EXEC, exec: {argv: ["true"]}}}}) { schedule { id } } }`, nil)
	if code != "INVALID_INPUT" && code != "NOT_FOUND" || msg == "" {
		t.Errorf("bad schedule: %s %q", code, msg)
	}
}

// adminToken makes the installation's administrator and returns its token.
func (s *server) adminToken() string {
	s.t.Helper()
	tok, err := auth.BootstrapAdmin(ctxFor(s.t), s.Access)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

func (s *server) mustGQL(token, query string, vars map[string]any, out any) {
	s.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequestWithContext(ctxFor(s.t), http.MethodPost, s.api.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		s.t.Fatal(err)
	}
	if len(r.Errors) > 0 {
		msgs := make([]string, len(r.Errors))
		for i, e := range r.Errors {
			msgs[i] = e.Message
		}
		s.t.Fatal(strings.Join(msgs, "; "))
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		s.t.Fatal(err)
	}
}
