package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"cairn/cluster"
	"cairn/domain"
	gqlclient "cairn/graph/client"
	"cairn/internal/database"
	"cairn/internal/pgcluster"
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
	type replica = runningReplica
	dataDir := traversableTempDir(t)
	start := func(name string, extra ...string) replica {
		return startReplica(t, bins, db.ConnString, dataDir, name,
			append([]string{"--heartbeat-interval", "1s", "--disconnect-after", "4s", "--down-after", "60s"}, extra...)...)
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

	// runJob submits a job through via and waits for it to succeed, leased
	// once unless leases may expire (relaxed).
	var relaxed bool
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
			if out.Job.Attempt > 1 && !relaxed {
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

	// The owner (other) is cut off from PostgreSQL: its sessions are
	// ended (pg_terminate_backend) until the first replica has taken over.
	// The agent, whose heartbeats through the cut-off replica fail, moves
	// its feed to the first; the cut-off replica, back, takes nothing back.
	cutter := db.AdminPool(t)
	stopCut := make(chan struct{})
	cutDone := make(chan struct{})
	go func() {
		defer close(cutDone)
		for {
			select {
			case <-stopCut:
				return
			case <-time.After(5 * time.Millisecond):
			}
			_, _ = cutter.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
				cluster.SessionName(otherID))
		}
	}()
	ownID := selfID(own)
	cutAt := time.Now()
	poll(t, step, "the first replica to take over from the cut-off owner", func() (bool, string) {
		id, reps := owner(own)
		return id == ownID, fmt.Sprintf("%+v", reps)
	}, own.proc, other.proc)
	t.Logf("dispatch moved %v after its owner was cut off", time.Since(cutAt).Round(100*time.Millisecond))
	// A lease the agent could not acknowledge through the cut-off replica
	// may expire and be made again (the flood tests count runs by their
	// side effects).
	relaxed = true
	runJob(own, "a job submitted while the owner is cut off")
	relaxed = false
	t.Logf("a job ran %v after the cut", time.Since(cutAt).Round(100*time.Millisecond))
	close(stopCut)
	<-cutDone
	time.Sleep(3 * time.Second) // longer than a lease renewal round
	if id, reps := owner(other); id != ownID {
		t.Fatalf("the replica that was cut off took the dispatch back: %+v", reps)
	}

	// The other replica dies: the agent (moved back to it, or not) ends on
	// the survivor, which owns the decisions, and work goes on.
	other.proc.Kill()
	killed := time.Now()
	poll(t, step, "the survivor to own the dispatch", func() (bool, string) {
		id, reps := owner(own)
		return id == selfID(own), fmt.Sprintf("%+v", reps)
	}, own.proc)
	t.Logf("dispatch moved %v after its owner was killed", time.Since(killed).Round(100*time.Millisecond))
	runJob(own, "a job submitted after the agent's replica died")
}

// Three replicas take a flood of job submissions, and the owner of the
// decisions is killed (SIGKILL) in the middle of it: every submission a
// client saw acknowledged (retried through another replica with the same
// commandId when its replica died) runs exactly once, counted by a side
// effect each job leaves on the agent's disk, and the agents of the killed
// replica carry on through the others.
func TestReplicasSurviveAKilledOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: builds cairnd and cairn-agent and runs three replicas and two agents")
	}
	floodReplicas(t, testdb.New(t).ConnString, func(owner string, reps []runningReplica) string {
		for _, r := range reps {
			if r.base == owner {
				r.proc.Kill()
			}
		}
		return owner
	})
}

// PostgreSQL itself dies under three replicas in the middle of the flood
// (its postmaster killed; the private cluster starts it again, as cairnd's
// embedded one does): writes fail as UNAVAILABLE while it is away and are
// retried; owners, agent feeds and subscriptions resume from their cursors,
// and nothing acknowledged is lost or run twice.
func TestReplicasSurviveADatabaseRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short mode: starts a PostgreSQL cluster and kills it under three replicas and two agents")
	}
	ctx := context.Background()
	pg, err := pgcluster.Start(ctx, pgcluster.Options{Durable: true, Restart: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	if err := database.CreateDatabase(ctx, pg.ConnString("postgres"), "cairn", ""); err != nil {
		t.Fatal(err)
	}
	floodReplicas(t, pg.URL("cairn"), func(string, []runningReplica) string {
		if err := syscall.Kill(pg.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		return ""
	})
}

// replicaProcs are the replicas' processes.
func replicaProcs(reps []runningReplica) []*testproc.Process {
	out := make([]*testproc.Process, len(reps))
	for i, r := range reps {
		out[i] = r.proc
	}
	return out
}

// runningReplica is a cairnd process of a test and its base URL.
type runningReplica struct {
	proc *testproc.Process
	base string
}

// startReplica runs `cairnd serve` on the database dbURL names, with its
// data in dataDir/name and the extra flags, and waits until it is ready.
// It is stopped when the test ends (resumed first if it was paused), its
// output shown if the test failed.
func startReplica(t *testing.T, bins, dbURL, dataDir, name string, flags ...string) runningReplica {
	t.Helper()
	addr := testproc.FreeAddr(t)
	args := append([]string{"serve", "--listen", addr, "--data-dir", filepath.Join(dataDir, name), "--log-format", "json"}, flags...)
	p := testproc.Start(t, filepath.Join(bins, "cairnd"), []string{"DATABASE_URL=" + dbURL}, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Output())
		}
	})
	t.Cleanup(func() {
		if !p.Running() {
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
	return runningReplica{proc: p, base: base}
}

// floodReplicas runs three replicas on the database dbURL names and two
// agents, floods them with job submissions and deployments, applies fault a
// third of the way through (it returns the base URL of a replica it killed,
// or ""), and checks every acknowledged job ran once, every deployment
// ended registered, and a subscriber that moved replicas got the log.
func floodReplicas(t *testing.T, dbURL string, fault func(owner string, reps []runningReplica) string) {
	t.Helper()
	bins := buildBinaries(t, "cairnd", "cairn-agent")
	dataDir := traversableTempDir(t)
	type replica = runningReplica
	var reps []replica
	for i := range 3 {
		flags := []string{"--heartbeat-interval", "1s", "--disconnect-after", "10s", "--down-after", "5m"}
		if i > 0 {
			flags = append(flags, "--secrets-key-file", filepath.Join(dataDir, "replica-1", "secrets.key"))
		}
		reps = append(reps, startReplica(t, bins, dbURL, dataDir, fmt.Sprintf("replica-%d", i+1), flags...))
	}
	m := firstStartToken.FindStringSubmatch(reps[0].proc.Output())
	if m == nil {
		t.Fatalf("cairnd printed no administrator token\n%s", reps[0].proc.Output())
	}
	token := m[1]
	api := func(r replica) gqlClient { return gqlClient{url: r.base + "/graphql", token: token} }
	urls := []string{reps[0].base, reps[1].base, reps[2].base}

	// The owner of the decisions, found through any replica.
	ownerOf := func(via replica) string {
		var out struct {
			Cluster struct {
				Replicas []struct {
					Address string
					Owns    []string
				}
			}
		}
		if err := api(via).do(`{ cluster { replicas { address owns } } }`, nil, &out); err != nil {
			return ""
		}
		for _, r := range out.Cluster.Replicas {
			for _, w := range r.Owns {
				if w == DispatchLease {
					return "http://" + r.Address
				}
			}
		}
		return ""
	}
	var owner string
	poll(t, step, "a replica to own the dispatch", func() (bool, string) { owner = ownerOf(reps[0]); return owner != "", owner })

	// A template whose services are a directory and a file on a node, made
	// by the agent plugin through jobs: deploying one drives the
	// orchestrator and the dispatcher.
	sites := t.TempDir()
	api(reps[0]).must(t, `mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { name } } }`,
		map[string]any{"d": floodDescriptor}, nil)
	api(reps[0]).must(t, `mutation { publishTemplate(input: {name: "flood-notes", version: "1.0.0"}) { template { status } } }`, nil, nil)
	api(reps[0]).must(t, `mutation { createTenant(input: {id: "acme", name: "Acme"}) { tenant { id } } }`, nil, nil)

	// Two agents, each listing every replica, the owner's first for one.
	marks := t.TempDir()
	var nodeIDs []string
	var agents []*testproc.Process
	var agentDirs []string
	for i := range 2 {
		var jt struct {
			CreateJoinToken struct{ Token string } `json:"createJoinToken"`
		}
		api(reps[0]).must(t, `mutation { createJoinToken(input: {labels: []}) { token } }`, nil, &jt)
		order := append([]string(nil), urls...)
		if i == 0 {
			order = append([]string{owner}, slices.DeleteFunc(order, func(u string) bool { return u == owner })...)
		}
		host := fmt.Sprintf("flood-%d", i)
		agentDir := filepath.Join(t.TempDir(), host)
		agentDirs = append(agentDirs, agentDir)
		agent := testproc.Start(t, filepath.Join(bins, "cairn-agent"), []string{"CAIRN_JOIN_TOKEN=" + jt.CreateJoinToken.Token},
			"--server", strings.Join(order, ","), "--data-dir", agentDir, "--hostname", host, "--log-format", "json", "--log-level", "debug",
			"--file-root", sites)
		t.Cleanup(func() {
			if err := agent.Stop(time.Minute); err != nil {
				t.Errorf("%s after SIGTERM: %v", host, err)
			}
		})
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s output:\n%s", host, agent.Output())
			}
		})
		agents = append(agents, agent)
		id := waitForNodes(t, api(reps[0]), []string{host}, agent)[host]
		nodeIDs = append(nodeIDs, id)
	}

	// A subscriber of the jobs' events, connected to the owner (which will
	// die), moves to the next replica from the last cursor it received.
	var head struct{ Head string }
	api(reps[0]).must(t, `{ head }`, nil, &head)
	type seen struct {
		mu      sync.Mutex
		cursors []string
	}
	var delivered seen
	subCtx, stopSub := context.WithCancel(context.Background())
	subDone := make(chan struct{})
	go func() {
		defer close(subDone)
		after := head.Head
		order := append([]string{owner}, slices.DeleteFunc(append([]string(nil), urls...), func(u string) bool { return u == owner })...)
		for k := 0; subCtx.Err() == nil; k++ {
			sub, err := gqlclient.New(order[k%len(order)], token, nil).Subscribe(subCtx, gqlclient.TransportWS, gqlclient.Request{
				Query:     `subscription($a: Cursor) { events(filter: {streamTypes: ["job"]}, after: $a) { cursor } }`,
				Variables: map[string]any{"a": after},
			})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for {
				resp, err := sub.Next(subCtx)
				if err != nil {
					break
				}
				var d struct{ Events struct{ Cursor string } }
				if json.Unmarshal(resp.Data, &d) == nil && d.Events.Cursor != "" {
					delivered.mu.Lock()
					delivered.cursors = append(delivered.cursors, d.Events.Cursor)
					delivered.mu.Unlock()
					after = d.Events.Cursor
				}
			}
			sub.Close()
		}
	}()

	// The flood: each submission names its mark and a commandId, and is
	// retried through the next replica until one acknowledges it.
	const jobs = 60
	var killed atomic.Value
	killed.Store("")
	alive := func(base string) bool { return base != killed.Load().(string) }
	acked := make([]string, jobs)
	var wg sync.WaitGroup
	var mu sync.Mutex
	services := map[int]string{}
	// deploy creates a service through the next live replica, retried with
	// its commandId until one acknowledges it.
	deploy := func(i int) {
		for k := i; k < i+60; k++ {
			base := urls[k%len(urls)]
			if !alive(base) {
				continue
			}
			var out struct {
				CreateService struct{ Service struct{ ID string } }
			}
			err := gqlClient{url: base + "/graphql", token: token}.do(`mutation($n: String!, $c: String, $v: JSON) {
				createService(input: {tenantId: "acme", name: $n, templateName: "flood-notes", templateVersion: "1.0.0", variables: $v, commandId: $c}) { service { id } } }`,
				map[string]any{"n": fmt.Sprintf("notes-%d", i), "c": fmt.Sprintf("deploy-%d", i), "v": map[string]any{"root": sites}}, &out)
			if err == nil {
				mu.Lock()
				services[i] = out.CreateService.Service.ID
				mu.Unlock()
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	sem := make(chan struct{}, 6)
	for i := range jobs {
		if i == jobs/3 {
			wg.Wait() // a third submitted, then the fault, mid-flood
			killed.Store(fault(owner, reps))
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if i%10 == 5 {
				deploy(i)
			}
			mark := fmt.Sprintf("mark-%03d", i)
			vars := map[string]any{"n": nodeIDs[i%2], "c": "flood-" + mark, "mark": mark,
				"argv": []string{"sh", "-c", `echo "$MARK" >> ` + filepath.Join(marks, "runs")}}
			deadline := time.Now().Add(2 * time.Minute)
			for k := i; time.Now().Before(deadline); k++ {
				base := urls[k%len(urls)]
				if !alive(base) {
					continue
				}
				var out struct {
					SubmitJob struct{ Job struct{ ID string } }
				}
				err := gqlClient{url: base + "/graphql", token: token}.do(`mutation($n: ID!, $c: String, $mark: String!, $argv: [String!]!) {
					submitJob(input: {spec: {kind: EXEC, exec: {argv: $argv, env: [{name: "MARK", value: $mark}]}}, target: {nodeId: $n}, commandId: $c}) { job { id } } }`,
					vars, &out)
				if err == nil {
					mu.Lock()
					acked[i] = out.SubmitJob.Job.ID
					mu.Unlock()
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	var survivor replica
	for _, r := range reps {
		if alive(r.base) {
			survivor = r
		}
	}
	for i, id := range acked {
		if id == "" {
			t.Fatalf("submission %d was never acknowledged by any replica", i)
		}
	}
	// Every acknowledged job ends, successfully, once. A job that does not
	// is shown with its events and every line a process wrote about it.
	var stuck string
	t.Cleanup(func() {
		if !t.Failed() || stuck == "" {
			return
		}
		var evs struct {
			Events struct {
				Edges []struct {
					Node struct {
						Type, Time string
						Payload    json.RawMessage
					}
				}
			}
		}
		err := api(survivor).do(`query($s: String!) { events(first: 100, filter: {streamIds: [$s]}) { edges { node { type time payload } } } }`,
			map[string]any{"s": domain.StreamID(domain.JobStream, stuck)}, &evs)
		t.Logf("job %s's events (%v):", stuck, err)
		for _, e := range evs.Events.Edges {
			t.Logf("  %s %s %s", e.Node.Time, e.Node.Type, e.Node.Payload)
		}
		for _, p := range append(append([]*testproc.Process{}, agents...), replicaProcs(reps)...) {
			for _, line := range strings.Split(p.Output(), "\n") {
				if strings.Contains(line, stuck) {
					t.Logf("  %s", line)
				}
			}
		}
		// Where the agent's journal has the job: whether its runner started,
		// recorded a result, and what it wrote. A runner still there is
		// asked for its goroutines (SIGQUIT writes them to runner.err).
		for _, dir := range agentDirs {
			runs, _ := filepath.Glob(filepath.Join(dir, "jobs", stuck+"@*"))
			for _, run := range runs {
				if b, err := os.ReadFile(filepath.Join(run, "pid")); err == nil {
					if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && syscall.Kill(pid, syscall.SIGQUIT) == nil {
						t.Logf("  the runner (pid %d) was still running", pid)
						time.Sleep(time.Second)
					}
				}
				files, _ := os.ReadDir(run)
				for _, f := range files {
					b, _ := os.ReadFile(filepath.Join(run, f.Name()))
					t.Logf("  journal %s/%s: %.4000s", filepath.Base(run), f.Name(), b)
				}
			}
		}
		// Where each agent's handling of jobs waits: its goroutines that
		// drive a job, from the dump SIGQUIT makes it print.
		for i, p := range agents {
			from := len(p.Output())
			if syscall.Kill(p.Pid(), syscall.SIGQUIT) != nil {
				continue
			}
			select {
			case <-p.Exited():
			case <-time.After(5 * time.Second):
			}
			for _, g := range strings.Split(p.Output()[min(from, len(p.Output())):], "\n\n") {
				if strings.Contains(g, "(*Agent).launch") {
					t.Logf("  flood-%d %s", i, g)
				}
			}
		}
	})
	poll(t, step, "every job to succeed", func() (bool, string) {
		stuck = ""
		for _, id := range acked {
			var out struct {
				Job struct {
					Status  string
					Attempt int
				}
			}
			if err := api(survivor).do(`query($id: ID!) { job(id: $id) { status attempt } }`, map[string]any{"id": id}, &out); err != nil {
				return false, err.Error()
			}
			if out.Job.Status != "SUCCEEDED" {
				stuck = id
				return false, id + " is " + out.Job.Status
			}
		}
		return true, ""
	})
	// Every deployment ends registered, its file on a node's disk.
	if len(services) != jobs/10 {
		t.Fatalf("%d of %d deployments acknowledged", len(services), jobs/10)
	}
	for _, id := range services {
		poll(t, step, "service "+id+" to be registered", func() (bool, string) {
			var out struct {
				Service struct {
					Status string
					Cause  *string
				}
			}
			if err := api(survivor).do(`query($id: ID!) { service(id: $id) { status cause } }`, map[string]any{"id": id}, &out); err != nil {
				return false, err.Error()
			}
			if out.Service.Status == "FAILED" || out.Service.Status == "ROLLBACK_FAILED" {
				t.Fatalf("service %s is %s: %v", id, out.Service.Status, out.Service.Cause)
			}
			return out.Service.Status == "REGISTERED", out.Service.Status
		})
		if b, err := os.ReadFile(filepath.Join(sites, id, "note.txt")); err != nil || string(b) != id {
			t.Errorf("service %s's file: %q %v", id, b, err)
		}
	}

	// The subscriber got every job event of the log since it started, once
	// each, in order, across the replica's death.
	var logged []string
	after := head.Head
	for {
		var page struct {
			Events struct {
				Edges    []struct{ Cursor string }
				PageInfo struct{ HasNextPage bool }
			}
		}
		api(survivor).must(t, `query($a: Cursor) { events(first: 500, after: $a, filter: {streamTypes: ["job"]}) { edges { cursor } pageInfo { hasNextPage } } }`,
			map[string]any{"a": after}, &page)
		for _, e := range page.Events.Edges {
			logged = append(logged, e.Cursor)
			after = e.Cursor
		}
		if !page.Events.PageInfo.HasNextPage {
			break
		}
	}
	poll(t, step, "the subscriber to catch up", func() (bool, string) {
		delivered.mu.Lock()
		defer delivered.mu.Unlock()
		return len(delivered.cursors) >= len(logged), fmt.Sprintf("%d of %d events", len(delivered.cursors), len(logged))
	})
	stopSub()
	<-subDone
	delivered.mu.Lock()
	got := append([]string(nil), delivered.cursors[:len(logged)]...)
	delivered.mu.Unlock()
	if !slices.Equal(got, logged) {
		t.Errorf("the subscriber that moved replicas got %d events differing from the log's %d (gap, duplicate or order)", len(got), len(logged))
	}

	b, err := os.ReadFile(filepath.Join(marks, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, line := range strings.Fields(string(b)) {
		runs[line]++
	}
	for i := range jobs {
		if n := runs[fmt.Sprintf("mark-%03d", i)]; n != 1 {
			t.Errorf("job mark-%03d ran %d times", i, n)
		}
	}
}

// floodDescriptor deploys a directory and a file in it on a node, through
// the agent plugin's jobs.
const floodDescriptor = `apiVersion: cairn/v1
metadata:
  name: flood-notes
  version: 1.0.0
  vendor: Test
variables:
  root:
    type: string
    required: true
resources:
  - name: dir
    plugin: agent
    type: directory
    properties:
      path: ${var.root}/${service.id}
      mode: "0755"
  - name: note
    plugin: agent
    type: file
    properties:
      node: ${resource.dir.outputs.node}
      path: ${resource.dir.outputs.path}/note.txt
      mode: "0644"
      content: ${service.id}
`
