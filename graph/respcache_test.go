package graph_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/nodes"
	"cairn/graph/client"
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
	const q = `query($id: ID!) { node: serverNode(id: $id) { hostname labels { key value } } }`
	read := func(who string, query string, vars map[string]any) nodeAnswer {
		t.Helper()
		var a nodeAnswer
		e.must(e.client(who), query, vars, &a)
		return a
	}
	// Read our own write, then once more: that answer is kept.
	var first nodeAnswer
	e.must(admin, `query($id: ID!, $c: Cursor) { node: serverNode(id: $id, consistentWith: $c) { hostname labels { key value } } }`,
		map[string]any{"id": id, "c": cursor}, &first)
	if first.Node.Hostname != "cache-1" {
		t.Fatalf("read own write: %+v", first)
	}
	mixed := `query($id: ID!) { node: serverNode(id: $id) { hostname labels { key value } } viewer { role } }`
	waiting := `query($id: ID!, $c: Cursor) { node: serverNode(id: $id, consistentWith: $c) { hostname } }`
	edit := func(hostname string) {
		t.Helper()
		if _, err := e.pool.Exec(context.Background(), `UPDATE read.nodes SET hostname = $2 WHERE id = $1`, id, hostname); err != nil {
			t.Fatal(err)
		}
	}
	byID := map[string]any{"id": id}
	// The projections may still be settling (making indexes, switching
	// views), which rightly moves their generation and empties the cache; an
	// attempt counts when the generation held still throughout. Each attempt
	// asks its own query text (a comment tells them apart), so an answer kept
	// in an attempt the generation moved in is not served to the next one;
	// and the attempts go on for as long as a loaded machine may need.
	var kept string // the query whose answer the settled attempt kept
	deadline := time.Now().Add(60 * time.Second)
	for attempt := 0; kept == "" && time.Now().Before(deadline); attempt++ {
		qa := fmt.Sprintf("%s # attempt %d", q, attempt)
		// Each is asked once before the edit (warm) or not, then after it.
		tests := []struct {
			name, who, query string
			vars             map[string]any
			warm             bool
		}{
			{"another caller has answers of its own", "operator", qa, byID, false},
			{"a query reading more than read models is never kept", "admin", mixed, byID, true},
			{"a query waiting for a write is never kept", "admin", waiting, map[string]any{"id": id, "c": cursor}, true},
		}
		before := fmt.Sprintf("before-%d", attempt)
		edit(before)
		if got := read("admin", qa, byID).Node.Hostname; got != before {
			// The edit does not show: the projections wrote the row anew.
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for _, tt := range tests {
			if tt.warm {
				_ = read(tt.who, tt.query, tt.vars)
			}
		}
		edit("edited")
		var wrong []string
		for _, tt := range tests {
			if got := read(tt.who, tt.query, tt.vars).Node.Hostname; got != "edited" {
				wrong = append(wrong, fmt.Sprintf("%s: hostname %q, want %q", tt.name, got, "edited"))
			}
		}
		// Served again, before and after the others: the generation held.
		if read("admin", qa, byID).Node.Hostname != before {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		kept = qa
		for _, w := range wrong {
			t.Error(w)
		}
	}
	if kept == "" {
		t.Fatal("the same query by the same caller was never served again while the read models stood still")
	}

	// Over the transports that stream, asked for result after result until
	// the end as the portal's WebSocket asks, the kept answer is the
	// query's one result.
	for _, proto := range []client.Protocol{client.TransportWS, client.SSE} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		sub, err := admin.Subscribe(ctx, proto, client.Request{Query: kept, Variables: byID})
		if err != nil {
			cancel()
			t.Fatalf("%v: %v", proto, err)
		}
		results := 0
		for ; results < 10; results++ {
			_, err := sub.Next(ctx)
			if errors.Is(err, client.ErrComplete) {
				break
			}
			if err != nil {
				t.Fatalf("%v, result %d: %v", proto, results+1, err)
			}
		}
		sub.Close()
		cancel()
		if results != 1 {
			t.Errorf("%v: the kept answer came %d times (counting stops at 10), want once", proto, results)
		}
	}

	// A change the projections apply moves their generation: nothing kept
	// from before is served again, not even for a query that did not wait.
	var labelled struct{ SetNodeLabels struct{ Cursor string } }
	e.must(op, `mutation($id: ID!) { setNodeLabels(input: {nodeId: $id, labels: [{key: "rack", value: "b"}]}) { cursor } }`,
		map[string]any{"id": id}, &labelled)
	e.must(admin, `query($id: ID!, $c: Cursor) { node: serverNode(id: $id, consistentWith: $c) { id } }`, map[string]any{"id": id, "c": labelled.SetNodeLabels.Cursor}, nil)
	after := read("admin", kept, map[string]any{"id": id})
	if len(after.Node.Labels) != 1 || after.Node.Labels[0].Value != "b" {
		t.Errorf("after a change, the kept answer was served: %+v", after)
	}
}
