package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	gqlclient "cairn/graph/client"
	"cairn/internal/testproc"
	httpplugin "cairn/plugins/http"
)

// Helpers for tests that run the real binaries: building them, running
// them as processes with their output in files, talking GraphQL over HTTP,
// and an external DNS endpoint for the http plugin.

// buildBinaries builds the named commands of this module (cmd/<name>) into
// a temporary directory and returns it.
func buildBinaries(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := testproc.Build(dir, names...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// poll calls cond until it returns true, failing the test after timeout
// with what and the last detail cond gave. It stops early, with the
// process's output, if one of the processes exits.
func poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, string), watch ...*testproc.Process) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	delay := 20 * time.Millisecond
	for {
		ok, detail := cond()
		if ok {
			return
		}
		for _, p := range watch {
			if !p.Running() {
				t.Fatalf("%s exited (%v) while waiting for %s\n%s", p.Name, p.Err(), what, p.Output())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s: %s", timeout, what, detail)
		}
		time.Sleep(delay)
		delay = min(2*delay, 500*time.Millisecond)
	}
}

// waitForNodes waits until each host's node is online with its facts
// reported, so that placement knows what it offers (an agent connects
// first and reports its facts a moment later), and returns the nodes' ids
// by host.
func waitForNodes(t *testing.T, c gqlClient, hosts []string, watch ...*testproc.Process) map[string]string {
	t.Helper()
	ids := map[string]string{}
	poll(t, step, fmt.Sprintf("nodes %s to be online with their facts", strings.Join(hosts, ", ")), func() (bool, string) {
		var out struct {
			Nodes struct {
				Edges []struct {
					Node struct {
						ID, Hostname, Status string
						FactsAt              *string
					}
				}
			}
		}
		if err := c.do(`query($n: Int) { nodes(first: $n) { edges { node { id hostname status factsAt } } } }`,
			map[string]any{"n": len(hosts) + 10}, &out); err != nil {
			return false, err.Error()
		}
		serving := map[string]string{}
		var states []string
		for _, e := range out.Nodes.Edges {
			n := e.Node
			if n.Status == "ONLINE" && n.FactsAt != nil {
				serving[n.Hostname] = n.ID
			}
			states = append(states, fmt.Sprintf("%s %s (facts: %v)", n.Hostname, n.Status, n.FactsAt != nil))
		}
		for _, h := range hosts {
			if serving[h] == "" {
				return false, strings.Join(states, "; ")
			}
		}
		ids = serving
		return true, ""
	}, watch...)
	return ids
}

// firstStartToken finds the administrator's token cairnd prints on its
// first start.
var firstStartToken = regexp.MustCompile(`(?m)^\s+(cairn_\S+)\s*$`)

// gqlClient sends GraphQL operations as one caller, through the API's own
// client.
type gqlClient struct {
	url   string // of the /graphql endpoint
	token string
}

func (c gqlClient) do(query string, vars map[string]any, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return gqlclient.New(c.url, c.token, nil).Do(ctx, query, vars, out)
}

func (c gqlClient) must(t *testing.T, query string, vars map[string]any, out any) {
	t.Helper()
	if err := c.do(query, vars, out); err != nil {
		t.Fatalf("%v\nin: %s", err, query)
	}
}

// dnsEndpoint is an external DNS API for the http plugin, as
// examples/dns-endpoint is: it verifies each call's signature and answers
// every operation idempotently by resource id.
type dnsEndpoint struct {
	secret []byte

	mu       sync.Mutex
	records  map[string]string // resource id → fqdn
	tokens   map[string]bool   // the tokens calls carried
	refusals int               // calls whose signature did not verify
}

func newDNSEndpoint(secret []byte) *dnsEndpoint {
	return &dnsEndpoint{secret: secret, records: map[string]string{}, tokens: map[string]bool{}}
}

const dnsRecordSchema = `{"type":"object","additionalProperties":false,"required":["zone","name","type","target"],
 "properties":{"zone":{"type":"string"},"name":{"type":"string"},"type":{"enum":["A","AAAA","CNAME","TXT"]},
 "target":{"type":"string"},"ttl":{"type":"integer","minimum":30},"token":{"type":"string"}}}`

func (d *dnsEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	body, err := httpplugin.VerifyRequest(d.secret, r, time.Now())
	if err != nil {
		d.mu.Lock()
		d.refusals++
		d.mu.Unlock()
		reply(http.StatusUnauthorized, map[string]string{"error": err.Error()})
		return
	}
	var c struct {
		Operation  string `json:"operation"`
		ResourceID string `json:"resourceId"`
		Type       string `json:"type"`
		Properties struct {
			Zone, Name, Type, Target, Token string
		} `json:"properties"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		reply(http.StatusBadRequest, map[string]string{"error": "body is not JSON: " + err.Error()})
		return
	}
	if c.Operation == httpplugin.OpDescribe {
		reply(http.StatusOK, map[string]any{"types": []map[string]any{{"name": "dns-record", "schema": json.RawMessage(dnsRecordSchema)}}})
		return
	}
	if c.Type != "dns-record" {
		reply(http.StatusUnprocessableEntity, map[string]string{"error": "unknown resource type " + c.Type})
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c.Properties.Token != "" {
		d.tokens[c.Properties.Token] = true
	}
	switch c.Operation {
	case "create":
		fqdn := strings.TrimSuffix(c.Properties.Name, ".") + "." + c.Properties.Zone
		d.records[c.ResourceID] = fqdn
		reply(http.StatusOK, map[string]any{"outputs": map[string]string{"fqdn": fqdn, "target": c.Properties.Target}})
	case "start", "stop", "observe":
		fqdn, ok := d.records[c.ResourceID]
		if !ok {
			reply(http.StatusNotFound, map[string]string{"error": "no record for resource " + c.ResourceID})
			return
		}
		reply(http.StatusOK, map[string]any{"outputs": map[string]string{"fqdn": fqdn, "target": c.Properties.Target}})
	case "destroy":
		delete(d.records, c.ResourceID)
		reply(http.StatusOK, map[string]any{})
	default:
		reply(http.StatusBadRequest, map[string]string{"error": "unknown operation " + c.Operation})
	}
}

// snapshot returns the records held and whether a call carried token.
func (d *dnsEndpoint) snapshot(token string) (map[string]string, bool, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]string, len(d.records))
	for k, v := range d.records {
		out[k] = v
	}
	return out, d.tokens[token], d.refusals
}
