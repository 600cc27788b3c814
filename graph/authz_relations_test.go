package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2/ast"

	"cairn/auth"
	"cairn/graph/apierr"
	"cairn/graph/client"
	"cairn/graph/generated"
)

// Relations (Node.location, Job.node, Service.tenant, ...) against the
// policy: every caller asks for a relation on every entity a root field
// shows it, and gets the related entity exactly when auth.Can lets it read
// that entity, and null otherwise (never an error, which would tell it the
// entity exists). A relation of the schema without an entry here fails
// TestAuthzMatrixCoversRelations.

// relation is one relation field and a document that asks for it.
type relation struct {
	field string // Type.field
	// doc selects, on the objects carrying the relation, the id it follows
	// (or, for Service.template, the name and version) and the related
	// object's id.
	doc    string
	relKey string
	// idKey is the field holding the id the relation follows; only objects
	// carrying it are checked.
	idKey string
	// idOf is the id the related object must have, "" when the object has
	// none (the relation is then null); nil: the value of idKey.
	idOf   func(item map[string]any) string
	action auth.Action
	// target is the related entity as the policy sees it.
	target func(f *mxFixture, id string, item map[string]any) auth.Resource
}

func noScope(*mxFixture, string, map[string]any) auth.Resource { return auth.Resource{} }

func tenantScope(_ *mxFixture, id string, _ map[string]any) auth.Resource {
	return auth.Resource{TenantID: id}
}

func nodeScope(_ *mxFixture, id string, _ map[string]any) auth.Resource {
	return auth.Resource{NodeID: id}
}

func (f *mxFixture) relations() []relation {
	jobs := func(sel string) string { return `{ jobs(first: 500) { edges { node { id ` + sel + ` } } } }` }
	return []relation{
		{field: "ServerNode.location", doc: `{ nodes(first: 500) { edges { node { id locationId location { id } } } } }`,
			relKey: "location", idKey: "locationId", action: auth.LocationRead, target: noScope},
		{field: "JoinToken.location", doc: `mutation { createJoinToken(input: {locationId: "loc-1", ttlSeconds: 60}) { joinToken { id locationId location { id } } } }`,
			relKey: "location", idKey: "locationId", action: auth.LocationRead, target: noScope},
		{field: "Job.node", doc: jobs(`nodeId node { id }`), relKey: "node", idKey: "nodeId", action: auth.NodeRead, target: nodeScope},
		{field: "JobTarget.node", doc: jobs(`target { nodeId node { id } }`), relKey: "node", idKey: "nodeId", action: auth.NodeRead, target: nodeScope},
		{field: "Job.tenant", doc: jobs(`tenantId tenant { id }`), relKey: "tenant", idKey: "tenantId", action: auth.TenantRead, target: tenantScope},
		{field: "Job.parent", doc: jobs(`parentId parent { id }`), relKey: "parent", idKey: "parentId", action: auth.JobRead,
			target: func(f *mxFixture, id string, _ map[string]any) auth.Resource { return f.jobs[id] }},
		{field: "Service.tenant", doc: `{ services(first: 500) { edges { node { id tenantId tenant { id } } } } }`,
			relKey: "tenant", idKey: "tenantId", action: auth.TenantRead, target: tenantScope},
		{field: "Service.template", doc: `{ services(first: 500) { edges { node { id templateName templateVersion template { id } } } } }`,
			relKey: "template", idKey: "templateName", action: auth.TemplateRead, target: noScope,
			idOf: func(m map[string]any) string { return str(m, "templateName") + "@" + str(m, "templateVersion") }},
		{field: "Resource.service", doc: `{ resources(first: 500) { edges { node { id serviceId service { id } } } } }`,
			relKey: "service", idKey: "serviceId", action: auth.ServiceRead,
			target: func(f *mxFixture, id string, _ map[string]any) auth.Resource {
				return auth.Resource{TenantID: f.svcTenant[id]}
			}},
		{field: "User.tenant", doc: `{ users(first: 500) { edges { node { id tenantId tenant { id } } } } }`,
			relKey: "tenant", idKey: "tenantId", action: auth.TenantRead, target: tenantScope},
		{field: "ApiToken.user", doc: `{ apiTokens(first: 500, filter: {includeRevoked: true}) { edges { node { id tenantId userId user { id } } } } }`,
			relKey: "user", idKey: "userId", action: auth.UserRead,
			target: func(f *mxFixture, id string, item map[string]any) auth.Resource {
				if r, ok := f.users[id]; ok {
					return r
				}
				return auth.Resource{TenantID: str(item, "tenantId")} // a token acts in its user's tenant
			}},
		{field: "ApiToken.tenant", doc: `{ apiTokens(first: 500, filter: {includeRevoked: true}) { edges { node { id tenantId tenant { id } } } } }`,
			relKey: "tenant", idKey: "tenantId", action: auth.TenantRead, target: tenantScope},
	}
}

// relationItems collects the objects of v that carry the relation: those
// with relKey beside idKey.
func relationItems(v any, rel relation, out *[]map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		_, hasRel := x[rel.relKey]
		_, hasID := x[rel.idKey]
		if hasRel && hasID {
			*out = append(*out, x)
		}
		for _, c := range x {
			relationItems(c, rel, out)
		}
	case []any:
		for _, c := range x {
			relationItems(c, rel, out)
		}
	}
}

// runRelation asks every caller for the relation; each object it is shown
// must carry the related entity exactly when the caller may read it.
func (f *mxFixture) runRelation(t *testing.T, rel relation, cells *atomic.Int64) {
	var shown, hidden atomic.Int64
	lines := make([]string, len(f.callers))
	var wg sync.WaitGroup
	for i, c := range f.callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cells.Add(1)
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			resp, err := client.New(f.url, c.token, nil).Raw(ctx, client.Request{Query: rel.doc})
			if err != nil {
				t.Errorf("%s as %s: %v", rel.field, c.name, err)
				lines[i] = "ERR"
				return
			}
			var data any
			if len(resp.Data) > 0 {
				_ = json.Unmarshal(resp.Data, &data)
			}
			var items []map[string]any
			relationItems(data, rel, &items)
			if len(resp.Errors) > 0 {
				// The root field refused the caller (its own row checks
				// that): nothing may have been answered.
				code := resp.Errors.Code()
				if (code != apierr.CodeForbidden && code != apierr.CodeUnauthenticated) || len(items) > 0 {
					t.Errorf("%s as %s: %v with %d objects", rel.field, c.name, resp.Errors, len(items))
					lines[i] = "FAIL"
					return
				}
				lines[i] = short(outcome(code))
				return
			}
			var s, h int
			for _, it := range items {
				id := str(it, rel.idKey)
				if rel.idOf != nil {
					id = rel.idOf(it)
				}
				related, _ := it[rel.relKey].(map[string]any)
				may := id != "" && auth.Can(c.p, rel.action, rel.target(f, id, it)) == nil
				switch {
				case may && (related == nil || str(related, "id") != id):
					t.Errorf("%s as %s: %s: got %v, want %s, which it may read", rel.field, c.name, str(it, "id"), it[rel.relKey], id)
				case !may && related != nil:
					t.Errorf("%s as %s: %s: got %v, which it may not read", rel.field, c.name, str(it, "id"), related)
				case may:
					s++
				case id != "":
					h++
				}
			}
			shown.Add(int64(s))
			hidden.Add(int64(h))
			lines[i] = fmt.Sprintf("%d/%d", s, s+h)
		}()
	}
	wg.Wait()
	if shown.Load() == 0 {
		t.Errorf("%s: no caller was shown a related entity: the rows prove nothing", rel.field)
	}
	if t.Failed() || testing.Verbose() {
		names := make([]string, len(f.callers))
		for i, c := range f.callers {
			names[i] = c.name
		}
		t.Logf("%s (shown/objects with an id) — %s\n%s", rel.field, strings.Join(names, " "), strings.Join(lines, " "))
	}
}

// relationFields lists the relations of the schema: a field of an object
// type whose type is an object and which sits beside the id it follows
// (fooId beside foo, or fooName and fooVersion beside foo).
func relationFields() []string {
	s := generated.NewExecutableSchema(generated.Config{}).Schema()
	var out []string
	for name, def := range s.Types {
		if def.Kind != ast.Object || strings.HasPrefix(name, "__") || def == s.Query || def == s.Mutation || def == s.Subscription {
			continue
		}
		for _, fd := range def.Fields {
			t := s.Types[fd.Type.Name()]
			if fd.Type.Elem != nil || t == nil || t.Kind != ast.Object {
				continue
			}
			if def.Fields.ForName(fd.Name+"Id") != nil || (def.Fields.ForName(fd.Name+"Name") != nil && def.Fields.ForName(fd.Name+"Version") != nil) {
				out = append(out, name+"."+fd.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Every relation of the schema has an entry, and every entry a relation.
func TestAuthzMatrixCoversRelations(t *testing.T) {
	t.Parallel()
	f := &mxFixture{}
	have := map[string]bool{}
	for _, r := range f.relations() {
		if have[r.field] {
			t.Errorf("%s has two entries", r.field)
		}
		have[r.field] = true
	}
	fields := relationFields()
	for _, fd := range fields {
		if !have[fd] {
			t.Errorf("relation %s has no entry in graph/authz_relations_test.go: say who may follow it", fd)
		}
		delete(have, fd)
	}
	for fd := range have {
		t.Errorf("an entry names %s, which is not a relation of the schema", fd)
	}
	if len(fields) < 12 {
		t.Fatalf("only %d relations found: %v", len(fields), fields)
	}
}
