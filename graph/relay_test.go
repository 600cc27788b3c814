package graph_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/domain/job"
	"cairn/graph/apierr"
	"cairn/graph/client"
	"cairn/sal/catalog"
)

// TestRelayConventions checks the API against the Relay conventions a
// generic client relies on: node(id:) finds any object by an id unique
// across kinds, first: 0 returns no edges, and lists page backwards as well
// as forwards, reading the same rows.
func TestRelayConventions(t *testing.T) {
	t.Parallel()
	e := newReadEnv(t)
	admin := e.client("admin")
	e.catalog()
	ctx := ctxT(t)

	e.createTenantID(admin, "acme")
	enrolled, err := nodes.NewHandlers(e.store, time.Now, func() string { return "relay-node" }).Enroll(ctx, commands.Meta{Actor: "test"},
		nodes.Enroll{Hostname: "relay-1"})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ids are unique across kinds", func(t *testing.T) {
		err := admin.Do(ctxT(t), `mutation { createLocation(input: {id: "acme", name: "acme"}) { cursor } }`, nil, nil)
		if client.CodeOf(err) != apierr.CodeConflict {
			t.Fatalf("a location with a tenant's id: got %v, want CONFLICT", err)
		}
	})

	t.Run("node finds any kind", func(t *testing.T) {
		for _, tt := range []struct{ id, kind string }{
			{"acme", "Tenant"}, {enrolled.ID, "ServerNode"}, {"kv-store@1.0.0", "TemplateVersion"}, {"nothing-here", ""},
		} {
			var out struct {
				Node *struct {
					Typename string `json:"__typename"`
					ID       string
				}
			}
			// Read models apply the log a moment after the command.
			deadline := time.Now().Add(10 * time.Second)
			for {
				e.must(admin, `query($id: ID!) { node(id: $id) { __typename id } }`, map[string]any{"id": tt.id}, &out)
				if out.Node != nil || tt.kind == "" || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			switch {
			case tt.kind == "" && out.Node != nil:
				t.Errorf("node(%q) = %+v, want null", tt.id, out.Node)
			case tt.kind != "" && (out.Node == nil || out.Node.Typename != tt.kind || out.Node.ID != tt.id):
				t.Errorf("node(%q) = %+v, want the %s", tt.id, out.Node, tt.kind)
			}
		}
	})

	for i := range 7 {
		e.createTenantID(admin, "page-"+itoa(i))
	}
	type page struct {
		Tenants struct {
			Edges    []struct{ Node struct{ ID string } }
			PageInfo struct {
				HasNextPage, HasPreviousPage bool
				StartCursor, EndCursor       *string
			}
		}
	}
	ids := func(p page) []string {
		var out []string
		for _, e := range p.Tenants.Edges {
			out = append(out, e.Node.ID)
		}
		return out
	}
	const list = `query($first: Int, $after: String, $last: Int, $before: String) {
		tenants(first: $first, after: $after, last: $last, before: $before) {
			edges { node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`

	t.Run("first 0", func(t *testing.T) {
		var p page
		e.must(admin, list, map[string]any{"first": 0}, &p)
		if len(p.Tenants.Edges) != 0 || !p.Tenants.PageInfo.HasNextPage {
			t.Fatalf("first: 0 gave %v, hasNextPage %v", ids(p), p.Tenants.PageInfo.HasNextPage)
		}
	})

	t.Run("backwards reads what forwards reads", func(t *testing.T) {
		// Every tenant made above, once the read models have them.
		var forward []string
		for deadline := time.Now().Add(10 * time.Second); len(forward) < 10 && time.Now().Before(deadline); {
			var all page
			e.must(admin, list, map[string]any{"first": 100}, &all)
			forward = ids(all)
		}
		var backward []string
		vars := map[string]any{"last": 3}
		for range 100 {
			var p page
			e.must(admin, list, vars, &p)
			backward = append(ids(p), backward...)
			if !p.Tenants.PageInfo.HasPreviousPage {
				break
			}
			vars = map[string]any{"last": 3, "before": *p.Tenants.PageInfo.StartCursor}
		}
		if len(forward) < 10 || !slices.Equal(forward, backward) {
			t.Fatalf("forwards %v, backwards %v", forward, backward)
		}
	})

	t.Run("first and last together are refused", func(t *testing.T) {
		err := admin.Do(ctxT(t), list, map[string]any{"first": 2, "last": 2}, nil)
		if client.CodeOf(err) != apierr.CodeInvalidInput {
			t.Fatalf("got %v, want INVALID_INPUT", err)
		}
	})

	t.Run("events page backwards", func(t *testing.T) {
		type events struct {
			Events struct{ Edges []struct{ Cursor string } }
		}
		var fwd, back events
		e.must(admin, `{ events(first: 500) { edges { cursor } } }`, nil, &fwd)
		e.must(admin, `{ events(last: 4) { edges { cursor } } }`, nil, &back)
		n := len(fwd.Events.Edges)
		if n < 4 || len(back.Events.Edges) != 4 || !slices.Equal(fwd.Events.Edges[n-4:], back.Events.Edges) {
			t.Fatalf("the last 4 events backwards %v, forwards end with %v", back.Events.Edges, fwd.Events.Edges[max(0, n-4):])
		}
	})

	t.Run("a node's jobs include those waiting for it", func(t *testing.T) {
		validator, err := catalog.NewValidator()
		if err != nil {
			t.Fatal(err)
		}
		out, err := jobs.NewHandlers(e.store, time.Now, func() string { return "queued-job" }, validator, nil).Submit(context.Background(),
			commands.Meta{Actor: "test"}, jobs.Submit{Spec: job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"true"}}},
				Target: job.Target{NodeID: enrolled.ID}})
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Jobs struct {
				Edges      []struct{ Node struct{ ID, Status string } }
				TotalCount *int
			}
		}
		e.must(admin, `query($n: ID, $c: Cursor) { jobs(filter: {nodeId: $n}, consistentWith: $c) { edges { node { id status } } totalCount } }`,
			map[string]any{"n": enrolled.ID, "c": out.Cursor.String()}, &got)
		if len(got.Jobs.Edges) != 1 || got.Jobs.Edges[0].Node.ID != out.ID || got.Jobs.Edges[0].Node.Status != "QUEUED" {
			t.Fatalf("jobs of the node: %+v, want the queued job %s", got.Jobs.Edges, out.ID)
		}
		if got.Jobs.TotalCount != nil {
			t.Fatalf("totalCount %d: the jobs list does not count", *got.Jobs.TotalCount)
		}
	})
}
