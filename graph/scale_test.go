package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/commandstest"
	"cairn/commands/jobs"
	"cairn/commands/services"
	"cairn/commands/templates"
	"cairn/domain/job"
	"cairn/graph/client"
)

// The sizes of an installation the lists must serve: limits and paging
// show up here, not in front of a user.
const (
	scaleTenants  = 50
	scaleNodes    = 1000
	scaleServices = 200
	scaleJobs     = 10000
)

// seedAtScale makes scaleTenants tenants, scaleNodes nodes (half of them in
// a location), scaleServices services and scaleJobs jobs pinned to the
// nodes, through the command handlers, and waits for the read models.
func (e *countedEnv) seedAtScale() {
	t := e.t
	// Seeding 10,000 jobs takes a while on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := commands.Meta{Actor: "seed"}
	var mu sync.Mutex
	var firstErr error
	fail := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("seed: %s: %w", what, err)
		}
	}
	parallel := func(n int, f func(i int)) {
		var wg sync.WaitGroup
		next := make(chan int)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					f(i)
				}
			}()
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
		if firstErr != nil {
			t.Fatal(firstErr)
		}
	}
	_, err := e.tpl.Register(ctx, commands.Meta{Actor: "u-ven"}, templates.Register{Descriptor: commandstest.Descriptor})
	fail("template", err)
	_, err = e.tpl.Publish(ctx, commands.Meta{Actor: "u-ven"}, templates.Publish{Name: "kv-store", Version: "1.0.0"})
	fail("publish", err)
	_, err = e.access.CreateLocation(ctx, m, access.CreateLocation{LocationID: "ams-1", Name: "Amsterdam 1"})
	fail("location", err)
	parallel(scaleTenants, func(i int) {
		_, err := e.access.CreateTenant(ctx, m, access.CreateTenant{TenantID: fmt.Sprintf("t-%02d", i), Name: fmt.Sprintf("Tenant %02d", i)})
		fail("tenant", err)
	})
	nodeIDs := make([]string, scaleNodes)
	parallel(scaleNodes, func(i int) {
		in := access.IssueJoinToken{}
		if i%2 == 1 {
			in.LocationID = "ams-1"
		}
		jt, err := e.access.IssueJoinToken(ctx, m, in)
		if err != nil {
			fail("join token", err)
			return
		}
		en, err := e.access.RedeemJoinToken(ctx, commands.Meta{}, access.RedeemJoinToken{Token: jt.Token, Hostname: fmt.Sprintf("node-%04d", i)})
		fail("enroll", err)
		nodeIDs[i] = en.ID
	})
	parallel(scaleServices, func(i int) {
		tn := fmt.Sprintf("t-%02d", i%scaleTenants)
		_, err := e.svc.Register(ctx, commands.Meta{Actor: "seed", Tenant: tn}, services.Register{TenantID: tn, Name: fmt.Sprintf("svc-%03d", i),
			TemplateName: "kv-store", TemplateVersion: "1.0.0", Variables: map[string]json.RawMessage{"password": json.RawMessage(`"pw"`)}})
		fail("service", err)
	})
	spec := job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"true"}}}
	parallel(scaleJobs, func(i int) {
		_, err := e.jobs.Submit(ctx, m, jobs.Submit{Spec: spec, Target: job.Target{NodeID: nodeIDs[i%scaleNodes]}})
		fail("job", err)
	})
	head, err := e.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.runner.WaitFor(ctx, head); err != nil {
		t.Fatal(err)
	}
}

// Every list serves the whole installation a page at a time, with the
// relations people read (names, not ids) resolved, within the complexity
// limit: at the page sizes the CLI and the portal use.
func TestListsAtTheSizesUsersHave(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 10,000 jobs")
	}
	t.Parallel()
	e := newCountedEnv(t)
	e.seedAtScale()
	admin := client.New(e.url, "admin", nil)

	cases := []struct {
		name, field, selection string
		page, want             int
		// row checks one row: its relations are names.
		row func(n map[string]any) error
	}{
		{"nodes with capacity and location, as cairn nodes", "nodes",
			`id hostname status labels { key value } location { name } capacity { allocatable { cpu memoryBytes } allocated { cpu memoryBytes } allocations fill }`,
			200, scaleNodes, func(n map[string]any) error {
				if !strings.HasPrefix(n["hostname"].(string), "node-") {
					return fmt.Errorf("hostname %v", n["hostname"])
				}
				return nil
			}},
		{"jobs with their node and submitter by name, as the portal", "jobs",
			`id status submitterName target { nodeId node { hostname } } node { hostname } tenant { name }`,
			500, scaleJobs, func(n map[string]any) error {
				tg := n["target"].(map[string]any)
				if node, _ := tg["node"].(map[string]any); node == nil || !strings.HasPrefix(node["hostname"].(string), "node-") {
					return fmt.Errorf("target %v has no node name", tg)
				}
				return nil
			}},
		{"services with their tenant by name", "services", `id name status tenant { name } template { name version }`,
			500, scaleServices, func(n map[string]any) error {
				if tn, _ := n["tenant"].(map[string]any); tn == nil || !strings.HasPrefix(tn["name"].(string), "Tenant ") {
					return fmt.Errorf("tenant %v", n["tenant"])
				}
				return nil
			}},
		{"tenants", "tenants", `id name status`, 500, scaleTenants, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]bool{}
			var after *string
			for pages := 0; ; pages++ {
				if pages > tc.want/tc.page+2 {
					t.Fatalf("still paging after %d pages", pages)
				}
				var out map[string]struct {
					Edges    []struct{ Node map[string]any }
					PageInfo struct {
						HasNextPage bool
						EndCursor   *string
					}
				}
				doc := fmt.Sprintf(`query($n: Int, $a: String) { %s(first: $n, after: $a) { edges { node { %s } } pageInfo { hasNextPage endCursor } } }`, tc.field, tc.selection)
				if err := admin.Do(ctxT(t), doc, map[string]any{"n": tc.page, "a": after}, &out); err != nil {
					t.Fatalf("page %d: %v", pages+1, err)
				}
				conn := out[tc.field]
				for _, ed := range conn.Edges {
					seen[ed.Node["id"].(string)] = true
					if tc.row != nil {
						if err := tc.row(ed.Node); err != nil {
							t.Fatalf("row %v: %v", ed.Node["id"], err)
						}
					}
				}
				if !conn.PageInfo.HasNextPage {
					break
				}
				after = conn.PageInfo.EndCursor
			}
			if len(seen) < tc.want {
				t.Fatalf("paged through %d rows, want at least %d", len(seen), tc.want)
			}
		})
	}

	// A page too costly is refused at once with a message that says what
	// to do, not served slowly.
	err := admin.Do(ctxT(t), `{ nodes(first: 500) { edges { node { id capacity { allocatable { cpu } allocated { cpu } } location { name capacity { allocatable { cpu } } } } } } }`, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "first") {
		t.Fatalf("a page of 500 nodes with their capacities and locations' capacities: %v", err)
	}
}
