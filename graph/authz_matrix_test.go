package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/vektah/gqlparser/v2/ast"

	"cairn/auth"
	"cairn/cluster"
	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/blueprints"
	"cairn/commands/commandstest"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/commands/schedules"
	"cairn/commands/services"
	"cairn/commands/templates"
	"cairn/dispatch"
	"cairn/dispatch/dispatchtest"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/resource"
	"cairn/domain/schedule"
	"cairn/domain/service"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/graph"
	"cairn/graph/apierr"
	"cairn/graph/client"
	"cairn/graph/generated"
	"cairn/graph/transport"
	"cairn/internal/testdb"
	"cairn/projections"
	"cairn/projections/models"
	"cairn/projections/readmodel"
)

// The authorization matrix: every query, mutation and subscription field of
// the schema × every role (two tenants of each tenant role, two vendors, an
// agent) × no token. Expected outcomes come from auth.Table through
// auth.Can, so the test asserts that the API does what the policy says:
// a role without the action gets FORBIDDEN, a scoped role asking for
// another tenant's (or node's) entity finds nothing (null, NOT_FOUND, or a
// list without it), and no token gets UNAUTHENTICATED. A field of the schema
// without a row here fails TestAuthzMatrixCoversSchema.

// mxCaller is one column of the matrix.
type mxCaller struct {
	name  string // also the suffix of the ids its mutations create
	token string
	p     auth.Principal // zero: anonymous
}

func (c mxCaller) anonymous() bool { return c.p.Role == "" }

func (c mxCaller) tenantScoped() bool {
	return c.p.Role == tenant.RoleTenantAdmin || c.p.Role == tenant.RoleTenantMember
}

// own is what the caller's own entities look like to auth.Can: its tenant,
// its node, its templates, a role it may hand out.
func own(p auth.Principal) auth.Resource {
	return auth.Resource{TenantID: p.TenantID, NodeID: p.NodeID, Vendor: p.UserID, Grants: p.Role}
}

// outcome is what a caller gets for a sample.
type outcome string

const (
	allowed   outcome = "allowed"
	unauthd   outcome = apierr.CodeUnauthenticated
	forbidden outcome = apierr.CodeForbidden
	notFound  outcome = apierr.CodeNotFound // the entity is hidden, or missing
	null      outcome = "null"              // the entity is hidden, or missing: no error
)

// rule derives a sample's expected outcome from the policy.
type rule struct {
	// read is checked first when set: a role without it is refused; a role
	// with it that may not read res (another tenant's, another node's) gets
	// hide, exactly as if the entity did not exist.
	read auth.Action
	// act is what the sample does to res.
	act auth.Action
	res auth.Resource
	// own replaces res by the caller's own tenant, node and user: lists,
	// submissions, registrations.
	own  bool
	hide outcome
	// public fields need no token at all.
	public bool
	// missing samples name an entity that does not exist: who may read (or
	// act) learns that it does not (hide); who may not is refused as for
	// an existing one, learning nothing.
	missing bool
}

func (r rule) want(c mxCaller) outcome {
	if r.public {
		return allowed
	}
	if c.anonymous() {
		return unauthd
	}
	res := r.res
	if r.own {
		res = own(c.p)
	}
	if r.read != "" {
		if _, ok := auth.Table[c.p.Role][r.read]; !ok {
			return forbidden
		}
		if r.missing || auth.Can(c.p, r.read, res) != nil {
			return r.hide
		}
	}
	if r.act != "" && auth.Can(c.p, r.act, res) != nil {
		return forbidden
	}
	if r.missing {
		return r.hide
	}
	return allowed
}

// sample is one operation of a row, run by every caller.
type sample struct {
	name string
	doc  string
	vars func(c mxCaller) map[string]any
	rule rule
	// want replaces rule when the answer depends on more than one lookup.
	want func(c mxCaller) outcome
	// ok are error codes that still show an allowed caller got past
	// authorization: the entity's state refused the command (CONFLICT).
	ok []string
	// list checks a connection an allowed caller gets: only entities it
	// may see, and every seeded entity it may see.
	list *listCheck
	// check looks at an allowed caller's result (the field's value).
	check func(c mxCaller, v json.RawMessage) error
	// stream is set on subscriptions that follow changes.
	stream *streamCheck
}

func (s sample) expect(c mxCaller) outcome {
	if s.want != nil {
		return s.want(c)
	}
	return s.rule.want(c)
}

type row struct {
	field   string // Query.x, Mutation.x, Subscription.x
	samples []sample
}

func withVars(s sample, v func(mxCaller) map[string]any) sample {
	s.vars = v
	return s
}

func vars(kv ...any) func(mxCaller) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return func(mxCaller) map[string]any { return m }
}

// listCheck checks a connection's nodes against the policy.
type listCheck struct {
	action auth.Action
	// item returns a node's id and the resource it concerns.
	item func(f *mxFixture, node map[string]any) (string, auth.Resource)
	// seeded are the entities the list must show to whoever may see them.
	seeded map[string]auth.Resource
	// match is the sample's filter; nil: every seeded entity matches.
	match func(auth.Resource) bool
}

func mxDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func idTenant(_ *mxFixture, n map[string]any) (string, auth.Resource) {
	return str(n, "id"), auth.Resource{TenantID: str(n, "tenantId")}
}

func idOnly(_ *mxFixture, n map[string]any) (string, auth.Resource) {
	return str(n, "id"), auth.Resource{}
}

func (l *listCheck) verify(f *mxFixture, c mxCaller, v json.RawMessage) error {
	var conn struct {
		Edges []struct {
			Node map[string]any `json:"node"`
		} `json:"edges"`
	}
	if err := json.Unmarshal(v, &conn); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, e := range conn.Edges {
		id, res := l.item(f, e.Node)
		if truth, ok := l.seeded[id]; ok {
			res = truth
		}
		if err := auth.Can(c.p, l.action, res); err != nil {
			return fmt.Errorf("lists %s (%+v), which it may not see: %v", id, res, err)
		}
		seen[id] = true
	}
	for id, res := range l.seeded {
		if l.match != nil && !l.match(res) {
			continue
		}
		if auth.Can(c.p, l.action, res) == nil && !seen[id] {
			return fmt.Errorf("does not list %s (%+v), which it may see", id, res)
		}
	}
	return nil
}

// streamCheck follows a change subscription: after the fixture's start
// cursor, the changes made on tenant B (node Y), then on tenant A (node X),
// then on tenant B (node Y) again.
type streamCheck struct {
	action auth.Action
	// kind is the emissions the subscription carries ("" for all).
	kind string
	// item returns a result's event cursor and the resource it concerns.
	item func(v json.RawMessage) (string, auth.Resource, error)
}

// emission is one change made after the subscriptions' start cursor.
type emission struct {
	kind   string // service, job, node
	id     string
	cursor string
	entity auth.Resource // the entity's tenant, node
	tenant string        // the event's metadata tenant
}

// ---- the fixture

type mxFixture struct {
	url     string
	store   *eventstore.Store
	callers []mxCaller
	by      map[string]mxCaller

	users     map[string]auth.Resource // user id → tenant
	tokens    map[string]auth.Resource // api token id → tenant
	svcTenant map[string]string        // service id → tenant
	resources map[string]auth.Resource // resource id → tenant
	jobs      map[string]auth.Resource // job id → tenant, lease node
	nodes     map[string]auth.Resource

	nodeX, nodeY, nodeZ, nodeW string
	credY                      string
	scratchTokA, scratchTokB   string
	joinTokens                 map[string]string // caller → join token
	cursorA, cursorB, cursorN  string            // events of tenant A, B, of no tenant
	start                      string            // the subscriptions' start cursor
	emitted                    []emission
}

const (
	tenantA = "tenant-a"
	tenantB = "tenant-b"
	tenantS = "tenant-s" // suspended, renamed and resumed by the matrix
)

var echoSpec = job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"echo", "hi"}}}

func mxCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newMatrix starts the whole API — read models, the job side, catalog and
// services — on one database, with real tokens, and seeds it.
func newMatrix(t *testing.T) *mxFixture {
	t.Helper()
	db := testdb.New(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	de, err := dispatchtest.Start(db.AppPool(t), dispatch.Options{
		Lease: 10 * time.Minute, HeartbeatInterval: time.Minute, DisconnectAfter: 10 * time.Minute,
		DownAfter: 20 * time.Minute, Tick: 50 * time.Millisecond,
	}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = de.Stop() })
	store := de.Store
	runner := projections.NewRunner(store, de.Pool, projections.Options{Log: log})
	if err := runner.Register(models.All()...); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	ids := func() string { return fmt.Sprintf("mx%d", n.Add(1)) }
	svc, err := services.NewHandlers(store, time.Now, ids, commandstest.Sealer())
	if err != nil {
		t.Fatal(err)
	}
	tpl := templates.NewHandlers(store, time.Now, nil)
	// Every role asks every field, anonymous callers included, from one
	// address: far beyond a caller's quota of requests.
	unlimited := transport.Quota{Rate: 1e9, Burst: 1e9}
	api, err := graph.New(graph.Config{ConsistencyTimeout: 20 * time.Second,
		Transport: transport.Options{Quota: unlimited, AnonymousQuota: unlimited}}, graph.Deps{
		Log: log, Store: store, Reader: readmodel.New(de.Pool), Auth: de.Auth, Projections: runner, ProjectionAdmin: runner,
		Access: de.Access, Nodes: de.Nodes, Templates: tpl, Services: svc,
		Blueprints: blueprints.NewHandlers(store, svc, readmodel.New(de.Pool), readmodel.New(de.Pool)),
		Jobs:       de.Jobs, Dispatch: de.Dispatcher, Logs: de.Logs, Stats: de.Stats, Schedules: de.Schedules,
		Cluster: cluster.NewRegistry(de.Pool, "matrix", "127.0.0.1:8080", "test", "key", log),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveWithReadModels(t, runner, api, api.Handler())
	wctx := mxCtx(t, 60*time.Second)
	if err := de.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	f := &mxFixture{url: srv.URL, store: store, by: map[string]mxCaller{},
		users: map[string]auth.Resource{}, tokens: map[string]auth.Resource{}, svcTenant: map[string]string{},
		resources: map[string]auth.Resource{}, jobs: map[string]auth.Resource{}, nodes: map[string]auth.Resource{},
		joinTokens: map[string]string{}}
	f.seed(t, wctx, de, svc, tpl)
	head, err := store.Head(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.WaitFor(wctx, head); err != nil {
		t.Fatal(err)
	}
	f.start = head.String()
	return f
}

func seedOK[T any](t *testing.T, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("seed: %s: %v", what, err)
		}
		return v
	}
}

// seed makes, through the command handlers: tenants A and B (and S), a user
// and a token for every role (tenant roles in A and in B), scratch users and
// tokens the matrix may disable and revoke, locations, kv-store 1.0.0
// (published) and 2.0.0 of vendor A, two services of each tenant with
// resources, nodes X and Y with agents and jobs of each tenant leased to
// them (one running with output), nodes Z (never connected) and W, and
// schedules.
func (f *mxFixture) seed(t *testing.T, ctx context.Context, de *dispatchtest.Env, svc *services.Handlers, tpl *templates.Handlers) {
	t.Helper()
	seedMeta := commands.Meta{Actor: "seed"}
	for _, id := range []string{tenantA, tenantB, tenantS} {
		seedOK[commands.Outcome](t, "tenant")(de.Access.CreateTenant(ctx, seedMeta, access.CreateTenant{TenantID: id, Name: id}))
	}
	f.callers = []mxCaller{{name: "anonymous"}}
	person := func(name string, role tenant.Role, tenantID string) mxCaller {
		uid := "u-" + name
		seedOK[commands.Outcome](t, "user "+uid)(de.Access.CreateUser(ctx, seedMeta, access.CreateUser{UserID: uid, Name: name, Role: role, TenantID: tenantID}))
		tok := seedOK[access.IssuedToken](t, "token "+uid)(de.Access.IssueToken(ctx, seedMeta, access.IssueToken{UserID: uid}))
		f.users[uid] = auth.Resource{TenantID: tenantID, Grants: auth.Role(role)}
		f.tokens[tok.ID] = auth.Resource{TenantID: tenantID, Grants: auth.Role(role)}
		return mxCaller{name: name, token: tok.Token, p: auth.Principal{Kind: auth.KindUser, ID: uid, UserID: uid,
			TokenID: tok.ID, Role: auth.Role(role), TenantID: tenantID}}
	}
	f.callers = append(f.callers,
		person("admin", tenant.RoleAdmin, ""),
		person("operator", tenant.RoleOperator, ""),
		person("auditor", tenant.RoleAuditor, ""),
		person("vendor-a", tenant.RoleVendor, ""),
		person("vendor-b", tenant.RoleVendor, ""),
		person("tadmin-a", tenant.RoleTenantAdmin, tenantA),
		person("tmember-a", tenant.RoleTenantMember, tenantA),
		person("tadmin-b", tenant.RoleTenantAdmin, tenantB),
		person("tmember-b", tenant.RoleTenantMember, tenantB),
	)
	scratchA, scratchB := person("scratch-a", tenant.RoleTenantMember, tenantA), person("scratch-b", tenant.RoleTenantMember, tenantB)
	f.scratchTokA, f.scratchTokB = scratchA.p.TokenID, scratchB.p.TokenID
	// A tenant admin's token issued within its tenant.
	tok := seedOK[access.IssuedToken](t, "tenant token")(de.Access.IssueToken(ctx, commands.Meta{Actor: "u-tadmin-a", Tenant: tenantA}, access.IssueToken{UserID: "u-tmember-a"}))
	f.tokens[tok.ID] = auth.Resource{TenantID: tenantA, Grants: tenant.RoleTenantMember}

	for _, id := range []string{"loc-1", "loc-s"} {
		seedOK[commands.Outcome](t, "location")(de.Access.CreateLocation(ctx, seedMeta, access.CreateLocation{LocationID: id, Name: id}))
	}

	vendor := commands.Meta{Actor: "u-vendor-a"}
	seedOK[commands.Outcome](t, "template")(tpl.Register(ctx, vendor, templates.Register{Descriptor: commandstest.Descriptor}))
	seedOK[commands.Outcome](t, "publish")(tpl.Publish(ctx, vendor, templates.Publish{Name: "kv-store", Version: "1.0.0"}))
	v2 := strings.Replace(commandstest.Descriptor, "version: 1.0.0", "version: 2.0.0", 1)
	seedOK[commands.Outcome](t, "template 2")(tpl.Register(ctx, vendor, templates.Register{Descriptor: v2}))

	for _, s := range []struct{ id, tenant string }{{"svc-a", tenantA}, {"svc-b", tenantB}, {"svc-am", tenantA}, {"svc-bm", tenantB}} {
		out := seedOK[commands.Outcome](t, "service")(svc.Register(ctx, commands.Meta{Actor: "u-tmember-a"}, services.Register{ServiceID: s.id, TenantID: s.tenant,
			Name: s.id, TemplateName: "kv-store", TemplateVersion: "1.0.0", Variables: map[string]json.RawMessage{"password": json.RawMessage(`"pw"`)}}))
		f.svcTenant[s.id] = s.tenant
		switch s.id {
		case "svc-a":
			f.cursorA = out.Cursor.String()
		case "svc-b":
			f.cursorB = out.Cursor.String()
		default:
			continue
		}
		sv, _, err := commands.Load[service.Service](ctx, f.store, domain.ServiceStream, s.id)
		if err != nil || len(sv.ResourceIDs) == 0 {
			t.Fatalf("seed: service %s has no resources: %v", s.id, err)
		}
		for _, rid := range sv.ResourceIDs {
			plan := resource.Plan{ResourceID: rid, ServiceID: s.id, Plugin: "noop", Type: "thing", At: time.Now()}
			_, err := commands.Execute[resource.Resource](ctx, f.store, domain.ResourceStream, rid, commands.Meta{Actor: "seed", Tenant: s.tenant}, plan,
				func(r resource.Resource) ([]domain.Event, error) { return r.Plan(plan) })
			if err != nil {
				t.Fatalf("seed: resource %s: %v", rid, err)
			}
			f.resources[rid] = auth.Resource{TenantID: s.tenant}
		}
	}

	operator := commands.Meta{Actor: "u-operator"}
	enroll := func(host string) (string, string, string) {
		jt := seedOK[access.IssuedJoinToken](t, "join token")(de.Access.IssueJoinToken(ctx, operator, access.IssueJoinToken{}))
		en := seedOK[access.Enrollment](t, "enroll")(de.Dispatcher.Enroll(ctx, commands.Meta{}, access.RedeemJoinToken{Token: jt.Token, Hostname: host}))
		f.nodes[en.ID] = auth.Resource{NodeID: en.ID}
		return en.ID, en.Credential, en.Cursor.String()
	}
	var credX string
	f.nodeX, credX, f.cursorN = enroll("host-x")
	f.nodeY, f.credY, _ = enroll("host-y")
	f.nodeZ, _, _ = enroll("host-z")
	f.nodeW, _, _ = enroll("host-w")
	agentX := mxCaller{name: "agent-x", token: credX, p: auth.Principal{Kind: auth.KindAgent, ID: f.nodeX, TokenID: "node." + f.nodeX, Role: auth.RoleAgent, NodeID: f.nodeX}}
	f.callers = append(f.callers, agentX)
	for _, c := range f.callers {
		f.by[c.name] = c
		f.joinTokens[c.name] = seedOK[access.IssuedJoinToken](t, "join token")(de.Access.IssueJoinToken(ctx, operator, access.IssueJoinToken{})).Token
	}
	// Nodes X (the agent's own) and Z are in a location, for Node.location.
	for _, id := range []string{f.nodeX, f.nodeZ} {
		seedOK[commands.Outcome](t, "node location")(de.Nodes.SetLocation(ctx, operator, nodes.SetLocation{NodeID: id, LocationID: "loc-1"}))
	}

	onNode := map[string][]string{
		f.nodeX: {"job-a", "job-ka", "job-ca", "job-mx"},
		f.nodeY: {"job-b", "job-kb", "job-cb1", "job-cb2", "job-my"},
	}
	tenantOf := map[string]string{"job-a": tenantA, "job-ka": tenantA, "job-ca": tenantA, "job-b": tenantB, "job-kb": tenantB, "job-cb1": tenantB, "job-cb2": tenantB}
	for nodeID, ids := range onNode {
		for _, id := range ids {
			m := commands.Meta{Actor: "u-operator", Tenant: tenantOf[id]}
			seedOK[commands.Outcome](t, "job "+id)(de.Jobs.Submit(ctx, m, jobs.Submit{JobID: id, Spec: echoSpec, Target: job.Target{NodeID: nodeID}}))
			f.jobs[id] = auth.Resource{TenantID: tenantOf[id], NodeID: nodeID}
		}
	}
	// Jobs with a parent, for Job.parent: one of tenant A whose parent is
	// A's, and one of tenant B whose parent is A's, which B must not see
	// through the relation. Neither is leased (node Z has no agent).
	for id, tn := range map[string]string{"job-ac": tenantA, "job-xc": tenantB} {
		m := commands.Meta{Actor: "u-operator", Tenant: tn}
		seedOK[commands.Outcome](t, "job "+id)(de.Jobs.Submit(ctx, m, jobs.Submit{JobID: id, ParentID: "job-a", Spec: echoSpec, Target: job.Target{NodeID: f.nodeZ}}))
		f.jobs[id] = auth.Resource{TenantID: tn}
	}
	// The agents take their jobs; one of each runs and has written output.
	for nodeID, cred := range map[string]string{f.nodeX: credX, f.nodeY: f.credY} {
		f.lease(t, ctx, cred, nodeID, onNode[nodeID])
		running := onNode[nodeID][0]
		agent := client.New(f.url, cred, nil)
		for _, op := range []string{"acknowledgeJob", "startJob"} {
			q := `mutation($n: ID!, $j: ID!) { ` + op + `(input: {nodeId: $n, jobId: $j}) { cursor } }`
			if err := agent.Do(ctx, q, map[string]any{"n": nodeID, "j": running}, nil); err != nil {
				t.Fatalf("seed: %s %s: %v", op, running, err)
			}
		}
		q := `mutation($n: ID!, $j: ID!, $t: Time!) { appendJobLog(input: {nodeId: $n, jobId: $j, chunks: [{seq: 1, stream: STDOUT, data: "hello", time: $t}]}) { accepted } }`
		if err := agent.Do(ctx, q, map[string]any{"n": nodeID, "j": running, "t": time.Now().UTC().Format(time.RFC3339Nano)}, nil); err != nil {
			t.Fatalf("seed: output of %s: %v", running, err)
		}
	}

	tmpl := schedule.JobTemplate{Spec: echoSpec, Target: job.Target{NodeID: f.nodeZ}}
	for _, id := range []string{"sch-1", "sch-s"} {
		seedOK[commands.Outcome](t, "schedule")(de.Schedules.Create(ctx, operator, schedules.Create{ScheduleID: id, Job: tmpl, Every: 24 * time.Hour}))
	}
}

// lease polls as the node's agent until each of the jobs is leased to it.
func (f *mxFixture) lease(t *testing.T, ctx context.Context, cred, nodeID string, want []string) {
	t.Helper()
	agent := client.New(f.url, cred, nil)
	got := map[string]bool{}
	var after any
	for len(got) < len(want) {
		var out struct {
			PollAgentJobs struct {
				Cursor string
				Jobs   []struct{ Job struct{ ID string } }
			}
		}
		q := `mutation($n: ID!, $a: Cursor) { pollAgentJobs(input: {nodeId: $n, after: $a, waitSeconds: 5}) { cursor jobs { job { id } } } }`
		if err := agent.Do(ctx, q, map[string]any{"n": nodeID, "a": after}, &out); err != nil {
			t.Fatalf("seed: poll %s: %v", nodeID, err)
		}
		after = out.PollAgentJobs.Cursor
		for _, j := range out.PollAgentJobs.Jobs {
			got[j.Job.ID] = true
		}
	}
}

// ---- the rows

func (f *mxFixture) mutation(field string, samples ...sample) row {
	for i := range samples {
		if samples[i].ok == nil {
			samples[i].ok = []string{apierr.CodeConflict}
		}
	}
	return row{field: "Mutation." + field, samples: samples}
}

// byID makes the samples of a query by id: one entity of each kind of
// owner, and one that does not exist.
func byID(doc string, action auth.Action, arg string, entities map[string]auth.Resource, check func(id string) func(mxCaller, json.RawMessage) error) []sample {
	return byIDMissing(doc, action, arg, "nope", entities, check)
}

func byIDMissing(doc string, action auth.Action, arg, missing string, entities map[string]auth.Resource, check func(id string) func(mxCaller, json.RawMessage) error) []sample {
	var out []sample
	names := make([]string, 0, len(entities))
	for id := range entities {
		names = append(names, id)
	}
	sort.Strings(names)
	for _, id := range names {
		s := sample{name: id, doc: doc, vars: vars(arg, id), rule: rule{read: action, act: action, res: entities[id], hide: null}}
		if check != nil {
			s.check = check(id)
		}
		out = append(out, s)
	}
	return append(out, sample{name: "missing", doc: doc, vars: vars(arg, missing), rule: rule{read: action, act: action, hide: null, missing: true}})
}

// withoutMissing drops byID's sample of an id that names nothing.
func withoutMissing(samples []sample) []sample {
	return slices.DeleteFunc(samples, func(s sample) bool { return s.rule.missing })
}

// hasID checks that a query by id returned that entity.
func hasID(key string) func(id string) func(mxCaller, json.RawMessage) error {
	return func(id string) func(mxCaller, json.RawMessage) error {
		return func(_ mxCaller, v json.RawMessage) error {
			var m map[string]any
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			if str(m, key) != id {
				return fmt.Errorf("returned %s, want %s", v, id)
			}
			return nil
		}
	}
}

func pick(m map[string]auth.Resource, ids ...string) map[string]auth.Resource {
	out := map[string]auth.Resource{}
	for _, id := range ids {
		out[id] = m[id]
	}
	return out
}

// onEntity makes the samples of a mutation on existing entities: one of
// tenant A, one of tenant B (or whatever entities says), and a missing one.
func onEntity(doc string, read, act auth.Action, arg string, entities map[string]auth.Resource, extra func(mxCaller) map[string]any) []sample {
	var out []sample
	names := make([]string, 0, len(entities))
	for id := range entities {
		names = append(names, id)
	}
	sort.Strings(names)
	mk := func(id string) func(mxCaller) map[string]any {
		return func(c mxCaller) map[string]any {
			m := map[string]any{arg: id}
			if extra != nil {
				for k, v := range extra(c) {
					m[k] = v
				}
			}
			return m
		}
	}
	for _, id := range names {
		out = append(out, sample{name: id, doc: doc, vars: mk(id), rule: rule{read: read, act: act, res: entities[id], hide: notFound}})
	}
	return append(out, sample{name: "missing", doc: doc, vars: mk("nope"), rule: rule{read: read, act: act, res: auth.Resource{TenantID: "nope", NodeID: "nope"}, hide: notFound, missing: true}})
}

// mine is a mutation that creates something of the caller's own.
func mine(name, doc string, act auth.Action, res *auth.Resource, v func(c mxCaller) map[string]any) sample {
	r := rule{act: act, own: res == nil}
	if res != nil {
		r.res = *res
	}
	return sample{name: name, doc: doc, vars: v, rule: r}
}

func onNodes(f *mxFixture, doc string, act auth.Action, extra map[string]any, jobs map[string]string) []sample {
	var out []sample
	for _, n := range []struct{ name, id string }{{"own node", f.nodeX}, {"other node", f.nodeY}} {
		m := map[string]any{"n": n.id}
		for k, v := range extra {
			m[k] = v
		}
		if jobs != nil {
			m["j"] = jobs[n.id]
		}
		out = append(out, sample{name: n.name, doc: doc, vars: vars(flatten(m)...), rule: rule{act: act, res: auth.Resource{NodeID: n.id}}})
	}
	return out
}

func flatten(m map[string]any) []any {
	var out []any
	for k, v := range m {
		out = append(out, k, v)
	}
	return out
}

func (f *mxFixture) rows() []row {
	svcs := map[string]auth.Resource{}
	for id, tn := range f.svcTenant {
		svcs[id] = auth.Resource{TenantID: tn}
	}
	resOf := func(f *mxFixture, n map[string]any) (string, auth.Resource) {
		return str(n, "id"), auth.Resource{TenantID: f.svcTenant[str(n, "serviceId")]}
	}
	jobItem := func(_ *mxFixture, n map[string]any) (string, auth.Resource) {
		return str(n, "id"), auth.Resource{TenantID: str(n, "tenantId"), NodeID: str(n, "nodeId")}
	}
	nodeItem := func(_ *mxFixture, n map[string]any) (string, auth.Resource) {
		return str(n, "id"), auth.Resource{NodeID: str(n, "id")}
	}
	tenantItem := func(_ *mxFixture, n map[string]any) (string, auth.Resource) {
		return str(n, "id"), auth.Resource{TenantID: str(n, "id")}
	}
	eventItem := func(_ *mxFixture, n map[string]any) (string, auth.Resource) {
		md, _ := n["metadata"].(map[string]any)
		return str(n, "cursor"), auth.Resource{TenantID: str(md, "tenantId")}
	}
	tenants := map[string]auth.Resource{tenantA: {TenantID: tenantA}, tenantB: {TenantID: tenantB}, tenantS: {TenantID: tenantS}}
	events := map[string]auth.Resource{f.cursorA: {TenantID: tenantA}, f.cursorB: {TenantID: tenantB}, f.cursorN: {}}
	templates := map[string]auth.Resource{"kv-store@1.0.0": {}, "kv-store@2.0.0": {}}
	locations := map[string]auth.Resource{"loc-1": {}, "loc-s": {}}
	inB := func(r auth.Resource) bool { return r.TenantID == tenantB }
	onY := func(r auth.Resource) bool { return r.NodeID == f.nodeY }
	list := func(name, doc string, action auth.Action, item func(*mxFixture, map[string]any) (string, auth.Resource), seeded map[string]auth.Resource, match func(auth.Resource) bool) sample {
		return sample{name: name, doc: doc, rule: rule{act: action, own: true},
			list: &listCheck{action: action, item: item, seeded: seeded, match: match}}
	}
	svcAsOf := func(svcID string) func(c mxCaller) outcome {
		return func(c mxCaller) outcome {
			if c.tenantScoped() {
				// Tenants replay their own services, and no other entity.
				return rule{read: auth.ServiceRead, act: auth.ServiceRead, res: auth.Resource{TenantID: f.svcTenant[svcID]}, hide: notFound}.want(c)
			}
			return rule{act: auth.EventRead}.want(c)
		}
	}
	perCaller := func(key, prefix string) func(c mxCaller) map[string]any {
		return func(c mxCaller) map[string]any { return map[string]any{key: prefix + c.name} }
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	userRes := pick(f.users, "u-scratch-a", "u-scratch-b")
	grantMember := func(m map[string]auth.Resource) map[string]auth.Resource {
		out := map[string]auth.Resource{}
		for id, r := range m {
			r.Grants = tenant.RoleTenantMember
			out[id] = r
		}
		return out
	}
	agentJobs := map[string]string{f.nodeX: "job-mx", f.nodeY: "job-my"}
	vendorA := auth.Resource{Vendor: "u-vendor-a"}
	nodeW := map[string]auth.Resource{f.nodeW: {NodeID: f.nodeW}}
	sched := map[string]auth.Resource{"sch-s": {}}

	rows := []row{
		// Queries.
		{field: "Query.viewer", samples: []sample{{name: "viewer", doc: `{ viewer { id role tenantId nodeId permissions } }`,
			want: func(c mxCaller) outcome {
				if c.anonymous() {
					return unauthd
				}
				return allowed
			},
			check: func(c mxCaller, v json.RawMessage) error {
				var got struct {
					Role        string
					TenantID    *string
					NodeID      *string
					Permissions []string
				}
				if err := json.Unmarshal(v, &got); err != nil {
					return err
				}
				var want []string
				for _, a := range auth.Actions {
					if auth.Can(c.p, a, own(c.p)) == nil {
						want = append(want, string(a))
					}
				}
				if got.Role != strings.ToUpper(string(c.p.Role)) || mxDeref(got.TenantID) != c.p.TenantID || mxDeref(got.NodeID) != c.p.NodeID ||
					!slices.Equal(got.Permissions, want) {
					return fmt.Errorf("viewer %s, want role %s, tenant %q, node %q, permissions %v", v, c.p.Role, c.p.TenantID, c.p.NodeID, want)
				}
				return nil
			}}}},
		{field: "Query.tenant", samples: byID(`query($id: ID!) { tenant(id: $id) { id } }`, auth.TenantRead, "id", pick(tenants, tenantA, tenantB), hasID("id"))},
		{field: "Query.tenants", samples: []sample{
			list("all", `{ tenants(first: 500) { edges { node { id } } } }`, auth.TenantRead, tenantItem, tenants, nil)}},
		{field: "Query.user", samples: byID(`query($id: ID!) { user(id: $id) { id } }`, auth.UserRead, "id", pick(f.users, "u-tmember-a", "u-tmember-b", "u-operator"), hasID("id"))},
		{field: "Query.users", samples: []sample{
			list("all", `{ users(first: 500) { edges { node { id tenantId } } } }`, auth.UserRead, idTenant, f.users, nil),
			list("filter tenant B", `{ users(first: 500, filter: {tenantId: "tenant-b"}) { edges { node { id tenantId } } } }`, auth.UserRead, idTenant, f.users, inB)}},
		{field: "Query.apiTokens", samples: []sample{
			list("all", `{ apiTokens(first: 500, filter: {includeRevoked: true}) { edges { node { id tenantId } } } }`, auth.TokenRead, idTenant, f.tokens, nil),
			list("filter tenant B", `{ apiTokens(first: 500, filter: {tenantId: "tenant-b", includeRevoked: true}) { edges { node { id tenantId } } } }`, auth.TokenRead, idTenant, f.tokens, inB)}},
		{field: "Query.location", samples: byID(`query($id: ID!) { location(id: $id) { id } }`, auth.LocationRead, "id", pick(locations, "loc-1"), hasID("id"))},
		{field: "Query.locations", samples: []sample{
			list("all", `{ locations(first: 500) { edges { node { id } } } }`, auth.LocationRead, idOnly, locations, nil)}},
		{field: "Query.entityAsOf", samples: []sample{
			{name: "service of A", doc: `query($id: ID!, $c: Cursor) { entityAsOf(entity: {type: SERVICE, id: $id}, asOf: {cursor: $c}) { id version } }`,
				vars: vars("id", "svc-a", "c", f.start), want: svcAsOf("svc-a")},
			{name: "service of B", doc: `query($id: ID!, $c: Cursor) { entityAsOf(entity: {type: SERVICE, id: $id}, asOf: {cursor: $c}) { id version } }`,
				vars: vars("id", "svc-b", "c", f.start), want: svcAsOf("svc-b")},
			{name: "tenant A", doc: `query($c: Cursor) { entityAsOf(entity: {type: TENANT, id: "tenant-a"}, asOf: {cursor: $c}) { id version } }`,
				vars: vars("c", f.start), rule: rule{act: auth.EventRead}}}},
		{field: "Query.entityDiff", samples: []sample{
			{name: "service of A", doc: `query($id: ID!, $c: Cursor) { entityDiff(entity: {type: SERVICE, id: $id}, from: {cursor: "0"}, to: {cursor: $c}) { to { version } events { cursor } } }`,
				vars: vars("id", "svc-a", "c", f.start), want: svcAsOf("svc-a")},
			{name: "service of B", doc: `query($id: ID!, $c: Cursor) { entityDiff(entity: {type: SERVICE, id: $id}, from: {cursor: "0"}, to: {cursor: $c}) { to { version } events { cursor } } }`,
				vars: vars("id", "svc-b", "c", f.start), want: svcAsOf("svc-b")},
			{name: "user", doc: `query($c: Cursor) { entityDiff(entity: {type: USER, id: "u-tmember-a"}, from: {cursor: "0"}, to: {cursor: $c}) { to { version } } }`,
				vars: vars("c", f.start), rule: rule{act: auth.EventRead}}}},
		{field: "Query.verifyChain", samples: []sample{
			{name: "service of A", doc: `{ verifyChain(streamId: "service-svc-a") { ok } }`, rule: rule{act: auth.EventRead}},
			{name: "everything", doc: `{ verifyChain { ok } }`, rule: rule{act: auth.EventRead}}}},
		{field: "Query.events", samples: []sample{
			list("all", `{ events(first: 500) { edges { node { cursor metadata { tenantId } } } } }`, auth.EventRead, eventItem, events, nil),
			list("filter tenant B", `{ events(first: 500, filter: {tenantId: "tenant-b"}) { edges { node { cursor metadata { tenantId } } } } }`, auth.EventRead, eventItem, events, inB)}},
		{field: "Query.event", samples: byIDMissing(`query($id: Cursor!) { event(cursor: $id) { cursor } }`, auth.EventRead, "id", "1-999999999", events, hasID("cursor"))},
		{field: "Query.readModelsCursor", samples: []sample{{name: "readModelsCursor", doc: `{ readModelsCursor }`,
			want: func(c mxCaller) outcome {
				if c.anonymous() {
					return unauthd
				}
				return allowed
			},
			check: func(_ mxCaller, v json.RawMessage) error {
				var c string
				if err := json.Unmarshal(v, &c); err != nil {
					return err
				}
				if _, err := eventstore.ParseCursor(c); err != nil || c == "0" {
					return fmt.Errorf("readModelsCursor %s: want the read models' position (%v)", v, err)
				}
				return nil
			}}}},
		{field: "Query.head", samples: []sample{{name: "head", doc: `{ head }`, rule: rule{act: auth.EventRead, own: true}}}},
		{field: "Query.job", samples: byID(`query($id: ID!) { job(id: $id) { id } }`, auth.JobRead, "id", pick(f.jobs, "job-a", "job-b", "job-mx"), hasID("id"))},
		{field: "Query.jobs", samples: []sample{
			list("all", `{ jobs(first: 200) { edges { node { id tenantId nodeId } } } }`, auth.JobRead, jobItem, f.jobs, nil),
			list("filter tenant B", `{ jobs(first: 200, filter: {tenantId: "tenant-b"}) { edges { node { id tenantId nodeId } } } }`, auth.JobRead, jobItem, f.jobs, inB),
			withVars(list("filter node Y", `query($n: ID) { jobs(first: 200, filter: {nodeId: $n}) { edges { node { id tenantId nodeId } } } }`, auth.JobRead, jobItem, f.jobs, onY),
				vars("n", f.nodeY))}},
		{field: "Query.serverNode", samples: byID(`query($id: ID!) { serverNode(id: $id) { id } }`, auth.NodeRead, "id", pick(f.nodes, f.nodeX, f.nodeY), hasID("id"))},
		// node(id:) answers as the query of the object's kind does.
		// An id that names nothing is null to anyone signed in, whatever
		// kind they may read.
		{field: "Query.node", samples: append(withoutMissing(byID(`query($id: ID!) { node(id: $id) { id } }`, auth.NodeRead, "id", pick(f.nodes, f.nodeX, f.nodeY), hasID("id"))),
			withoutMissing(byID(`query($id: ID!) { node(id: $id) { id ... on Job { tenantId } } }`, auth.JobRead, "id", pick(f.jobs, "job-a", "job-b"), hasID("id")))...)},
		{field: "Query.nodes", samples: []sample{
			list("all", `{ nodes(first: 500) { edges { node { id } } } }`, auth.NodeRead, nodeItem, f.nodes, nil)}},
		{field: "Query.projections", samples: []sample{{name: "all", doc: `{ projections { name } }`, rule: rule{act: auth.ProjectionRead, own: true}}}},
		{field: "Query.cluster", samples: []sample{{name: "replicas", doc: `{ cluster { replicas { id owns } } }`, rule: rule{act: auth.ProjectionRead, own: true}}}},
		{field: "Query.resource", samples: byID(`query($id: ID!) { resource(id: $id) { id } }`, auth.ServiceRead, "id", f.someResources(), hasID("id"))},
		{field: "Query.resources", samples: []sample{
			list("all", `{ resources(first: 500) { edges { node { id serviceId } } } }`, auth.ServiceRead, resOf, f.resources, nil),
			list("filter tenant B", `{ resources(first: 500, filter: {tenantId: "tenant-b"}) { edges { node { id serviceId } } } }`, auth.ServiceRead, resOf, f.resources, inB),
			list("filter service of B", `{ resources(first: 500, filter: {serviceId: "svc-b"}) { edges { node { id serviceId } } } }`, auth.ServiceRead, resOf, f.resources, inB)}},
		{field: "Query.schedule", samples: byID(`query($id: ID!) { schedule(id: $id) { id } }`, auth.JobRead, "id", map[string]auth.Resource{"sch-1": {}}, hasID("id"))},
		{field: "Query.planServiceUpdate", samples: onEntity(`query($id: ID!) { planServiceUpdate(input: {serviceId: $id}) { noChange } }`,
			auth.ServiceRead, auth.ServiceRead, "id", pick(svcs, "svc-a", "svc-b"), nil)},
		{field: "Query.planBlueprint", samples: []sample{
			mine("for A", `query($d: String!) { planBlueprint(input: {document: $d}) { changed } }`, auth.ServiceCreate, &auth.Resource{TenantID: tenantA},
				func(mxCaller) map[string]any { return map[string]any{"d": emptyBlueprint(tenantA)} }),
		}},
		{field: "Query.service", samples: byID(`query($id: ID!) { service(id: $id) { id } }`, auth.ServiceRead, "id", pick(svcs, "svc-a", "svc-b"), hasID("id"))},
		{field: "Query.services", samples: []sample{
			list("all", `{ services(first: 500) { edges { node { id tenantId } } } }`, auth.ServiceRead, idTenant, svcs, nil),
			list("filter tenant B", `{ services(first: 500, filter: {tenantId: "tenant-b"}) { edges { node { id tenantId } } } }`, auth.ServiceRead, idTenant, svcs, inB)}},
		{field: "Query.template", samples: []sample{
			{name: "kv-store", doc: `{ template(name: "kv-store", version: "1.0.0") { id } }`, rule: rule{read: auth.TemplateRead, act: auth.TemplateRead, hide: null}, check: hasID("id")("kv-store@1.0.0")},
			{name: "missing", doc: `{ template(name: "nope", version: "1.0.0") { id } }`, rule: rule{read: auth.TemplateRead, act: auth.TemplateRead, hide: null, missing: true}}}},
		{field: "Query.templates", samples: []sample{
			list("all", `{ templates(first: 500) { edges { node { id } } } }`, auth.TemplateRead, idOnly, templates, nil)}},

		// Access.
		f.mutation("createTenant", mine("new", `mutation($id: ID) { createTenant(input: {id: $id, name: "m"}) { cursor } }`, auth.TenantCreate, &auth.Resource{}, perCaller("id", "m-"))),
		f.mutation("renameTenant", onEntity(`mutation($id: ID!, $n: String!) { renameTenant(input: {tenantId: $id, name: $n}) { cursor } }`, "", auth.TenantUpdate, "id",
			pick(tenants, tenantS), perCaller("n", "renamed by "))...),
		f.mutation("suspendTenant", onEntity(`mutation($id: ID!) { suspendTenant(input: {tenantId: $id}) { cursor } }`, "", auth.TenantUpdate, "id", pick(tenants, tenantS), nil)...),
		f.mutation("resumeTenant", onEntity(`mutation($id: ID!) { resumeTenant(input: {tenantId: $id}) { cursor } }`, "", auth.TenantUpdate, "id", pick(tenants, tenantS), nil)...),
		f.mutation("createUser",
			mine("member of A", `mutation($id: ID) { createUser(input: {id: $id, name: "m", role: TENANT_MEMBER, tenantId: "tenant-a"}) { cursor } }`, auth.UserCreate,
				&auth.Resource{TenantID: tenantA, Grants: tenant.RoleTenantMember}, perCaller("id", "m-a-")),
			mine("member of B", `mutation($id: ID) { createUser(input: {id: $id, name: "m", role: TENANT_MEMBER, tenantId: "tenant-b"}) { cursor } }`, auth.UserCreate,
				&auth.Resource{TenantID: tenantB, Grants: tenant.RoleTenantMember}, perCaller("id", "m-b-")),
			mine("admin", `mutation($id: ID) { createUser(input: {id: $id, name: "m", role: ADMIN}) { cursor } }`, auth.UserCreate,
				&auth.Resource{Grants: tenant.RoleAdmin}, perCaller("id", "m-adm-"))),
		f.mutation("disableUser", onEntity(`mutation($id: ID!) { disableUser(input: {userId: $id}) { cursor } }`, auth.UserRead, auth.UserUpdate, "id", userRes, nil)...),
		f.mutation("enableUser", onEntity(`mutation($id: ID!) { enableUser(input: {userId: $id}) { cursor } }`, auth.UserRead, auth.UserUpdate, "id", userRes, nil)...),
		f.mutation("createApiToken", onEntity(`mutation($id: ID) { createApiToken(input: {userId: $id}) { cursor } }`, auth.UserRead, auth.TokenIssue, "id", grantMember(userRes), nil)...),
		f.mutation("revokeApiToken", onEntity(`mutation($id: ID!) { revokeApiToken(input: {tokenId: $id}) { cursor } }`, auth.TokenRead, auth.TokenRevoke, "id",
			pick(f.tokens, f.scratchTokA, f.scratchTokB), nil)...),
		f.mutation("createLocation", mine("new", `mutation($id: ID) { createLocation(input: {id: $id, name: "m"}) { cursor } }`, auth.LocationCreate, &auth.Resource{}, perCaller("id", "m-"))),
		f.mutation("updateLocation", onEntity(`mutation($id: ID!) { updateLocation(input: {locationId: $id, name: "renamed"}) { cursor } }`, "", auth.LocationUpdate, "id", pick(locations, "loc-s"), nil)...),
		f.mutation("setLocationReserve", onEntity(`mutation($id: ID!) { setLocationReserve(input: {locationId: $id, reserve: {cpu: 0.5}}) { cursor } }`, "", auth.LocationUpdate, "id", pick(locations, "loc-s"), nil)...),
		f.mutation("retireLocation", onEntity(`mutation($id: ID!) { retireLocation(input: {locationId: $id}) { cursor } }`, "", auth.LocationUpdate, "id", pick(locations, "loc-s"), nil)...),

		// Agents.
		f.mutation("enrollAgent", sample{name: "join token", doc: `mutation($t: String!, $h: String!) { enrollAgent(input: {joinToken: $t, hostname: $h}) { cursor } }`,
			vars: func(c mxCaller) map[string]any {
				return map[string]any{"t": f.joinTokens[c.name], "h": "host-" + c.name}
			}, rule: rule{public: true}}),
		f.mutation("acknowledgeJob", onNodes(f, `mutation($n: ID!, $j: ID!) { acknowledgeJob(input: {nodeId: $n, jobId: $j}) { cursor } }`, auth.JobAcknowledge, nil, agentJobs)...),
		f.mutation("startJob", onNodes(f, `mutation($n: ID!, $j: ID!) { startJob(input: {nodeId: $n, jobId: $j}) { cursor } }`, auth.JobStart, nil, agentJobs)...),
		f.mutation("appendJobLog", onNodes(f, `mutation($n: ID!, $j: ID!, $t: Time!) { appendJobLog(input: {nodeId: $n, jobId: $j, chunks: [{seq: 1, stream: STDOUT, data: "x", time: $t}]}) { accepted } }`,
			auth.JobLog, map[string]any{"t": now}, agentJobs)...),
		f.mutation("finishJob", onNodes(f, `mutation($n: ID!, $j: ID!) { finishJob(input: {nodeId: $n, jobId: $j, result: {outcome: SUCCEEDED, exitCode: 0, cpuTimeMs: 1, peakMemoryBytes: 1}}) { cursor } }`,
			auth.JobFinish, nil, agentJobs)...),
		f.mutation("heartbeat", onNodes(f, `mutation($n: ID!) { heartbeat(input: {nodeId: $n}) { intervalSeconds } }`, auth.NodeHeartbeat, nil, nil)...),
		f.mutation("reportFacts", onNodes(f, `mutation($n: ID!) { reportFacts(input: {nodeId: $n, facts: {cpu: {model: "m", cores: 1, threads: 1}, memoryBytes: 1, disks: [], network: [],
			os: {name: "linux", version: "1", kernel: "6", arch: "amd64"}}}) { cursor } }`, auth.NodeReportFacts, nil, nil)...),
		f.mutation("reportStats", onNodes(f, `mutation($n: ID!, $t: Time!) { reportStats(input: {nodeId: $n, samples: [{time: $t, cpuPercent: 1, memoryUsedBytes: 1, memoryAvailableBytes: 1,
			swapUsedBytes: 0, load1: 0, load5: 0, load15: 0}]}) { accepted } }`, auth.NodeReportFacts, map[string]any{"t": now}, nil)...),
		f.mutation("pollAgentJobs", onNodes(f, `mutation($n: ID!) { pollAgentJobs(input: {nodeId: $n, waitSeconds: 0}) { cursor } }`, auth.JobLease, nil, nil)...),

		// Jobs and nodes.
		f.mutation("submitJob", mine("on node Z", `mutation($n: ID) { submitJob(input: {spec: {kind: EXEC, exec: {argv: ["true"]}}, target: {nodeId: $n}}) { cursor } }`,
			auth.JobSubmit, nil, vars("n", f.nodeZ))),
		f.mutation("cancelJob", onEntity(`mutation($id: ID!) { cancelJob(input: {jobId: $id}) { cursor } }`, auth.JobRead, auth.JobCancel, "id", pick(f.jobs, "job-ka", "job-kb"), nil)...),
		f.mutation("setNodeLabels", onEntity(`mutation($id: ID!) { setNodeLabels(input: {nodeId: $id, labels: [{key: "k", value: "v"}]}) { cursor } }`, "", auth.NodeUpdate, "id", nodeW, nil)...),
		f.mutation("setNodeLocation", onEntity(`mutation($id: ID!) { setNodeLocation(input: {nodeId: $id, locationId: "loc-1"}) { cursor } }`, "", auth.NodeUpdate, "id", nodeW, nil)...),
		f.mutation("setNodeReserve", onEntity(`mutation($id: ID!) { setNodeReserve(input: {nodeId: $id, reserve: {memoryBytes: 1024}}) { cursor } }`, "", auth.NodeUpdate, "id", nodeW, nil)...),
		f.mutation("drainNode", onEntity(`mutation($id: ID!) { drainNode(input: {nodeId: $id}) { cursor } }`, "", auth.NodeDrain, "id", nodeW, nil)...),
		f.mutation("undrainNode", onEntity(`mutation($id: ID!) { undrainNode(input: {nodeId: $id}) { cursor } }`, "", auth.NodeDrain, "id", nodeW, nil)...),
		f.mutation("decommissionNode", onEntity(`mutation($id: ID!) { decommissionNode(input: {nodeId: $id}) { cursor } }`, "", auth.NodeDecommission, "id", nodeW, nil)...),
		f.mutation("createJoinToken", mine("new", `mutation { createJoinToken(input: {ttlSeconds: 60}) { cursor } }`, auth.NodeJoinToken, &auth.Resource{}, nil)),
		f.mutation("rebuildProjection", mine("event_volume", `mutation { rebuildProjection(input: {name: "event_volume"}) { projection { name } } }`, auth.ProjectionRebuild, &auth.Resource{}, nil)),
		f.mutation("createSchedule", mine("new", `mutation($id: ID!, $n: ID) { createSchedule(input: {scheduleId: $id, everySeconds: 86400,
			job: {spec: {kind: EXEC, exec: {argv: ["true"]}}, target: {nodeId: $n}}}) { cursor } }`, auth.JobSubmit, nil,
			func(c mxCaller) map[string]any { return map[string]any{"id": "m-" + c.name, "n": f.nodeZ} })),
		f.mutation("pauseSchedule", onEntity(`mutation($id: ID!) { pauseSchedule(input: {scheduleId: $id}) { cursor } }`, "", auth.JobSubmit, "id", sched, nil)...),
		f.mutation("resumeSchedule", onEntity(`mutation($id: ID!) { resumeSchedule(input: {scheduleId: $id}) { cursor } }`, "", auth.JobSubmit, "id", sched, nil)...),
		f.mutation("deleteSchedule", onEntity(`mutation($id: ID!) { deleteSchedule(input: {scheduleId: $id}) { cursor } }`, "", auth.JobSubmit, "id", sched, nil)...),

		// Services and the catalog.
		f.mutation("createService",
			mine("for A", `mutation($n: String!) { createService(input: {tenantId: "tenant-a", name: $n, templateName: "kv-store", templateVersion: "1.0.0", variables: {password: "pw"}}) { cursor } }`,
				auth.ServiceCreate, &auth.Resource{TenantID: tenantA}, perCaller("n", "m-a-")),
			mine("for B", `mutation($n: String!) { createService(input: {tenantId: "tenant-b", name: $n, templateName: "kv-store", templateVersion: "1.0.0", variables: {password: "pw"}}) { cursor } }`,
				auth.ServiceCreate, &auth.Resource{TenantID: tenantB}, perCaller("n", "m-b-"))),
		f.mutation("retryService", onEntity(`mutation($id: ID!) { retryService(input: {serviceId: $id}) { cursor } }`, auth.ServiceRead, auth.ServiceCreate, "id", pick(svcs, "svc-am", "svc-bm"), nil)...),
		f.mutation("updateService", onEntity(`mutation($id: ID!) { updateService(input: {serviceId: $id}) { cursor } }`, auth.ServiceRead, auth.ServiceCreate, "id", pick(svcs, "svc-am", "svc-bm"), nil)...),
		f.mutation("applyBlueprint",
			mine("for A", `mutation($d: String!) { applyBlueprint(input: {document: $d}) { changed } }`, auth.ServiceCreate, &auth.Resource{TenantID: tenantA},
				func(mxCaller) map[string]any { return map[string]any{"d": emptyBlueprint(tenantA)} }),
			mine("for B", `mutation($d: String!) { applyBlueprint(input: {document: $d}) { changed } }`, auth.ServiceCreate, &auth.Resource{TenantID: tenantB},
				func(mxCaller) map[string]any { return map[string]any{"d": emptyBlueprint(tenantB)} })),
		f.mutation("startService", onEntity(`mutation($id: ID!) { startService(input: {serviceId: $id}) { cursor } }`, auth.ServiceRead, auth.ServiceStart, "id", pick(svcs, "svc-am", "svc-bm"), nil)...),
		f.mutation("stopService", onEntity(`mutation($id: ID!) { stopService(input: {serviceId: $id}) { cursor } }`, auth.ServiceRead, auth.ServiceStop, "id", pick(svcs, "svc-am", "svc-bm"), nil)...),
		f.mutation("removeService", onEntity(`mutation($id: ID!) { removeService(input: {serviceId: $id}) { cursor } }`, auth.ServiceRead, auth.ServiceRemove, "id", pick(svcs, "svc-am", "svc-bm"), nil)...),
		f.mutation("markServiceCleanedUp", onEntity(`mutation($id: ID!) { markServiceCleanedUp(input: {serviceId: $id}) { cursor } }`, auth.ServiceRead, auth.ServiceCleanup, "id", pick(svcs, "svc-am", "svc-bm"), nil)...),
		f.mutation("registerTemplate", mine("own", `mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { cursor } }`, auth.TemplateRegister, nil,
			func(c mxCaller) map[string]any {
				return map[string]any{"d": strings.Replace(commandstest.Descriptor, "name: kv-store", "name: m-"+c.name, 1)}
			})),
		f.mutation("publishTemplate", onEntity(`mutation($id: String!) { publishTemplate(input: {name: $id, version: "2.0.0"}) { cursor } }`, auth.TemplateRead, auth.TemplatePublish, "id",
			map[string]auth.Resource{"kv-store": vendorA}, nil)...),
		f.mutation("deprecateTemplate", onEntity(`mutation($id: String!) { deprecateTemplate(input: {name: $id, version: "2.0.0"}) { cursor } }`, auth.TemplateRead, auth.TemplateDeprecate, "id",
			map[string]auth.Resource{"kv-store": vendorA}, nil)...),
	}
	return append(rows, f.subscriptionRows()...)
}

// someResources is one resource of each of services svc-a and svc-b.
func (f *mxFixture) someResources() map[string]auth.Resource {
	out := map[string]auth.Resource{}
	for _, tn := range []string{tenantA, tenantB} {
		ids := make([]string, 0, len(f.resources))
		for id, r := range f.resources {
			if r.TenantID == tn {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		if len(ids) > 0 {
			out[ids[0]] = f.resources[ids[0]]
		}
	}
	return out
}

func (f *mxFixture) subscriptionRows() []row {
	change := func(entity string, v json.RawMessage, key string) (string, auth.Resource, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			return "", auth.Resource{}, err
		}
		var ev struct{ Cursor string }
		var ent map[string]any
		if err := json.Unmarshal(m["event"], &ev); err != nil {
			return "", auth.Resource{}, err
		}
		_ = json.Unmarshal(m[entity], &ent)
		switch key {
		case "service":
			return ev.Cursor, auth.Resource{TenantID: str(ent, "tenantId")}, nil
		case "job":
			return ev.Cursor, auth.Resource{TenantID: str(ent, "tenantId"), NodeID: str(ent, "nodeId")}, nil
		}
		return ev.Cursor, auth.Resource{NodeID: str(ent, "id")}, nil
	}
	stream := func(field, doc string, action auth.Action, kind string) row {
		item := func(v json.RawMessage) (string, auth.Resource, error) {
			if kind == "" {
				var ev struct {
					Cursor   string
					Metadata struct{ TenantID string }
				}
				err := json.Unmarshal(v, &ev)
				return ev.Cursor, auth.Resource{TenantID: ev.Metadata.TenantID}, err
			}
			return change(kind, v, kind)
		}
		return row{field: "Subscription." + field, samples: []sample{{name: "after the start", doc: doc, vars: vars("after", f.start),
			rule: rule{act: action, own: true}, stream: &streamCheck{action: action, kind: kind, item: item}}}}
	}
	jobLog := `subscription($id: ID!) { jobLog(jobId: $id) { jobId seq data } }`
	chunk := func(id string) func(mxCaller, json.RawMessage) error {
		return func(_ mxCaller, v json.RawMessage) error {
			var c struct {
				JobID string
				Seq   int
			}
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			if c.JobID != id || c.Seq != 1 {
				return fmt.Errorf("chunk %s, want seq 1 of %s", v, id)
			}
			return nil
		}
	}
	leased := func(nodeID string) func(mxCaller, json.RawMessage) error {
		return func(_ mxCaller, v json.RawMessage) error {
			var it struct{ Job struct{ ID string } }
			if err := json.Unmarshal(v, &it); err != nil {
				return err
			}
			if f.jobs[it.Job.ID].NodeID != nodeID {
				return fmt.Errorf("item %s is not a job leased to node %s", v, nodeID)
			}
			return nil
		}
	}
	agentJobs := `subscription($n: ID!) { agentJobs(nodeId: $n) { cursor job { id } } }`
	return []row{
		stream("events", `subscription($after: Cursor) { events(after: $after) { cursor metadata { tenantId } } }`, auth.EventRead, ""),
		stream("serviceChanged", `subscription($after: Cursor) { serviceChanged(after: $after) { event { cursor } service { id tenantId } } }`, auth.ServiceRead, "service"),
		stream("jobChanged", `subscription($after: Cursor) { jobChanged(after: $after) { event { cursor } job { id tenantId nodeId } } }`, auth.JobRead, "job"),
		stream("nodeChanged", `subscription($after: Cursor) { nodeChanged(after: $after) { event { cursor } node { id } } }`, auth.NodeRead, "node"),
		{field: "Subscription.jobLog", samples: []sample{
			{name: "job of A", doc: jobLog, vars: vars("id", "job-a"), rule: rule{read: auth.JobRead, act: auth.JobRead, res: f.jobs["job-a"], hide: notFound}, check: chunk("job-a")},
			{name: "job of B", doc: jobLog, vars: vars("id", "job-b"), rule: rule{read: auth.JobRead, act: auth.JobRead, res: f.jobs["job-b"], hide: notFound}, check: chunk("job-b")},
			{name: "missing", doc: jobLog, vars: vars("id", "nope"), rule: rule{read: auth.JobRead, act: auth.JobRead, hide: notFound, missing: true}}}},
		{field: "Subscription.agentJobs", samples: []sample{
			{name: "own node", doc: agentJobs, vars: vars("n", f.nodeX), rule: rule{act: auth.JobLease, res: auth.Resource{NodeID: f.nodeX}}, check: leased(f.nodeX)},
			{name: "other node", doc: agentJobs, vars: vars("n", f.nodeY), rule: rule{act: auth.JobLease, res: auth.Resource{NodeID: f.nodeY}}, check: leased(f.nodeY)}}},
	}
}

// ---- the tests

// schemaFields lists every field of the schema's root types, as Type.field.
func schemaFields() []string {
	s := generated.NewExecutableSchema(generated.Config{}).Schema()
	var out []string
	for _, def := range []*ast.Definition{s.Query, s.Mutation, s.Subscription} {
		if def == nil {
			continue
		}
		for _, fd := range def.Fields {
			if strings.HasPrefix(fd.Name, "__") {
				continue
			}
			out = append(out, def.Name+"."+fd.Name)
		}
	}
	return out
}

// Every field of the schema has a row in the matrix, and every row a field:
// a field added without saying who may use it fails here.
func TestAuthzMatrixCoversSchema(t *testing.T) {
	t.Parallel()
	f := &mxFixture{jobs: map[string]auth.Resource{}, svcTenant: map[string]string{}, users: map[string]auth.Resource{},
		tokens: map[string]auth.Resource{}, resources: map[string]auth.Resource{}, nodes: map[string]auth.Resource{}}
	rows := map[string]bool{}
	for _, r := range f.rows() {
		if rows[r.field] {
			t.Errorf("%s has two rows", r.field)
		}
		if len(r.samples) == 0 {
			t.Errorf("%s has no sample", r.field)
		}
		rows[r.field] = true
	}
	fields := schemaFields()
	for _, fd := range fields {
		if !rows[fd] {
			t.Errorf("%s has no row in the authorization matrix (graph/authz_matrix_test.go): say who may use it", fd)
		}
		delete(rows, fd)
	}
	for fd := range rows {
		t.Errorf("the matrix has a row for %s, which the schema does not have", fd)
	}
	if len(fields) < 70 {
		t.Fatalf("only %d fields found in the schema", len(fields))
	}
}

// Every field × every role × two tenants, against the policy.
func TestAuthzMatrix(t *testing.T) {
	t.Parallel()
	f := newMatrix(t)
	rows := f.rows()
	var subs, others []row
	for _, r := range rows {
		if strings.HasPrefix(r.field, "Subscription.") {
			subs = append(subs, r)
		} else {
			others = append(others, r)
		}
	}
	var cells atomic.Int64
	// Subscriptions first, while nothing else writes: changes on tenant B
	// (node Y), then A (node X), then B (Y) again, read by every caller
	// from a cursor before them.
	f.emit(t)
	t.Run("subscriptions", func(t *testing.T) {
		for _, r := range subs {
			t.Run(r.field, func(t *testing.T) {
				t.Parallel()
				f.runRow(t, r, f.subscribe, &cells)
			})
		}
	})
	t.Run("fields", func(t *testing.T) {
		for _, r := range others {
			t.Run(r.field, func(t *testing.T) {
				t.Parallel()
				f.runRow(t, r, f.call, &cells)
			})
		}
	})
	// Then the relations, on whatever the fields left behind.
	t.Run("relations", func(t *testing.T) {
		for _, rel := range f.relations() {
			t.Run(rel.field, func(t *testing.T) {
				t.Parallel()
				f.runRelation(t, rel, &cells)
			})
		}
	})
	t.Logf("%d fields × %d callers: %d cells checked", len(rows), len(f.callers), cells.Load())
}

// runRow runs each sample of a row for every caller at once.
func (f *mxFixture) runRow(t *testing.T, r row, run func(*testing.T, row, sample, mxCaller) string, cells *atomic.Int64) {
	var lines []string
	for _, s := range r.samples {
		got := make([]string, len(f.callers))
		var wg sync.WaitGroup
		for i, c := range f.callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = run(t, r, s, c)
				cells.Add(1)
			}()
		}
		wg.Wait()
		lines = append(lines, fmt.Sprintf("%-20s %s", s.name, strings.Join(got, " ")))
	}
	if t.Failed() || testing.Verbose() {
		names := make([]string, len(f.callers))
		for i, c := range f.callers {
			names[i] = c.name
		}
		t.Logf("%s — %s\n%s", r.field, strings.Join(names, " "), strings.Join(lines, "\n"))
	}
}

// short is an outcome as one cell of the printed matrix.
func short(o outcome) string {
	switch o {
	case allowed:
		return "ok"
	case null:
		return "null"
	}
	return string(o)
}

func fieldName(r row) string {
	_, name, _ := strings.Cut(r.field, ".")
	return name
}

// call runs a query or mutation as c and checks the answer.
func (f *mxFixture) call(t *testing.T, r row, s sample, c mxCaller) string {
	want := s.expect(c)
	var vs map[string]any
	if s.vars != nil {
		vs = s.vars(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	resp, err := client.New(f.url, c.token, nil).Raw(ctx, client.Request{Query: s.doc, Variables: vs})
	if err != nil {
		t.Errorf("%s [%s] as %s: %v", r.field, s.name, c.name, err)
		return "ERR"
	}
	var data map[string]json.RawMessage
	if len(resp.Data) > 0 {
		_ = json.Unmarshal(resp.Data, &data)
	}
	v := data[fieldName(r)]
	isNull := len(v) == 0 || string(v) == "null"
	fail := func(format string, args ...any) string {
		t.Errorf("%s [%s] as %s (want %s): %s", r.field, s.name, c.name, want, fmt.Sprintf(format, args...))
		return "FAIL"
	}
	code := resp.Errors.Code()
	switch {
	case want == allowed:
		if len(resp.Errors) > 0 {
			if slices.Contains(s.ok, code) {
				return "ok(" + code + ")"
			}
			return fail("refused: %v", resp.Errors)
		}
		if isNull {
			return fail("no value: %s", resp.Data)
		}
		if s.list != nil {
			if err := s.list.verify(f, c, v); err != nil {
				return fail("%v", err)
			}
		}
		if s.check != nil {
			if err := s.check(c, v); err != nil {
				return fail("%v", err)
			}
		}
	case want == null:
		if len(resp.Errors) > 0 || !isNull {
			return fail("got %s %v, want null without an error", v, resp.Errors)
		}
	default:
		if code != string(want) {
			return fail("got %s %v", v, resp.Errors)
		}
		if !isNull {
			return fail("refused with %s but answered %s", code, v)
		}
	}
	return short(want)
}

// subscribe runs a subscription as c and checks what arrives.
func (f *mxFixture) subscribe(t *testing.T, r row, s sample, c mxCaller) string {
	want := s.expect(c)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	fail := func(format string, args ...any) string {
		t.Errorf("%s [%s] as %s (want %s): %s", r.field, s.name, c.name, want, fmt.Sprintf(format, args...))
		return "FAIL"
	}
	// Without a token only SSE can say why (a WebSocket connection is
	// refused at its start); the others use graphql-transport-ws, as agents do.
	proto := client.TransportWS
	if c.anonymous() {
		proto = client.SSE
	}
	sub, err := client.New(f.url, c.token, nil).Subscribe(ctx, proto, client.Request{Query: s.doc, Variables: s.vars(c)})
	if err != nil {
		var errs client.Errors
		if errors.As(err, &errs) && want != allowed && errs.Code() == string(want) {
			return short(want)
		}
		return fail("subscribe: %v", err)
	}
	defer sub.Close()
	next := func() (json.RawMessage, error) {
		resp, err := sub.Next(ctx)
		if err != nil {
			return nil, err
		}
		if len(resp.Errors) > 0 {
			return nil, resp.Errors
		}
		var data map[string]json.RawMessage
		if err := json.Unmarshal(resp.Data, &data); err != nil {
			return nil, err
		}
		return data[fieldName(r)], nil
	}
	if want != allowed {
		v, err := next()
		if code := client.CodeOf(err); code != string(want) {
			return fail("got %s %v", v, err)
		}
		return short(want)
	}
	if s.stream == nil {
		v, err := next()
		if err != nil {
			return fail("%v", err)
		}
		if err := s.check(c, v); err != nil {
			return fail("%v", err)
		}
		return short(want)
	}
	// A change stream: every change made since the start that c may see
	// arrives, in order, and every item is one c may see; so the changes
	// it may not see, made before the last it may, never arrive.
	st := s.stream
	byCursor := map[string]emission{}
	var pending []string
	for _, e := range f.emitted {
		if st.kind != "" && e.kind != st.kind {
			continue
		}
		byCursor[e.cursor] = e
		res := e.entity
		if st.kind == "" {
			res = auth.Resource{TenantID: e.tenant}
		}
		if auth.Can(c.p, st.action, res) == nil {
			pending = append(pending, e.cursor)
		}
	}
	if len(pending) == 0 {
		return fail("none of the changes made is visible to the caller: the sample proves nothing")
	}
	for n := 0; len(pending) > 0; n++ {
		v, err := next()
		if err != nil {
			return fail("after %d items, still waiting for %v: %v", n, pending, err)
		}
		cursor, res, err := st.item(v)
		if err != nil {
			return fail("item %s: %v", v, err)
		}
		if e, ok := byCursor[cursor]; ok {
			if cursor != pending[0] {
				w := byCursor[pending[0]]
				return fail("received %s change %s (%+v), want %s change %s next", e.kind, e.id, e.entity, w.kind, w.id)
			}
			pending = pending[1:]
		}
		if err := auth.Can(c.p, st.action, res); err != nil {
			return fail("received %s, which it may not see: %v", v, err)
		}
	}
	return short(want)
}

// emit makes the changes the change subscriptions follow, through the API
// as their owners and operators would: for tenant B and node Y, then tenant
// A and node X, then B and Y again.
func (f *mxFixture) emit(t *testing.T) {
	t.Helper()
	ctx := mxCtx(t, 60*time.Second)
	do := func(c mxCaller, q string, vs map[string]any) string {
		var out map[string]struct{ Cursor string }
		if err := client.New(f.url, c.token, nil).Do(ctx, q, vs, &out); err != nil {
			t.Fatalf("emit as %s: %s: %v", c.name, q, err)
		}
		for _, p := range out {
			return p.Cursor
		}
		t.Fatalf("emit: %s answered nothing", q)
		return ""
	}
	rounds := []struct {
		member, tenant, job, node, svc string
	}{
		{"tmember-b", tenantB, "job-cb1", f.nodeY, "emit-b1"},
		{"tmember-a", tenantA, "job-ca", f.nodeX, "emit-a"},
		{"tmember-b", tenantB, "job-cb2", f.nodeY, "emit-b2"},
	}
	op := f.by["operator"]
	for i, r := range rounds {
		cur := do(f.by[r.member], `mutation($n: String!) { createService(input: {name: $n, templateName: "kv-store", templateVersion: "1.0.0", variables: {password: "pw"}}) { cursor } }`,
			map[string]any{"n": r.svc})
		f.emitted = append(f.emitted, emission{kind: "service", id: r.svc, cursor: cur, entity: auth.Resource{TenantID: r.tenant}, tenant: r.tenant})
		cur = do(op, `mutation($id: ID!) { cancelJob(input: {jobId: $id, reason: "emit"}) { cursor } }`, map[string]any{"id": r.job})
		// The operator acts in no tenant; its event is tagged with the job's.
		f.emitted = append(f.emitted, emission{kind: "job", id: r.job, cursor: cur, entity: f.jobs[r.job], tenant: f.jobs[r.job].TenantID})
		cur = do(op, `mutation($id: ID!, $v: String!) { setNodeLabels(input: {nodeId: $id, labels: [{key: "round", value: $v}]}) { cursor } }`,
			map[string]any{"id": r.node, "v": fmt.Sprint(i)})
		f.emitted = append(f.emitted, emission{kind: "node", id: r.node, cursor: cur, entity: auth.Resource{NodeID: r.node}})
	}
}

// emptyBlueprint declares no service for a tenant: applying it changes
// nothing, so the matrix asks only who may.
func emptyBlueprint(tenant string) string {
	return "apiVersion: cairn/v1\nkind: Blueprint\nmetadata: {name: mx}\ntenant: " + tenant + "\nservices: []\n"
}
