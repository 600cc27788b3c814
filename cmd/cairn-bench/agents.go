package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/dispatch"
	"cairn/dispatch/dispatchtest"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/eventstore"
	"cairn/graph"
	"cairn/graph/graphtest"
)

// The agent figures of SPEC §10:
//
//   - dispatch_p99_ms: a job submitted for a node until that node's agent
//     receives it, measured with agents connected over real WebSockets
//     (graphql-transport-ws) to the GraphQL API on a local listener;
//   - fanout_1000_agents_s: a job on `all` of 1,000 nodes until every
//     child's result is recorded and the fan-out completed, the agents being
//     1,000 subscribers of the dispatcher's feeds in this process, each
//     reporting start and finish through the same calls the API makes;
//   - server_kib_per_agent_connection: the server's heap and stacks per
//     agent WebSocket subscribed to its feed, the clients running in a child
//     process so that only the server's side is counted.

var benchOpts = dispatch.Options{Lease: time.Minute, DisconnectAfter: 10 * time.Minute, DownAfter: time.Hour}

func startJobSide(e *env) (*dispatchtest.Env, error) {
	js, err := dispatchtest.Start(e.app, benchOpts, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := js.WaitReady(ctx); err != nil {
		js.Stop()
		return nil, err
	}
	return js, nil
}

// enrollAgents enrolls n nodes through join tokens, as agents do, and
// returns their credentials by node id.
func enrollAgents(ctx context.Context, js *dispatchtest.Env, prefix string, n int, labels map[string]string) (map[string]string, error) {
	creds := make(map[string]string, n)
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			t, err := js.Access.IssueJoinToken(ctx, dispatchtest.Operator, access.IssueJoinToken{Labels: labels})
			if err != nil {
				return err
			}
			out, err := js.Access.RedeemJoinToken(ctx, commands.Meta{}, access.RedeemJoinToken{Token: t.Token, Hostname: prefix + strconv.Itoa(i)})
			if err != nil {
				return err
			}
			mu.Lock()
			creds[out.ID] = out.Credential
			mu.Unlock()
			return nil
		})
	}
	return creds, g.Wait()
}

// waitOnline waits until every node is online.
func waitOnline(ctx context.Context, js *dispatchtest.Env, ids []string) error {
	deadline := time.Now().Add(5 * time.Minute)
	for _, id := range ids {
		for {
			n, _, err := commands.Load[node.Node](ctx, js.Store, domain.NodeStream, id)
			if err != nil {
				return err
			}
			if n.Status == node.StatusOnline {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s is %s, not online, after 5 minutes", id, n.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// wsAgent is an agent's feed over a real WebSocket: graphql-transport-ws
// with the agentJobs subscription, answering the server's pings.
type wsAgent struct {
	conn *websocket.Conn
}

type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func dialAgent(ctx context.Context, baseURL, credential, nodeID string) (*wsAgent, error) {
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(baseURL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(8 << 20)
	init, _ := json.Marshal(map[string]string{"authorization": "Bearer " + credential})
	if err := wsjson.Write(ctx, conn, wsMsg{Type: "connection_init", Payload: init}); err != nil {
		return nil, err
	}
	var ack wsMsg
	if err := wsjson.Read(ctx, conn, &ack); err != nil || ack.Type != "connection_ack" {
		return nil, fmt.Errorf("connection_init: %v %s", err, ack.Type)
	}
	sub, _ := json.Marshal(map[string]any{
		"query":     `subscription($n: ID!) { agentJobs(nodeId: $n) { cursor attempt cancelRequested job { id } } }`,
		"variables": map[string]any{"n": nodeID},
	})
	if err := wsjson.Write(ctx, conn, wsMsg{ID: "1", Type: "subscribe", Payload: sub}); err != nil {
		return nil, err
	}
	return &wsAgent{conn: conn}, nil
}

// next returns the id of the next job leased to the agent.
func (a *wsAgent) next(ctx context.Context) (string, error) {
	for {
		var m wsMsg
		if err := wsjson.Read(ctx, a.conn, &m); err != nil {
			return "", err
		}
		switch m.Type {
		case "ping":
			if err := wsjson.Write(ctx, a.conn, wsMsg{Type: "pong"}); err != nil {
				return "", err
			}
		case "next":
			var r struct {
				Data struct {
					AgentJobs struct {
						CancelRequested bool
						Job             struct{ ID string }
					}
				}
				Errors []struct{ Message string }
			}
			if err := json.Unmarshal(m.Payload, &r); err != nil {
				return "", err
			}
			if len(r.Errors) > 0 {
				return "", errors.New(r.Errors[0].Message)
			}
			if !r.Data.AgentJobs.CancelRequested {
				return r.Data.AgentJobs.Job.ID, nil
			}
		case "error", "complete":
			return "", fmt.Errorf("subscription ended: %s %s", m.Type, m.Payload)
		}
	}
}

func (a *wsAgent) close() { a.conn.CloseNow() }

var echoSpec = job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"true"}}}

// benchDispatch submits jobs one after another for agents connected over
// WebSockets and measures each until its agent received it.
func benchDispatch(ctx context.Context, e *env) (result, error) {
	js, err := startJobSide(e)
	if err != nil {
		return nil, err
	}
	defer js.Stop()
	api, err := graphtest.ServeJobSide(js, graph.Config{}, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	defer api.Close()
	const agents, samples = 20, 300
	creds, err := enrollAgents(ctx, js, "p99-", agents, nil)
	if err != nil {
		return nil, err
	}
	var ids []string
	received := map[string]chan string{}
	for id, cred := range creds {
		a, err := dialAgent(ctx, api.URL, cred, id)
		if err != nil {
			return nil, err
		}
		defer a.close()
		ids = append(ids, id)
		ch := make(chan string, samples)
		received[id] = ch
		go func() {
			for {
				jobID, err := a.next(ctx)
				if err != nil {
					return
				}
				ch <- jobID
			}
		}()
	}
	slices.Sort(ids)
	if err := waitOnline(ctx, js, ids); err != nil {
		return nil, err
	}
	var finishers sync.WaitGroup
	defer finishers.Wait()
	lat := make([]time.Duration, 0, samples)
	for i := range samples {
		nodeID := ids[i%len(ids)]
		start := time.Now()
		out, err := js.Jobs.Submit(ctx, dispatchtest.Operator, jobs.Submit{Spec: echoSpec, Target: job.Target{NodeID: nodeID}})
		if err != nil {
			return nil, err
		}
		select {
		case got := <-received[nodeID]:
			if got != out.ID {
				return nil, fmt.Errorf("node %s received job %s, expected %s", nodeID, got, out.ID)
			}
		case <-time.After(time.Minute):
			return nil, fmt.Errorf("job %s never reached node %s", out.ID, nodeID)
		}
		lat = append(lat, time.Since(start))
		finishers.Add(1)
		go func() {
			defer finishers.Done()
			c := dispatch.Caller{NodeID: nodeID}
			if _, err := js.Dispatcher.Start(ctx, c, out.ID); err == nil {
				_, _ = js.Dispatcher.Finish(ctx, c, out.ID, job.StatusSucceeded, job.Result{})
			}
		}()
		// A steady 50 submissions a second rather than a burst.
		time.Sleep(time.Until(start.Add(20 * time.Millisecond)))
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return round(float64(lat[int(p*float64(len(lat)-1))].Microseconds())/1000, 2) }
	return result{"dispatch_p50_ms": pct(0.5), "dispatch_p99_ms": pct(0.99), "dispatch_samples": len(lat)}, nil
}

// benchFanOut runs one job on all of 1,000 nodes whose agents subscribe to
// the dispatcher in this process and report each child's start and result.
func benchFanOut(ctx context.Context, e *env) (result, error) {
	js, err := startJobSide(e)
	if err != nil {
		return nil, err
	}
	defer js.Stop()
	const n = 1000
	labels := map[string]string{"bench": "fanout"}
	var ids []string
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	var mu sync.Mutex
	for i := range n {
		g.Go(func() error {
			out, err := js.Nodes.Enroll(gctx, dispatchtest.Operator, nodes.Enroll{Hostname: "fan-" + strconv.Itoa(i), Labels: labels})
			mu.Lock()
			ids = append(ids, out.ID)
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	actx, stop := context.WithCancel(ctx)
	defer stop()
	var results atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, id := range ids {
		s, err := js.Dispatcher.Subscribe(ctx, id, eventstore.Cursor{})
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			c := dispatch.Caller{NodeID: id}
			for {
				it, err := s.Next(actx)
				if err != nil {
					return
				}
				if it.CancelRequested {
					continue
				}
				if _, err := js.Dispatcher.Start(actx, c, it.Job.ID); err != nil {
					continue
				}
				if _, err := js.Dispatcher.Finish(actx, c, it.Job.ID, job.StatusSucceeded, job.Result{}); err == nil {
					results.Add(1)
				}
			}
		}()
	}
	if err := waitOnline(ctx, js, ids); err != nil {
		return nil, err
	}
	start := time.Now()
	out, err := js.Jobs.Submit(ctx, dispatchtest.Operator, jobs.Submit{Spec: echoSpec,
		Target: job.Target{Selector: labels, Mode: job.ModeAll}})
	if err != nil {
		return nil, err
	}
	for {
		j, _, err := commands.Load[job.Job](ctx, js.Store, domain.JobStream, out.ID)
		if err != nil {
			return nil, err
		}
		if j.Terminal() {
			if j.Status != job.StatusSucceeded || j.Counts.Succeeded != n {
				return nil, fmt.Errorf("fan-out ended %s with %+v", j.Status, j.Counts)
			}
			break
		}
		if time.Since(start) > 5*time.Minute {
			return nil, fmt.Errorf("fan-out still %s after 5 minutes (%d results)", j.Status, results.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	stop()
	return result{"fanout_1000_agents_s": round(took.Seconds(), 2)}, nil
}

// benchConnections opens 1,000 agent WebSockets from a child process, each
// subscribed to its node's feed, and measures what they cost the server.
func benchConnections(ctx context.Context, e *env) (result, error) {
	js, err := startJobSide(e)
	if err != nil {
		return nil, err
	}
	defer js.Stop()
	api, err := graphtest.ServeJobSide(js, graph.Config{}, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	defer api.Close()
	const n = 1000
	creds, err := enrollAgents(ctx, js, "conn-", n, nil)
	if err != nil {
		return nil, err
	}
	plan := swarmPlan{URL: api.URL}
	for id, c := range creds {
		plan.Agents = append(plan.Agents, swarmAgent{NodeID: id, Credential: c})
	}
	// Bring the nodes online first, so that the events of their connection
	// and the read buffers they pass through are not counted as the
	// WebSockets' cost.
	ids := make([]string, 0, n)
	for id := range creds {
		if _, _, err := js.Dispatcher.Poll(ctx, id, eventstore.Cursor{}, 0); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := waitOnline(ctx, js, ids); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)

	before := serverMemory()
	swarm, err := startChild(ctx, swarmEnv, plan)
	if err != nil {
		return nil, err
	}
	defer func() { _, _ = swarm.stop() }()
	time.Sleep(2 * time.Second) // let the connections settle (keep-alives, pings)
	after := serverMemory()
	perConn := float64(after-before) / n / 1024
	return result{"server_kib_per_agent_connection": round(perConn, 1), "agent_connections": n}, nil
}

// serverMemory is the heap in use and the goroutine stacks after a
// collection: what connections cost that the process cannot give back.
func serverMemory() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// swarmEnv names the plan (swarmPlan) of benchConnections' child process
// (child.go): it opens every agent's WebSocket, and keeps them open until
// it is ended.
const swarmEnv = "CAIRN_BENCH_AGENT_SWARM"

type swarmPlan struct {
	URL    string       `json:"url"`
	Agents []swarmAgent `json:"agents"`
}

type swarmAgent struct {
	NodeID     string `json:"nodeId"`
	Credential string `json:"credential"`
}

func runSwarm(path string) error {
	var plan swarmPlan
	if err := readPlan(path, &plan); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	agents := make([]*wsAgent, len(plan.Agents))
	for i, a := range plan.Agents {
		g.Go(func() error {
			w, err := dialAgent(gctx, plan.URL, a.Credential, a.NodeID)
			agents[i] = w
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, a := range agents {
		go func() {
			for {
				if _, err := a.next(ctx); err != nil {
					return
				}
			}
		}()
	}
	readyUntilEnd()
	return nil
}
