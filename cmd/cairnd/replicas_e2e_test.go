package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"cairn/internal/testdb"
	"cairn/internal/testproc"
)

// Two cairnd replicas on one database form a cluster: one owns the
// dispatcher's decisions, an agent connected to the other gets the jobs the
// owner leases, and an owner paused past its lease (SIGSTOP) is replaced and,
// once resumed (SIGCONT), decides nothing: the node it could not hear from
// while paused stays online, and no job runs twice.
func TestReplicasShareTheWork(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: builds cairnd and cairn-agent and runs two replicas and an agent")
	}
	bins := buildBinaries(t, "cairnd", "cairn-agent")
	db := testdb.New(t)
	type replica struct {
		proc   *testproc.Process
		base   string
		killed *bool
	}
	dataDir := traversableTempDir(t)
	start := func(name string, extra ...string) replica {
		addr := testproc.FreeAddr(t)
		args := append([]string{"serve", "--listen", addr,
			"--data-dir", filepath.Join(dataDir, name), "--log-format", "json",
			"--heartbeat-interval", "1s", "--disconnect-after", "4s", "--down-after", "60s"}, extra...)
		p := testproc.Start(t, filepath.Join(bins, "cairnd"), []string{"DATABASE_URL=" + db.ConnString}, args...)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s output:\n%s", name, p.Output())
			}
		})
		killed := new(bool)
		t.Cleanup(func() {
			if *killed {
				return
			}
			_ = syscall.Kill(p.Pid(), syscall.SIGCONT)
			if err := p.Stop(time.Minute); err != nil {
				t.Errorf("%s after SIGTERM: %v", name, err)
			}
		})
		base := "http://" + addr
		poll(t, step, name+" to be ready", func() (bool, string) {
			resp, err := client.Get(base + "/readyz")
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, resp.Status
		}, p)
		return replica{proc: p, base: base, killed: killed}
	}
	first := start("replica-1")
	m := firstStartToken.FindStringSubmatch(first.proc.Output())
	if m == nil {
		t.Fatalf("cairnd printed no administrator token\n%s", first.proc.Output())
	}
	token := m[1]
	// The second replica shares the first one's secrets key, as every
	// replica of a cluster must.
	second := start("replica-2", "--secrets-key-file", filepath.Join(dataDir, "replica-1", "secrets.key"))
	api := func(r replica) gqlClient { return gqlClient{url: r.base + "/graphql", token: token} }

	type replicaView struct {
		ID   string
		Owns []string
		Self bool
		Gone bool
	}
	owner := func(via replica) (string, []replicaView) {
		var out struct {
			Cluster struct{ Replicas []replicaView }
		}
		if err := api(via).do(`{ cluster { replicas { id owns self gone } } }`, nil, &out); err != nil {
			return "", nil
		}
		for _, r := range out.Cluster.Replicas {
			for _, w := range r.Owns {
				if w == DispatchLease {
					return r.ID, out.Cluster.Replicas
				}
			}
		}
		return "", out.Cluster.Replicas
	}
	selfID := func(r replica) string {
		_, reps := owner(r)
		for _, v := range reps {
			if v.Self {
				return v.ID
			}
		}
		return ""
	}
	var ownerID string
	poll(t, step, "one replica to own the dispatch", func() (bool, string) {
		var reps []replicaView
		ownerID, reps = owner(first)
		return ownerID != "" && len(reps) == 2, fmt.Sprintf("%+v", reps)
	})
	own, other := first, second
	if ownerID == selfID(second) {
		own, other = second, first
	}

	// The agent connects to the replica that does not own the decisions,
	// and knows the other to move to.
	var jt struct {
		CreateJoinToken struct{ Token string } `json:"createJoinToken"`
	}
	api(own).must(t, `mutation { createJoinToken(input: {labels: []}) { token } }`, nil, &jt)
	agent := testproc.Start(t, filepath.Join(bins, "cairn-agent"), []string{"CAIRN_JOIN_TOKEN=" + jt.CreateJoinToken.Token},
		"--server", other.base+","+own.base, "--data-dir", filepath.Join(t.TempDir(), "agent"), "--hostname", "edge-1", "--log-format", "json")
	t.Cleanup(func() {
		if err := agent.Stop(time.Minute); err != nil {
			t.Errorf("cairn-agent after SIGTERM: %v", err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cairn-agent output:\n%s", agent.Output())
		}
	})
	var nodeID string
	nodeStatus := func(via replica) string {
		var out struct {
			Nodes struct {
				Edges []struct {
					Node struct{ ID, Hostname, Status string }
				}
			}
		}
		if err := api(via).do(`{ nodes(first: 10) { edges { node { id hostname status } } } }`, nil, &out); err != nil {
			return err.Error()
		}
		for _, e := range out.Nodes.Edges {
			if e.Node.Hostname == "edge-1" {
				nodeID = e.Node.ID
				return e.Node.Status
			}
		}
		return "not enrolled"
	}
	poll(t, step, "the agent's node to be online", func() (bool, string) {
		s := nodeStatus(own)
		return s == "ONLINE", s
	}, agent, own.proc, other.proc)

	// runJob submits a job through via and waits for it to succeed once.
	runJob := func(via replica, name string) {
		t.Helper()
		var sub struct {
			SubmitJob struct{ Job struct{ ID string } }
		}
		api(via).must(t, `mutation($n: ID!) { submitJob(input: {spec: {kind: EXEC, exec: {argv: ["true"]}}, target: {nodeId: $n}}) { job { id } } }`,
			map[string]any{"n": nodeID}, &sub)
		id := sub.SubmitJob.Job.ID
		poll(t, step, name+" to succeed", func() (bool, string) {
			var out struct {
				Job struct {
					Status  string
					Attempt int
				}
			}
			if err := api(via).do(`query($id: ID!) { job(id: $id) { status attempt } }`, map[string]any{"id": id}, &out); err != nil {
				return false, err.Error()
			}
			if out.Job.Attempt > 1 {
				t.Fatalf("%s ran %d times", name, out.Job.Attempt)
			}
			return out.Job.Status == "SUCCEEDED", out.Job.Status
		}, agent)
	}
	runJob(own, "a job submitted to the owner, run by an agent of the other replica")

	// The owner pauses past its lease; the other replica takes over.
	if err := syscall.Kill(own.proc.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	otherID := selfID(other)
	poll(t, step, "the other replica to take the dispatch over", func() (bool, string) {
		id, reps := owner(other)
		return id == otherID, fmt.Sprintf("%+v", reps)
	}, other.proc)
	t.Logf("dispatch moved %v after the owner paused", time.Since(paused).Round(100*time.Millisecond))
	runJob(other, "a job submitted while the old owner is paused")
	time.Sleep(2 * time.Second) // longer than the agent stayed silent to the paused replica
	if err := syscall.Kill(own.proc.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	// Resumed, the old owner heard nothing from the agent for seconds, yet
	// decides nothing: the node is never taken for disconnected (not even
	// for a moment that the new owner would mend), and the work stays where
	// it is.
	disconnects := func() int {
		var out struct {
			Events struct{ Edges []struct{ Cursor string } }
		}
		api(other).must(t, `query($s: [String!]) { events(first: 500, filter: {streamIds: $s, types: ["node.disconnected"]}) { edges { cursor } } }`,
			map[string]any{"s": []string{"node-" + nodeID}}, &out)
		return len(out.Events.Edges)
	}
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		if s := nodeStatus(other); s != "ONLINE" {
			t.Fatalf("after the old owner resumed, the node is %s", s)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if n := disconnects(); n != 0 {
		t.Fatalf("the node was marked disconnected %d times while its agent stayed connected", n)
	}
	if id, reps := owner(other); id != otherID {
		t.Fatalf("the resumed replica took the dispatch back: %+v", reps)
	}
	runJob(own, "a job submitted to the resumed replica")

	// The replica the agent is connected to, owner of the decisions now,
	// dies: the agent moves to the survivor, which takes the decisions
	// over, and work goes on.
	*other.killed = true
	other.proc.Kill()
	killed := time.Now()
	poll(t, step, "the survivor to own the dispatch", func() (bool, string) {
		id, reps := owner(own)
		return id == selfID(own), fmt.Sprintf("%+v", reps)
	}, own.proc)
	t.Logf("dispatch moved %v after its owner was killed", time.Since(killed).Round(100*time.Millisecond))
	runJob(own, "a job submitted after the agent's replica died")
}
