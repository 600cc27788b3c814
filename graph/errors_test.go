package graph_test

import (
	"net/http"
	"strings"
	"testing"

	"cairn/graph"
	"cairn/graph/apierr"
	"cairn/graph/client"
	"cairn/graph/transport"
)

// Every error carries its code; refusals happen before anything runs.
func TestErrorCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{Transport: transport.Options{Limits: transport.Budget{Depth: 4, Complexity: 50}}})
	ctx := ctxT(t)
	tenantID := e.createTenant(e.client("admin"), "acme").CreateTenant.Tenant.ID
	cases := []struct {
		name, token, query, code string
	}{
		{"no token", "", `{ viewer { role } }`, apierr.CodeUnauthenticated},
		{"forbidden", "vendor", `mutation { createTenant(input: {name: "x"}) { cursor } }`, apierr.CodeForbidden},
		{"tenant member may not create tenants", "tenantA", `mutation { createTenant(input: {name: "x"}) { cursor } }`, apierr.CodeForbidden},
		{"not found", "operator", `mutation { drainNode(input: {nodeId: "nope"}) { cursor } }`, apierr.CodeNotFound},
		{"conflict", "admin", `mutation { resumeTenant(input: {tenantId: "` + tenantID + `"}) { cursor } }`, apierr.CodeConflict},
		{"invalid input", "admin", `mutation { createTenant(input: {name: ""}) { cursor } }`, apierr.CodeInvalidInput},
		{"malformed cursor", "admin", `{ events(after: "x-y") { edges { cursor } } }`, apierr.CodeInvalidInput},
		{"syntax", "admin", `{ viewer { `, apierr.CodeInvalidInput},
		{"at the depth limit", "admin", `{ entityDiff(entity: {type: TENANT, id: "` + tenantID + `"}, from: {cursor: "0"}, to: {cursor: "0"}) { events { metadata { actor } } from { state } } }`, ""},
		{"too deep", "admin", `{ entityDiff(entity: {type: TENANT, id: "a"}, from: {cursor: "0"}, to: {cursor: "0"}) { events { metadata { actor } } } x: events { edges { node { metadata { actor } } } } }`, apierr.CodeInvalidInput},
		{"too complex", "admin", `{ events(first: 100) { edges { node { type streamId } } } }`, apierr.CodeInvalidInput},
	}
	for _, c := range cases {
		resp, err := e.client(c.token).Raw(ctx, client.Request{Query: c.query})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.code == "" {
			if len(resp.Errors) > 0 {
				t.Fatalf("%s: refused: %v", c.name, resp.Errors)
			}
			continue
		}
		if len(resp.Errors) == 0 || resp.Errors.Code() != c.code {
			t.Fatalf("%s: errors %v, want code %s", c.name, resp.Errors, c.code)
		}
		if strings.TrimSpace(resp.Errors[0].Message) == "" {
			t.Fatalf("%s: no message", c.name)
		}
		// People read the message alone: where it happened is in the
		// error's path and locations, not in front of the words.
		if msg := resp.Errors[0].Message; strings.HasPrefix(msg, "input:") {
			t.Fatalf("%s: the message starts with its location: %q", c.name, msg)
		}
	}

	// A bad token is refused with 401 before anything runs.
	resp, err := e.client("bogus").Raw(ctx, client.Request{Query: `{ viewer { role } }`})
	if err != nil || resp.Status != http.StatusUnauthorized || resp.Errors.Code() != apierr.CodeUnauthenticated {
		t.Fatalf("bad token: %v %+v", err, resp)
	}
}

// Depth is counted through fragments, and a too-deep query names the limit.
func TestDepthRefusal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{Transport: transport.Options{Limits: transport.Budget{Depth: 3}}})
	q := `fragment M on EventMetadata { actor } { events { edges { node { metadata { ...M } } } } }`
	resp, err := e.client("admin").Raw(ctxT(t), client.Request{Query: q})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Errors.Code() != apierr.CodeInvalidInput || resp.Errors[0].Extensions["reason"] != "DEPTH_LIMIT_EXCEEDED" {
		t.Fatalf("got %v", resp.Errors)
	}
}

// A document that passed preflight is remembered for the budget it passed:
// the same text from a caller without a token is measured against the
// tighter budget, every time.
func TestPreflightRemembersPerBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{Transport: transport.Options{
		Limits: transport.Budget{Depth: 20}, AnonymousLimits: transport.Budget{Depth: 3}}})
	q := `fragment M on EventMetadata { actor } { events { edges { node { metadata { ...M } } } } }`
	for range 2 {
		resp, err := e.client("admin").Raw(ctxT(t), client.Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Errors) > 0 {
			t.Fatalf("signed in: %v", resp.Errors)
		}
		resp, err = e.client("").Raw(ctxT(t), client.Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Errors) == 0 || resp.Errors[0].Extensions["reason"] != "DEPTH_LIMIT_EXCEEDED" {
			t.Fatalf("without a token: got %v, want DEPTH_LIMIT_EXCEEDED", resp.Errors)
		}
	}
}
