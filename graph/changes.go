package graph

import (
	"context"

	"cairn/auth"
	"cairn/domain"
	"cairn/graph/live"
	"cairn/graph/model"
	"cairn/projections/readmodel"
)

// nodeChanged, jobChanged and serviceChanged follow the projected hub: an
// event reaches them once every read model applied it, so the entity read
// for it shows the change. A change the caller may not see is skipped.

// streamMatch matches the events of one stream type, of one entity when id
// is set.
func streamMatch(streamType string, id *string) live.Match {
	if id != nil && *id != "" {
		sid := domain.StreamID(streamType, *id)
		return func(e live.Event) bool { return e.StreamID == sid }
	}
	return func(e live.Event) bool { return e.StreamType == streamType }
}

// entityID is the id of the entity an event's stream belongs to.
func entityID(e live.Event) string {
	return domain.EntityIDOf(e.StreamType, e.StreamID)
}

func (r *Resolver) nodeChanges(ctx context.Context, p Principal, id *string, after *model.Cursor) (<-chan *model.NodeChange, error) {
	return subscribe(ctx, r, r.projected, after, streamMatch(domain.NodeStream, id), func(ctx context.Context, e live.Event) (*model.NodeChange, error) {
		nid := entityID(e)
		if auth.Can(p, auth.NodeRead, auth.Resource{NodeID: nid}) != nil {
			return nil, nil
		}
		ev, err := r.toEvent(e)
		if err != nil {
			return nil, err
		}
		n, err := visibleOne(r.reader.Node(ctx, nid))
		if err != nil {
			return nil, err
		}
		out := &model.NodeChange{Event: ev}
		if n != nil {
			out.Node = nodeRowModel(*n)
		}
		return out, nil
	})
}

func (r *Resolver) jobChanges(ctx context.Context, p Principal, id, nodeID *string, after *model.Cursor) (<-chan *model.JobChange, error) {
	match := streamMatch(domain.JobStream, id)
	if tenantScoped(p) {
		// A job's events carry the tenant their actor acted for: the
		// submitter's, the dispatcher's for the job's tenant, none for an
		// operator's cancel or the agent's reports. Those of another tenant
		// are skipped here; the rest are checked against the job below.
		inner := match
		match = func(e live.Event) bool {
			return inner(e) && (e.Metadata.Tenant == "" || e.Metadata.Tenant == p.TenantID)
		}
	}
	return subscribe(ctx, r, r.projected, after, match, func(ctx context.Context, e live.Event) (*model.JobChange, error) {
		j, err := visibleOne(r.reader.Job(ctx, entityID(e)))
		if err != nil || j == nil {
			return nil, err
		}
		if nodeID != nil && *nodeID != "" && j.OnNode() != *nodeID {
			return nil, nil
		}
		if auth.Can(p, auth.JobRead, auth.Resource{TenantID: j.TenantID, NodeID: j.OnNode()}) != nil {
			return nil, nil
		}
		ev, err := r.toEvent(e)
		if err != nil {
			return nil, err
		}
		return &model.JobChange{Event: ev, Job: jobRowModel(*j)}, nil
	})
}

func (r *Resolver) serviceChanges(ctx context.Context, p Principal, id *string, after *model.Cursor) (<-chan *model.ServiceChange, error) {
	svcMatch := streamMatch(domain.ServiceStream, id)
	match := func(e live.Event) bool { return svcMatch(e) || e.StreamType == domain.ResourceStream }
	return subscribe(ctx, r, r.projected, after, match, func(ctx context.Context, e live.Event) (*model.ServiceChange, error) {
		sid := entityID(e)
		if e.StreamType == domain.ResourceStream {
			res, err := visibleOne(r.reader.Resource(ctx, sid))
			if err != nil || res == nil {
				return nil, err
			}
			sid = res.ServiceID
		}
		if id != nil && *id != "" && sid != *id {
			return nil, nil
		}
		sv, err := visibleOne(r.reader.Service(ctx, sid))
		if err != nil || sv == nil {
			return nil, err
		}
		if auth.Can(p, auth.ServiceRead, auth.Resource{TenantID: sv.TenantID}) != nil {
			return nil, nil
		}
		ev, err := r.toEvent(e)
		if err != nil {
			return nil, err
		}
		out, err := r.servicesWithResources(ctx, []readmodel.Service{*sv})
		if err != nil {
			return nil, err
		}
		return &model.ServiceChange{Event: ev, Service: out[0]}, nil
	})
}
