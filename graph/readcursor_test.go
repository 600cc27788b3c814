package graph_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"cairn/eventstore"
	"cairn/graph/client"
)

// readModelsCursor is taken before a query's other fields read: every
// service created at or before it is in the same answer, even while writes
// go on, and a subscription after it hears of the next change without a
// gap and without replaying what the answer already showed.
func TestReadModelsCursorLeavesNoGap(t *testing.T) {
	e := newReadEnv(t)
	e.catalog()

	var mu sync.Mutex
	created := map[string]eventstore.Cursor{}
	stop := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				wrote <- nil
				return
			default:
			}
			name := fmt.Sprintf("w%d", i)
			var out servicePayload
			err := e.client("tenantA").Do(ctxT(t), `mutation($n: String!) { createService(input: {name: $n, templateName: "kv-store", templateVersion: "1.0.0", variables: {password: "pw"}}) { cursor } }`,
				map[string]any{"n": name}, &out)
			if err == nil {
				var c eventstore.Cursor
				c, err = eventstore.ParseCursor(out.CreateService.Cursor)
				mu.Lock()
				created[name] = c
				mu.Unlock()
			}
			if err != nil {
				wrote <- err
				return
			}
		}
	}()

	type answer struct {
		ReadModelsCursor string
		Services         struct {
			Edges []struct{ Node struct{ Name string } }
		}
	}
	read := func() (eventstore.Cursor, map[string]bool) {
		t.Helper()
		var a answer
		if err := e.client("tenantA").Do(ctxT(t), `{ services(first: 500) { edges { node { name } } } readModelsCursor }`, nil, &a); err != nil {
			t.Fatal(err)
		}
		c, err := eventstore.ParseCursor(a.ReadModelsCursor)
		if err != nil {
			t.Fatalf("readModelsCursor %q: %v", a.ReadModelsCursor, err)
		}
		listed := map[string]bool{}
		for _, ed := range a.Services.Edges {
			listed[ed.Node.Name] = true
		}
		return c, listed
	}
	var last eventstore.Cursor
	for range 40 {
		c, listed := read()
		if c.Less(last) {
			t.Fatalf("readModelsCursor went back from %v to %v", last, c)
		}
		last = c
		mu.Lock()
		for name, at := range created {
			if !c.Less(at) && !listed[name] {
				mu.Unlock()
				t.Fatalf("%s was created at %v, at or before readModelsCursor %v, but the same answer does not list it", name, at, c)
			}
		}
		mu.Unlock()
	}
	close(stop)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}

	// A change made after the answer, before the subscription started,
	// still arrives: the subscription resumes from the cursor.
	c, listed := read()
	e.createService("tenantA", "later")
	if listed["later"] {
		t.Fatal("the answer lists a service created after it")
	}
	sub, err := e.client("tenantA").Subscribe(ctxT(t), client.TransportWS, client.Request{
		Query:     `subscription($after: Cursor) { serviceChanged(after: $after) { event { cursor } service { name } } }`,
		Variables: map[string]any{"after": c.String()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for {
		r, err := sub.Next(ctxT(t))
		if err != nil {
			t.Fatalf("the change made after the answer did not arrive: %v", err)
		}
		var got struct {
			ServiceChanged struct {
				Event   struct{ Cursor string }
				Service struct{ Name string }
			}
		}
		if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Errors) > 0 {
			t.Fatalf("%s %v %v", r.Data, r.Errors, err)
		}
		ec, err := eventstore.ParseCursor(got.ServiceChanged.Event.Cursor)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Less(ec) {
			t.Fatalf("delivered %v, at or before the cursor %v the subscription started after", ec, c)
		}
		if got.ServiceChanged.Service.Name == "later" {
			return
		}
	}
}
