package graph

import (
	"context"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vikstrous/dataloadgen"

	"cairn/auth"
	"cairn/domain"
	"cairn/graph/model"
	"cairn/graph/transport"
	"cairn/projections/readmodel"
)

// Relations (Node.location, Job.node, Service.tenant, ...) are read through
// loaders so that a list does not issue a query per row: every key asked for
// within one batch window (Config.BatchWait) is read with one
// `WHERE id = ANY($1)` query, and a key asked for twice is read once.
//
// A set of loaders lives for one response: one query or mutation, or one
// item of a subscription, so that a long-lived connection never serves an
// entity it read earlier. Nothing is shared between requests.
//
// Relations read the read models (jobs excepted: a job is read from its own
// stream, like Query.job), and resolve to null, never to an error, when the
// entity is missing or the caller may not read it: a relation tells nobody
// more than the root fields would.

// loaders are one response's batching readers, one per kind of entity.
type loaders struct {
	nodes     *dataloadgen.Loader[string, *readmodel.Node]
	locations *dataloadgen.Loader[string, *readmodel.Location]
	tenants   *dataloadgen.Loader[string, *readmodel.Tenant]
	users     *dataloadgen.Loader[string, *readmodel.User]
	templates *dataloadgen.Loader[string, *readmodel.Template]
	services  *dataloadgen.Loader[string, *serviceWithResources]
	jobs      *dataloadgen.Loader[string, *loadedJob]
	// capacities are nodes' capacities, by node id.
	capacities *dataloadgen.Loader[string, *readmodel.Capacity]
}

// serviceWithResources is a service row and its resources, which the
// Service type carries.
type serviceWithResources struct {
	row       readmodel.Service
	resources []readmodel.Resource
}

func (r *Resolver) newLoaders() *loaders {
	rm := r.reader
	wait := dataloadgen.WithWait(r.cfg.BatchWait)
	return &loaders{
		nodes:      dataloadgen.NewLoader(batched(rm.NodesByID), wait),
		locations:  dataloadgen.NewLoader(batched(rm.LocationsByID), wait),
		tenants:    dataloadgen.NewLoader(batched(rm.TenantsByID), wait),
		users:      dataloadgen.NewLoader(batched(rm.UsersByID), wait),
		templates:  dataloadgen.NewLoader(batched(rm.TemplatesByID), wait),
		services:   dataloadgen.NewLoader(batched(r.servicesByID), wait),
		jobs:       dataloadgen.NewLoader(batched(r.jobsByID), wait),
		capacities: dataloadgen.NewLoader(batched(r.capacitiesByID), wait),
	}
}

// batched adapts a read of many rows by id (in the order of ids, nil where
// none exists) to a loader's fetch: a failed read fails every key.
func batched[V any](read func(context.Context, []string) ([]*V, error)) func(context.Context, []string) ([]*V, []error) {
	return func(ctx context.Context, ids []string) ([]*V, []error) {
		vs, err := read(ctx, ids)
		if err != nil {
			return nil, []error{err}
		}
		return vs, nil
	}
}

// servicesByID reads services with their resources: two queries for any
// number of services.
func (r *Resolver) servicesByID(ctx context.Context, ids []string) ([]*serviceWithResources, error) {
	rows, err := r.readModels(ctx).ServicesByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, row := range rows {
		if row != nil {
			found = append(found, row.ID)
		}
	}
	res, err := r.readModels(ctx).ResourcesOfServices(ctx, found)
	if err != nil {
		return nil, err
	}
	mine := make(map[string][]readmodel.Resource, len(found))
	for i, id := range found {
		mine[id] = res[i]
	}
	out := make([]*serviceWithResources, len(ids))
	for i, row := range rows {
		if row != nil {
			out[i] = &serviceWithResources{row: *row, resources: mine[row.ID]}
		}
	}
	return out, nil
}

// capacitiesByID reads nodes' capacities: two queries for any number.
func (r *Resolver) capacitiesByID(ctx context.Context, ids []string) ([]*readmodel.Capacity, error) {
	rm := r.readModels(ctx)
	nodes, err := rm.NodesByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	caps, err := rm.NodeCapacities(ctx, nodes)
	if err != nil {
		return nil, err
	}
	out := make([]*readmodel.Capacity, len(ids))
	for i, n := range nodes {
		if n != nil {
			c := caps[n.ID]
			out[i] = &c
		}
	}
	return out, nil
}

// jobsByID folds the streams of many jobs read with one query; nil where a
// job does not exist.
func (r *Resolver) jobsByID(ctx context.Context, ids []string) ([]*loadedJob, error) {
	streams := make([]string, len(ids))
	for i, id := range ids {
		streams[i] = domain.StreamID(domain.JobStream, id)
	}
	evs, err := r.deps.Store.ReadStreams(ctx, streams)
	if err != nil {
		return nil, err
	}
	out := make([]*loadedJob, len(ids))
	for i, sid := range streams {
		recs := evs[sid]
		if len(recs) == 0 {
			continue
		}
		j := &loadedJob{tenant: recs[0].Metadata.Tenant, version: int64(len(recs))}
		for _, rec := range recs {
			ev, err := r.deps.Store.Decode(rec)
			if err != nil {
				return nil, err
			}
			j.Apply(ev)
		}
		out[i] = j
	}
	return out, nil
}

type loadersKey struct{}

// withLoaders gives each response its own loaders (see loaders).
type withLoaders struct{ res *Resolver }

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = withLoaders{}

func (withLoaders) ExtensionName() string                          { return "Loaders" }
func (withLoaders) Validate(schema graphql.ExecutableSchema) error { return nil }

func (w withLoaders) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	return next(context.WithValue(ctx, loadersKey{}, &lazyLoaders{}))
}

// lazyLoaders makes a response's loaders when a relation first asks: most
// responses (lists without relations, subscription items fanned out to
// thousands) never need them.
type lazyLoaders struct {
	once sync.Once
	l    *loaders
}

// loaders returns the response's loaders; outside a response (which gqlgen
// never does) a fresh set, so a caller still gets correct answers.
func (r *Resolver) loaders(ctx context.Context) *loaders {
	if ll, ok := ctx.Value(loadersKey{}).(*lazyLoaders); ok {
		ll.once.Do(func() { ll.l = r.newLoaders() })
		return ll.l
	}
	return r.newLoaders()
}

// mayRead reports whether the caller may read the entity a relation points
// to; when not, the relation is null.
func mayRead(ctx context.Context, action auth.Action, res auth.Resource) bool {
	if sess := transport.SessionOf(ctx); sess != nil && sess.Err() != nil {
		return false
	}
	p := transport.Principal(ctx)
	return p.Role != "" && auth.Can(p, action, res) == nil
}

// related loads the entity of an optional id through a loader and converts
// it; null when there is no id or no such entity.
func related[V, M any](ctx context.Context, l *dataloadgen.Loader[string, *V], id *string, convert func(V) *M) (*M, error) {
	if id == nil || *id == "" {
		return nil, nil
	}
	v, err := l.Load(ctx, *id)
	if err != nil || v == nil {
		return nil, err
	}
	return convert(*v), nil
}

// defaultBatchWait is how long a loader collects keys before it reads them.
// gqlgen starts the resolvers of a list's rows together, but on a busy
// machine the last of 50 rows can ask a few milliseconds after the first, so
// a window of one or two milliseconds splits batches. Each level of
// relations in a response waits this long once, not once per row.
const defaultBatchWait = 10 * time.Millisecond

// relatedTenant, relatedNode and relatedLocation resolve the relations to
// those entities from an optional id.
func (r *Resolver) relatedTenant(ctx context.Context, id *string) (*model.Tenant, error) {
	if id == nil || !mayRead(ctx, auth.TenantRead, auth.Resource{TenantID: *id}) {
		return nil, nil
	}
	return related(ctx, r.loaders(ctx).tenants, id, tenantRowModel)
}

func (r *Resolver) relatedNode(ctx context.Context, id *string) (*model.ServerNode, error) {
	if id == nil || !mayRead(ctx, auth.NodeRead, auth.Resource{NodeID: *id}) {
		return nil, nil
	}
	return related(ctx, r.loaders(ctx).nodes, id, nodeRowModel)
}

func (r *Resolver) relatedLocation(ctx context.Context, id *string) (*model.Location, error) {
	if id == nil || !mayRead(ctx, auth.LocationRead, auth.Resource{}) {
		return nil, nil
	}
	return related(ctx, r.loaders(ctx).locations, id, locationRowModel)
}

// actorName is the name people know an actor by: a user's name, a node's
// hostname; a process (orchestrator, reconciler, cairnd) is its own name.
// A caller who may not read the user (a tenant's member reading an
// operator's change) sees the id, as the actor field has it; the people of
// one tenant see each other's names.
func (r *Resolver) actorName(ctx context.Context, actor string) (string, error) {
	if actor == "" {
		return "", nil
	}
	l := r.loaders(ctx)
	u, err := l.users.Load(ctx, actor)
	if err != nil {
		return "", err
	}
	if u != nil {
		sameTenant := u.TenantID != "" && transport.Principal(ctx).TenantID == u.TenantID
		if sameTenant || mayRead(ctx, auth.UserRead, auth.Resource{TenantID: u.TenantID}) {
			return u.Name, nil
		}
		return actor, nil
	}
	n, err := l.nodes.Load(ctx, actor)
	if err != nil {
		return "", err
	}
	if n != nil && mayRead(ctx, auth.NodeRead, auth.Resource{NodeID: actor}) {
		return n.Hostname, nil
	}
	return actor, nil
}
