package graph

import (
	"context"
	"strings"

	"cairn/domain"
	"cairn/graph/apierr"
	"cairn/graph/model"
)

// object finds the object an id names, whatever its kind (Query.node). Ids
// are unique across kinds (commands.IDFree), so the one stream of an object
// kind that exists under the id says which query to ask; that query applies
// its own access rules. A template version's id is name@version.
func (r *Resolver) object(ctx context.Context, id string) (model.Node, error) {
	if _, err := authenticated(ctx); err != nil {
		return nil, err
	}
	q := &queryResolver{r}
	if name, version, ok := strings.Cut(id, "@"); ok {
		return asNode(q.Template(ctx, name, version, nil))
	}
	kinds := domain.ObjectStreamTypes()
	streams := make([]string, len(kinds))
	for i, k := range kinds {
		streams[i] = domain.StreamID(k, id)
	}
	found, err := r.deps.Store.ExistingStreams(ctx, streams)
	if err != nil {
		return nil, err
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
	default:
		// Only a race between two creations could get here: say so rather
		// than pick one.
		return nil, &apierr.Error{Code: apierr.CodeConflict,
			Message: "id " + id + " names objects of several kinds (" + strings.Join(found, ", ") + "); ask for it with the query of its kind"}
	}
	switch strings.TrimSuffix(found[0], "-"+id) {
	case domain.NodeStream:
		return asNode(q.ServerNode(ctx, id, nil))
	case domain.JobStream:
		return asNode(q.Job(ctx, id))
	case domain.ScheduleStream:
		return asNode(q.Schedule(ctx, id))
	case domain.ServiceStream:
		return asNode(q.Service(ctx, id, nil))
	case domain.ResourceStream:
		return asNode(q.Resource(ctx, id, nil))
	case domain.TenantStream:
		return asNode(q.Tenant(ctx, id, nil))
	case domain.UserStream:
		return asNode(q.User(ctx, id, nil))
	case domain.LocationStream:
		return asNode(q.Location(ctx, id, nil))
	}
	return nil, nil
}

// asNode turns a typed query result into the interface without making a
// nil object a non-nil interface.
func asNode[T any, P interface {
	*T
	model.Node
}](v P, err error) (model.Node, error) {
	if err != nil || v == nil {
		return nil, err
	}
	return v, nil
}
