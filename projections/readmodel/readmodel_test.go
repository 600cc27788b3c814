package readmodel_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/internal/testdb"
	"cairn/projections"
	"cairn/projections/eventgen"
	"cairn/projections/models"
	"cairn/projections/readmodel"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// TestReadModel runs its subtests on one database with a generated
// history, projected once: they only read.
func TestReadModel(t *testing.T) {
	pool, rm := setup(t)
	t.Run("lists filter and page", func(t *testing.T) { testListsFilterAndPage(t, pool, rm) })
	t.Run("get and batch get", func(t *testing.T) { testGetAndBatchGet(t, pool, rm) })
	t.Run("bad pages", func(t *testing.T) { testBadPages(t, rm) })
}

func setup(t *testing.T) (*pgxpool.Pool, *readmodel.Reader) {
	t.Helper()
	// Appending and projecting 2500 events: generous for a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := testdb.New(t)
	pool := db.AppPool(t)
	store := eventstore.New(pool, events.Registry(), eventstore.Options{})
	t.Cleanup(store.Close)
	items := eventgen.New(eventgen.Options{Seed: 42, Nodes: 30, Tenants: 4}).Take(2500)
	last, err := eventgen.Append(ctx, store, items)
	if err != nil {
		t.Fatal(err)
	}
	r := projections.NewRunner(store, pool, projections.Options{Log: zerolog.Nop(), Views: models.AnalyticsViews()})
	if err := r.Register(models.All()...); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
	return pool, readmodel.New(pool)
}

func ids(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// walk pages through a whole list with pages of size n, forwards, then
// backwards from the end, and checks both read the same rows and that an
// empty page (first: 0) only says whether there are rows.
func walk[T any](t *testing.T, n int, id func(T) string, get func(readmodel.Page) (readmodel.Connection[T], error)) []string {
	t.Helper()
	forward := walkPages(t, n, id, get, readmodel.Page{First: n}, func(c readmodel.Connection[T], p *readmodel.Page) bool {
		p.After = c.PageInfo.EndCursor
		return c.PageInfo.HasNextPage
	})
	backward := walkPages(t, n, id, get, readmodel.Page{Last: n}, func(c readmodel.Connection[T], p *readmodel.Page) bool {
		p.Before = c.PageInfo.StartCursor
		return c.PageInfo.HasPreviousPage
	})
	// Backward pages come last page first, each in the list's order.
	slices.Reverse(backward)
	if got, want := slices.Concat(backward...), slices.Concat(forward...); !slices.Equal(got, want) {
		t.Fatalf("paging backwards read %d rows, forwards %d, or in another order", len(got), len(want))
	}
	empty, err := get(readmodel.Page{Empty: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(empty.Edges) != 0 || empty.PageInfo.HasNextPage != (len(slices.Concat(forward...)) > 0) {
		t.Fatalf("first: 0 gave %d rows, hasNextPage %v, over %d pages", len(empty.Edges), empty.PageInfo.HasNextPage, len(forward))
	}
	return slices.Concat(forward...)
}

func walkPages[T any](t *testing.T, n int, id func(T) string, get func(readmodel.Page) (readmodel.Connection[T], error),
	p readmodel.Page, next func(readmodel.Connection[T], *readmodel.Page) bool) [][]string {
	t.Helper()
	var out [][]string
	for range 1000 {
		c, err := get(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Edges) > n {
			t.Fatalf("page of %d rows for a page size of %d", len(c.Edges), n)
		}
		var ids []string
		for _, e := range c.Edges {
			ids = append(ids, id(e.Node))
		}
		out = append(out, ids)
		if !next(c, &p) {
			return out
		}
	}
	t.Fatal("pages never ended")
	return nil
}

func testListsFilterAndPage(t *testing.T, pool *pgxpool.Pool, rm *readmodel.Reader) {
	ctx := context.Background()
	tenantID := ids(t, pool, `SELECT id FROM read.tenants ORDER BY id LIMIT 1`)[0]
	nodeID := ids(t, pool, `SELECT node_id FROM read.jobs WHERE node_id IS NOT NULL ORDER BY id LIMIT 1`)[0]
	serviceID := ids(t, pool, `SELECT id FROM read.services ORDER BY id LIMIT 1`)[0]
	nodeOf := func(n readmodel.Node) string { return n.ID }
	jobOf := func(j readmodel.Job) string { return j.ID }
	serviceOf := func(s readmodel.Service) string { return s.ID }
	resourceOf := func(r readmodel.Resource) string { return r.ID }

	cases := []struct {
		name string
		got  func() []string
		want string
		args []any
	}{
		{"all nodes", func() []string {
			return walk(t, 7, nodeOf, func(p readmodel.Page) (readmodel.Connection[readmodel.Node], error) {
				return rm.ListNodes(ctx, readmodel.NodeFilter{}, p)
			})
		}, `SELECT id FROM read.nodes ORDER BY id`, nil},
		{"nodes by status and label", func() []string {
			return walk(t, 3, nodeOf, func(p readmodel.Page) (readmodel.Connection[readmodel.Node], error) {
				return rm.ListNodes(ctx, readmodel.NodeFilter{Status: []node.Status{node.StatusOnline, node.StatusDisconnected}, Labels: map[string]string{"rack": "1"}}, p)
			})
		}, `SELECT id FROM read.nodes WHERE status IN ('online', 'disconnected') AND labels->>'rack' = '1' ORDER BY id`, nil},
		{"nodes by hostname, with LIKE characters taken literally", func() []string {
			return walk(t, 50, nodeOf, func(p readmodel.Page) (readmodel.Connection[readmodel.Node], error) {
				return rm.ListNodes(ctx, readmodel.NodeFilter{Hostname: "ST-1"}, p)
			})
		}, `SELECT id FROM read.nodes WHERE hostname ILIKE '%st-1%' ORDER BY id`, nil},
		{"no node matches a percent sign", func() []string {
			return walk(t, 50, nodeOf, func(p readmodel.Page) (readmodel.Connection[readmodel.Node], error) {
				return rm.ListNodes(ctx, readmodel.NodeFilter{Hostname: "%"}, p)
			})
		}, `SELECT id FROM read.nodes WHERE false`, nil},
		{"all jobs, newest first", func() []string {
			return walk(t, 97, jobOf, func(p readmodel.Page) (readmodel.Connection[readmodel.Job], error) {
				return rm.ListJobs(ctx, readmodel.JobFilter{}, p)
			})
		}, `SELECT id FROM read.jobs ORDER BY submitted_at DESC, id DESC`, nil},
		{"one tenant's finished jobs on one node", func() []string {
			return walk(t, 5, jobOf, func(p readmodel.Page) (readmodel.Connection[readmodel.Job], error) {
				return rm.ListJobs(ctx, readmodel.JobFilter{TenantID: tenantID, NodeID: nodeID,
					Status: []job.Status{job.StatusSucceeded, job.StatusFailed}}, p)
			})
		}, `SELECT id FROM read.jobs WHERE tenant_id = $1 AND node_id = $2 AND state IN ('succeeded', 'failed') ORDER BY submitted_at DESC, id DESC`,
			[]any{tenantID, nodeID}},
		{"one tenant's services", func() []string {
			return walk(t, 4, serviceOf, func(p readmodel.Page) (readmodel.Connection[readmodel.Service], error) {
				return rm.ListServices(ctx, readmodel.ServiceFilter{TenantID: tenantID}, p)
			})
		}, `SELECT id FROM read.services WHERE tenant_id = $1 ORDER BY requested_at DESC, id DESC`, []any{tenantID}},
		{"running services", func() []string {
			return walk(t, 50, serviceOf, func(p readmodel.Page) (readmodel.Connection[readmodel.Service], error) {
				return rm.ListServices(ctx, readmodel.ServiceFilter{Status: []service.Status{service.StatusRunning}}, p)
			})
		}, `SELECT id FROM read.services WHERE state = 'running' ORDER BY requested_at DESC, id DESC`, nil},
		{"one tenant's resources", func() []string {
			return walk(t, 6, resourceOf, func(p readmodel.Page) (readmodel.Connection[readmodel.Resource], error) {
				return rm.ListResources(ctx, readmodel.ResourceFilter{TenantID: tenantID}, p)
			})
		}, `SELECT r.id FROM read.resources r JOIN read.services s ON s.id = r.service_id WHERE s.tenant_id = $1 ORDER BY r.id`, []any{tenantID}},
		{"one service's resources", func() []string {
			return walk(t, 1, resourceOf, func(p readmodel.Page) (readmodel.Connection[readmodel.Resource], error) {
				return rm.ListResources(ctx, readmodel.ResourceFilter{ServiceID: serviceID}, p)
			})
		}, `SELECT id FROM read.resources WHERE service_id = $1 ORDER BY id`, []any{serviceID}},
		{"published templates, latest only", func() []string {
			return walk(t, 2, func(x readmodel.Template) string { return x.ID }, func(p readmodel.Page) (readmodel.Connection[readmodel.Template], error) {
				return rm.ListTemplates(ctx, readmodel.TemplateFilter{Status: []template.Status{template.StatusPublished}, LatestOnly: true, Category: "web"}, p)
			})
		}, `SELECT id FROM read.templates WHERE status = 'published' ORDER BY id`, nil},
		{"one tenant's users", func() []string {
			return walk(t, 50, func(x readmodel.User) string { return x.ID }, func(p readmodel.Page) (readmodel.Connection[readmodel.User], error) {
				return rm.ListUsers(ctx, readmodel.UserFilter{TenantID: tenantID, Role: []tenant.Role{tenant.RoleTenantAdmin}}, p)
			})
		}, `SELECT id FROM read.users WHERE tenant_id = $1 ORDER BY id`, []any{tenantID}},
		{"tokens", func() []string {
			return walk(t, 2, func(x readmodel.APIToken) string { return x.ID }, func(p readmodel.Page) (readmodel.Connection[readmodel.APIToken], error) {
				return rm.ListAPITokens(ctx, readmodel.APITokenFilter{}, p)
			})
		}, `SELECT id FROM read.api_tokens WHERE status <> 'revoked' ORDER BY id`, nil},
		{"tenants by name", func() []string {
			return walk(t, 50, func(x readmodel.Tenant) string { return x.ID }, func(p readmodel.Page) (readmodel.Connection[readmodel.Tenant], error) {
				return rm.ListTenants(ctx, readmodel.TenantFilter{Name: "TENANT"}, p)
			})
		}, `SELECT id FROM read.tenants ORDER BY id`, nil},
		{"locations", func() []string {
			return walk(t, 2, func(x readmodel.Location) string { return x.ID }, func(p readmodel.Page) (readmodel.Connection[readmodel.Location], error) {
				return rm.ListLocations(ctx, readmodel.LocationFilter{Status: []tenant.LocationStatus{tenant.LocationStatusActive}}, p)
			})
		}, `SELECT id FROM read.locations ORDER BY id`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, want := c.got(), ids(t, pool, c.want, c.args...)
			if !slices.Equal(got, want) {
				t.Fatalf("got %d rows %v\nwant %d rows %v", len(got), got, len(want), want)
			}
		})
	}
}

func testGetAndBatchGet(t *testing.T, pool *pgxpool.Pool, rm *readmodel.Reader) {
	ctx := context.Background()
	nodes := ids(t, pool, `SELECT id FROM read.nodes ORDER BY id LIMIT 3`)
	n, err := rm.Node(ctx, nodes[0])
	if err != nil || n.ID != nodes[0] || n.Facts == nil || n.Hostname == "" || n.Version == 0 || n.Labels["rack"] == "" {
		t.Fatalf("node %+v, %v", n, err)
	}
	got, err := rm.NodesByID(ctx, []string{nodes[2], "nope", nodes[0], nodes[2]})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ID != nodes[2] || got[1] != nil || got[2].ID != nodes[0] || got[3].ID != nodes[2] {
		t.Fatalf("batch get out of order or wrong: %v", got)
	}
	var nf *domain.NotFoundError
	if _, err := rm.Job(ctx, "no-such-job"); !errors.As(err, &nf) || !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("missing job: %v", err)
	}
	jobID := ids(t, pool, `SELECT id FROM read.jobs WHERE state = 'succeeded' LIMIT 1`)[0]
	j, err := rm.Job(ctx, jobID)
	if err != nil || j.Result == nil || j.Spec.Kind != job.KindAction || j.Target.NodeID == "" || j.FinishedAt.IsZero() {
		t.Fatalf("job %+v, %v", j, err)
	}
	svc := ids(t, pool, `SELECT id FROM read.services ORDER BY id LIMIT 2`)
	res, err := rm.ResourcesOfServices(ctx, []string{svc[1], svc[0]})
	if err != nil || len(res[0]) != 2 || res[0][0].ServiceID != svc[1] || len(res[1]) != 2 {
		t.Fatalf("resources of services: %v, %v", res, err)
	}
	tpl := ids(t, pool, `SELECT name FROM read.templates LIMIT 1`)[0]
	if tv, err := rm.Template(ctx, tpl, "1.0.0"); err != nil || tv.Category != "web" || len(tv.Descriptor) == 0 {
		t.Fatalf("template %+v %v", tv, err)
	}
	hist, err := rm.NodeStatusHistory(ctx, nodes[0], time.Time{}, time.Time{})
	if err != nil || len(hist) == 0 || !hist[len(hist)-1].EndedAt.IsZero() {
		t.Fatalf("status history %+v %v", hist, err)
	}
}

func testBadPages(t *testing.T, rm *readmodel.Reader) {
	ctx := context.Background()
	nodes, err := rm.ListNodes(ctx, readmodel.NodeFilter{}, readmodel.Page{First: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []readmodel.Page{
		{First: -1}, {First: readmodel.MaxFirst + 1}, {After: "not-a-cursor"}, {After: "eyJ4Ijo"},
		{Last: -1}, {Before: "not-a-cursor"}, {First: 2, Last: 2}, {Last: 2, After: nodes.PageInfo.EndCursor},
		// A node cursor handed to the job list.
		{After: nodes.PageInfo.EndCursor},
	} {
		var bad *readmodel.InvalidPageError
		if _, err := rm.ListJobs(ctx, readmodel.JobFilter{}, p); !errors.As(err, &bad) || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("page %+v: got %v", p, err)
		}
	}
}
