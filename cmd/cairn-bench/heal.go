package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"cairn/graph/client"
)

// The heal benchmark's sizes and windows.
const (
	healNodes      = 20
	healServices   = 100
	healLost       = 2 // 10 % of the nodes
	healDownWindow = 5 * time.Second
)

const healTemplate = `apiVersion: cairn/v1
metadata: {name: bench-heal, version: 1.0.0, vendor: Bench}
variables:
  root: {type: string, required: true}
resources:
  - name: home
    plugin: agent
    type: directory
    properties: {path: "${var.root}/${service.id}"}
    placement: {selector: "role=bench", spread: node}
  - name: worker
    plugin: agent
    type: process
    requests: {cpu: 0.05, memory: 8Mi}
    properties:
      node: ${resource.home.outputs.node}
      argv: [sleep, "900"]
      dir: ${resource.home.outputs.path}
`

// benchHeal measures healing off lost nodes as operators run it: cairnd and
// 20 cairn-agent processes built from this tree, on the real agent
// transport, 100 services (a directory and a process each) spread over the
// nodes; the agents of 10 % of the nodes are killed, and for each service
// that had a resource there the time from its node marked down to the
// service running again on other nodes is taken: heal_node_down_p99_s,
// with the down window (disconnected to down) printed as
// heal_down_window_s.
func benchHeal(ctx context.Context, e *env) (result, error) {
	work, err := os.MkdirTemp("", "cairn-bench-heal-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	srv, err := startCairnd(ctx, e, work, "bench_heal", []string{"./cmd/cairn-agent"},
		"--heartbeat-interval", "1s", "--disconnect-after", "2s", "--down-after", healDownWindow.String(), "--reconcile-interval", "2s")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	url, token, bin := srv.url, srv.token, srv.bin
	api := client.New(url, token, nil)
	do := func(q string, vars map[string]any, out any) error {
		qctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return api.Do(qctx, q, vars, out)
	}

	root := filepath.Join(work, "files")
	agents := map[string]*exec.Cmd{}
	defer func() {
		for _, a := range agents {
			if a.ProcessState == nil {
				_ = a.Process.Signal(syscall.SIGTERM)
				_ = a.Wait()
			}
		}
	}()
	for i := range healNodes {
		var jt struct{ CreateJoinToken struct{ Token string } }
		if err := do(`mutation { createJoinToken(input: {labels: [{key: "role", value: "bench"}]}) { token } }`, nil, &jt); err != nil {
			return nil, err
		}
		host := fmt.Sprintf("heal-%02d", i)
		a := exec.CommandContext(ctx, filepath.Join(bin, "cairn-agent"), "--server", url, "--data-dir", filepath.Join(work, "agents", host),
			"--file-root", root, "--hostname", host, "--log-format", "json")
		a.Env = append(os.Environ(), "CAIRN_JOIN_TOKEN="+jt.CreateJoinToken.Token)
		if err := a.Start(); err != nil {
			return nil, err
		}
		agents[host] = a
	}
	type nodeView struct{ ID, Hostname, Status string }
	nodes := func() (map[string]nodeView, error) {
		var out struct {
			Nodes struct{ Edges []struct{ Node nodeView } }
		}
		if err := do(`{ nodes(first: 100) { edges { node { id hostname status } } } }`, nil, &out); err != nil {
			return nil, err
		}
		m := map[string]nodeView{}
		for _, e := range out.Nodes.Edges {
			m[e.Node.ID] = e.Node
		}
		return m, nil
	}
	if err := until(ctx, 2*time.Minute, "the agents' nodes to be online", func() (bool, error) {
		ns, err := nodes()
		online := 0
		for _, n := range ns {
			if n.Status == "ONLINE" {
				online++
			}
		}
		return online == healNodes, err
	}); err != nil {
		return nil, err
	}

	if err := do(`mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { name } } }`, map[string]any{"d": healTemplate}, nil); err != nil {
		return nil, err
	}
	if err := do(`mutation { publishTemplate(input: {name: "bench-heal", version: "1.0.0"}) { template { status } } }`, nil, nil); err != nil {
		return nil, err
	}
	if err := do(`mutation { createTenant(input: {id: "bench", name: "Bench"}) { tenant { id } } }`, nil, nil); err != nil {
		return nil, err
	}
	var bp strings.Builder
	fmt.Fprintf(&bp, "apiVersion: cairn/v1\nkind: Blueprint\nmetadata: {name: heal}\ntenant: bench\nservices:\n")
	for i := range healServices {
		fmt.Fprintf(&bp, "  - {name: heal-%03d, template: bench-heal, version: 1.0.0, variables: {root: %q}}\n", i, root)
	}
	if err := do(`mutation($d: String!) { applyBlueprint(input: {document: $d}) { changed } }`, map[string]any{"d": bp.String()}, nil); err != nil {
		return nil, err
	}
	type svcView struct {
		ID, Status string
		Resources  []struct {
			NodeID  *string
			Outputs struct{ PID int }
		}
	}
	services := func() ([]svcView, error) {
		var out struct {
			Services struct{ Edges []struct{ Node svcView } }
		}
		err := do(`{ services(first: 500, filter: {blueprint: "heal"}) { edges { node { id status resources { nodeId outputs } } } } }`, nil, &out)
		var vs []svcView
		for _, e := range out.Services.Edges {
			vs = append(vs, e.Node)
		}
		return vs, err
	}
	var pids []int
	defer func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	if err := until(ctx, 5*time.Minute, "every service to run", func() (bool, error) {
		vs, err := services()
		running := 0
		for _, v := range vs {
			if v.Status == "RUNNING" {
				running++
			}
		}
		return running == healServices, err
	}); err != nil {
		return nil, err
	}
	ns, err := nodes()
	if err != nil {
		return nil, err
	}
	vs, err := services()
	if err != nil {
		return nil, err
	}
	// The most loaded nodes are lost, so that the figure covers many
	// services.
	load := map[string]int{}
	for _, v := range vs {
		for _, r := range v.Resources {
			if r.NodeID != nil {
				load[*r.NodeID]++
			}
			if r.Outputs.PID > 0 {
				pids = append(pids, r.Outputs.PID)
			}
		}
	}
	ids := make([]string, 0, len(ns))
	for id := range ns {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return load[b] - load[a] })
	lost := map[string]bool{}
	for _, id := range ids[:healLost] {
		lost[id] = true
		_ = agents[ns[id].Hostname].Process.Kill()
		_ = agents[ns[id].Hostname].Wait()
	}
	affected := map[string]string{} // service → the lost node it had a resource on
	for _, v := range vs {
		for _, r := range v.Resources {
			if r.NodeID != nil && lost[*r.NodeID] {
				affected[v.ID] = *r.NodeID
			}
		}
	}
	downAt := map[string]time.Time{}
	healed := map[string]time.Time{}
	err = until(ctx, 3*time.Minute, "the affected services to run again on other nodes", func() (bool, error) {
		now := time.Now()
		ns, err := nodes()
		if err != nil {
			return false, err
		}
		for id := range lost {
			if _, seen := downAt[id]; !seen && ns[id].Status == "DOWN" {
				downAt[id] = now
			}
		}
		vs, err := services()
		if err != nil {
			return false, err
		}
		for _, v := range vs {
			node, hit := affected[v.ID]
			if !hit || !healed[v.ID].IsZero() || v.Status != "RUNNING" {
				continue
			}
			off := true
			for _, r := range v.Resources {
				if r.NodeID != nil && lost[*r.NodeID] {
					off = false
				}
				if r.Outputs.PID > 0 && !slices.Contains(pids, r.Outputs.PID) {
					pids = append(pids, r.Outputs.PID)
				}
			}
			if off && !downAt[node].IsZero() {
				healed[v.ID] = now
			}
		}
		return len(healed) == len(affected), nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w (%d of %d healed)", err, len(healed), len(affected))
	}
	var lat []time.Duration
	for id, at := range healed {
		lat = append(lat, at.Sub(downAt[affected[id]]))
	}
	return result{
		"heal_node_down_p99_s":   round(gqlPercentile(lat, 0.99).Seconds(), 2),
		"heal_down_window_s":     healDownWindow.Seconds(),
		"heal_services_affected": len(affected),
	}, nil
}

// until polls cond every 200 ms until it holds, fails, or timeout passes.
func until(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("gave up waiting for " + what)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}
