package graph_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"cairn/graph"
	"cairn/graph/apierr"
	"cairn/graph/client"
	"cairn/graph/transport"
)

const createTenant = `mutation($name: String!, $cmd: String) {
  createTenant(input: {name: $name, commandId: $cmd}) { tenant { id name status } cursor duplicate }
}`

type tenantResult struct {
	CreateTenant struct {
		Tenant    struct{ ID, Name, Status string }
		Cursor    string
		Duplicate bool
	}
}

func (e *env) createTenant(c *client.Client, name string) tenantResult {
	e.t.Helper()
	var out tenantResult
	if err := c.Do(ctxT(e.t), createTenant, map[string]any{"name": name}, &out); err != nil {
		e.t.Fatalf("createTenant %s: %v", name, err)
	}
	return out
}

const eventsSub = `subscription($after: Cursor) {
  events(filter: {streamTypes: ["tenant"]}, after: $after) { cursor type streamId payload metadata { actor } }
}`

type eventResult struct {
	Events struct {
		Cursor, Type, StreamID string
		Payload                map[string]any
	}
}

func next(t *testing.T, s *client.Subscription) eventResult {
	t.Helper()
	r, err := s.Next(ctxT(t))
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	if len(r.Errors) > 0 {
		t.Fatalf("next: %v", r.Errors)
	}
	var ev eventResult
	if err := json.Unmarshal(r.Data, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// A mutation's event reaches subscribers on every transport.
func TestMutationEventReachesSubscribers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	admin := e.client("admin")
	for _, p := range []client.Protocol{client.TransportWS, client.LegacyWS, client.SSE} {
		t.Run(string(p), func(t *testing.T) {
			sub, err := admin.Subscribe(ctxT(t), p, client.Request{Query: eventsSub})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			// The subscription is live once the server answered; a mutation
			// made after it must arrive.
			waitLive(t, e, sub)
			res := e.createTenant(admin, "acme "+string(p))
			ev := next(t, sub)
			if ev.Events.Type != "tenant.created" || ev.Events.Cursor != res.CreateTenant.Cursor {
				t.Fatalf("got %+v, want tenant.created at %s", ev.Events, res.CreateTenant.Cursor)
			}
		})
	}
}

// waitLive makes sure the server registered the subscription: it makes
// marker events and waits for one.
//
// A subscription without a cursor starts wherever the log is when the server
// registers it, which may be after a marker made right after subscribing; so
// markers are made every half second until one arrives, and then the
// subscription is read up to the newest, leaving no late marker behind.
func waitLive(t *testing.T, e *env, sub *client.Subscription) {
	t.Helper()
	var mu sync.Mutex
	var newest string
	stop := make(chan struct{})
	made := make(chan struct{})
	go func() {
		defer close(made)
		for {
			c := e.createTenant(e.client("admin"), "marker").CreateTenant.Cursor
			mu.Lock()
			newest = c
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	first := next(t, sub)
	close(stop)
	<-made
	mu.Lock()
	last := newest
	mu.Unlock()
	for ev := first; ev.Events.Cursor != last; ev = next(t, sub) {
		if ev.Events.Type != "tenant.created" {
			t.Fatalf("marker: got %+v", ev.Events)
		}
	}
}

// A subscriber that disconnects and resumes from its cursor receives each
// missed event exactly once, in order.
func TestResumeAfterDisconnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	admin := e.client("admin")
	sub, err := admin.Subscribe(ctxT(t), client.TransportWS, client.Request{Query: eventsSub})
	if err != nil {
		t.Fatal(err)
	}
	waitLive(t, e, sub)
	var last string
	for i := range 3 {
		e.createTenant(admin, fmt.Sprintf("before %d", i))
		last = next(t, sub).Events.Cursor
	}
	sub.Close()

	var missed []string
	for i := range 5 {
		missed = append(missed, e.createTenant(admin, fmt.Sprintf("missed %d", i)).CreateTenant.Cursor)
	}
	sub, err = admin.Subscribe(ctxT(t), client.LegacyWS, client.Request{Query: eventsSub, Variables: map[string]any{"after": last}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i, want := range missed {
		if got := next(t, sub).Events.Cursor; got != want {
			t.Fatalf("resumed event %d: cursor %s, want %s", i, got, want)
		}
	}
	live := e.createTenant(admin, "after").CreateTenant.Cursor
	if got := next(t, sub).Events.Cursor; got != live {
		t.Fatalf("first live event after resuming: %s, want %s (a duplicate or a gap)", got, live)
	}
}

// Resuming from a cursor older than the hub's ring catches up from the log.
func TestResumeFromTheLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{Live: liveOpts(4)})
	admin := e.client("admin")
	var cursors []string
	for i := range 12 {
		cursors = append(cursors, e.createTenant(admin, fmt.Sprintf("t%d", i)).CreateTenant.Cursor)
	}
	sub, err := admin.Subscribe(ctxT(t), client.SSE, client.Request{Query: eventsSub, Variables: map[string]any{"after": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i, want := range cursors {
		if got := next(t, sub).Events.Cursor; got != want {
			t.Fatalf("event %d: %s, want %s", i, got, want)
		}
	}
}

// Tenants see their own tenant's events only, in subscriptions as in queries.
func TestTenantSeesOwnEventsOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	admin := e.client("admin")
	// Subscribing after a known cursor leaves no race with the server's
	// registration of the subscription.
	start := e.createTenant(admin, "start").CreateTenant.Cursor
	q := `subscription($after: Cursor) { events(after: $after) { type metadata { tenantId } } }`
	sub, err := e.client("tenantA").Subscribe(ctxT(t), client.TransportWS, client.Request{Query: q, Variables: map[string]any{"after": start}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Users are created within their tenant: their events carry it.
	for _, tn := range []string{"tenant-b", "tenant-a"} {
		e.createTenantID(admin, tn)
		var out struct{}
		err := admin.Do(ctxT(t), `mutation($t: ID) { createUser(input: {name: "u", role: TENANT_MEMBER, tenantId: $t}) { cursor } }`,
			map[string]any{"t": tn}, &out)
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := sub.Next(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Events struct {
			Type     string
			Metadata struct{ TenantID string }
		}
	}
	_ = json.Unmarshal(r.Data, &got)
	if got.Events.Metadata.TenantID != "tenant-a" {
		t.Fatalf("tenant A received %+v", got.Events)
	}
	var page struct {
		Events struct {
			Edges []struct {
				Node struct{ Metadata struct{ TenantID *string } }
			}
		}
	}
	if err := e.client("tenantB").Do(ctxT(t), `{ events(first: 100) { edges { node { metadata { tenantId } } } } }`, nil, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Events.Edges) == 0 {
		t.Fatal("tenant B sees none of its events")
	}
	for _, ed := range page.Events.Edges {
		if ed.Node.Metadata.TenantID == nil || *ed.Node.Metadata.TenantID != "tenant-b" {
			t.Fatalf("tenant B sees an event of tenant %v", ed.Node.Metadata.TenantID)
		}
	}
}

func (e *env) createTenantID(c *client.Client, id string) {
	e.t.Helper()
	err := c.Do(ctxT(e.t), `mutation($id: ID, $name: String!) { createTenant(input: {id: $id, name: $name}) { cursor } }`, map[string]any{"id": id, "name": id}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
}

// A revoked token ends its WebSocket connection with 4401 and the reason.
func TestRevokedTokenClosesConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{Transport: transport.Options{RecheckInterval: 50e6}})
	e.tokens.add("short", principals["auditor"])
	sub, err := e.client("short").Subscribe(ctxT(t), client.TransportWS, client.Request{Query: eventsSub})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	e.tokens.revoke("short")
	ctx := ctxT(t)
	sawError := false
	for {
		r, err := sub.Next(ctx)
		var ce *client.CloseError
		switch {
		case errors.As(err, &ce):
			if ce.Code != 4401 {
				t.Fatalf("closed with %d %q, want 4401", ce.Code, ce.Reason)
			}
		case errors.Is(err, client.ErrComplete):
			if !sawError {
				t.Fatal("the subscription completed without saying why")
			}
		case err != nil:
			t.Fatal(err)
		default:
			if r.Errors.Code() != apierr.CodeUnauthenticated {
				t.Fatalf("subscription ended with %v, want UNAUTHENTICATED", r.Errors)
			}
			sawError = true
			continue
		}
		break
	}
	if _, err := e.client("short").Subscribe(ctx, client.TransportWS, client.Request{Query: eventsSub}); err == nil {
		t.Fatal("a revoked token opened a new subscription")
	}
}
