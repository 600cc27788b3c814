package graph_test

import (
	"context"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/nodes"
)

// The answer cache serves a query again while the read models have not
// changed, and never once they have. The test edits a read-model row behind
// the projections' back (they would not know, so the cache cannot): an
// answer that still shows the old value came from the cache.
func TestAnswerCache(t *testing.T) {
	t.Parallel()
	e := newReadEnv(t)
	admin, op := e.client("admin"), e.client("operator")
	out, err := nodes.NewHandlers(e.store, time.Now, func() string { return "cache-node" }).Enroll(context.Background(), commands.Meta{Actor: "test"},
		nodes.Enroll{Hostname: "cache-1", Labels: map[string]string{"rack": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	id, cursor := out.ID, out.Cursor.String()
	type nodeAnswer struct {
		Node struct {
			Hostname string
			Labels   []struct{ Key, Value string }
		}
	}
	const q = `query($id: ID!) { node(id: $id) { hostname labels { key value } } }`
	read := func(who string, query string, vars map[string]any) nodeAnswer {
		t.Helper()
		var a nodeAnswer
		e.must(e.client(who), query, vars, &a)
		return a
	}
	// Read our own write, then once more: that answer is kept.
	var first nodeAnswer
	e.must(admin, `query($id: ID!, $c: Cursor) { node(id: $id, consistentWith: $c) { hostname labels { key value } } }`,
		map[string]any{"id": id, "c": cursor}, &first)
	if first.Node.Hostname != "cache-1" {
		t.Fatalf("read own write: %+v", first)
	}
	mixed := `query($id: ID!) { node(id: $id) { hostname labels { key value } } viewer { role } }`
	waiting := `query($id: ID!, $c: Cursor) { node(id: $id, consistentWith: $c) { hostname } }`
	for _, query := range []string{q, mixed, waiting} {
		_ = read("admin", query, map[string]any{"id": id, "c": cursor})
	}

	if _, err := e.store.Pool().Exec(context.Background(), `UPDATE read.nodes SET hostname = 'edited' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, who, query string
		vars             map[string]any
		want             string
	}{
		{"the same query by the same caller is served again", "admin", q, map[string]any{"id": id}, "cache-1"},
		{"another caller has answers of its own", "operator", q, map[string]any{"id": id}, "edited"},
		{"a query reading more than read models is never kept", "admin", mixed, map[string]any{"id": id}, "edited"},
		{"a query waiting for a write is never kept", "admin", waiting, map[string]any{"id": id, "c": cursor}, "edited"},
	}
	for _, tt := range tests {
		if got := read(tt.who, tt.query, tt.vars).Node.Hostname; got != tt.want {
			t.Errorf("%s: hostname %q, want %q", tt.name, got, tt.want)
		}
	}

	// A change the projections apply moves their generation: nothing kept
	// from before is served again, not even for a query that did not wait.
	var labelled struct{ SetNodeLabels struct{ Cursor string } }
	e.must(op, `mutation($id: ID!) { setNodeLabels(input: {nodeId: $id, labels: [{key: "rack", value: "b"}]}) { cursor } }`,
		map[string]any{"id": id}, &labelled)
	e.must(admin, `query($id: ID!, $c: Cursor) { node(id: $id, consistentWith: $c) { id } }`, map[string]any{"id": id, "c": labelled.SetNodeLabels.Cursor}, nil)
	after := read("admin", q, map[string]any{"id": id})
	if len(after.Node.Labels) != 1 || after.Node.Labels[0].Value != "b" {
		t.Errorf("after a change, the kept answer was served: %+v", after)
	}
}
