package graph

import (
	"context"

	"cairn/auth"
	"cairn/cluster"
	"cairn/graph/apierr"
	"cairn/graph/model"
)

// clusterStatus lists the replicas for the cluster query.
func (r *Resolver) clusterStatus(ctx context.Context) (*model.Cluster, error) {
	if _, err := r.authorize(ctx, auth.ProjectionRead, auth.Resource{}); err != nil {
		return nil, err
	}
	if r.deps.Cluster == nil {
		return nil, apierr.Unavailable("this server does not take part in a cluster")
	}
	reps, now, err := r.deps.Cluster.Replicas(ctx)
	if err != nil {
		return nil, err
	}
	self := r.deps.Cluster.Self().ID
	out := &model.Cluster{Replicas: make([]model.Replica, 0, len(reps))}
	for _, rep := range reps {
		out.Replicas = append(out.Replicas, model.Replica{
			ID: rep.ID, Address: rep.Address, Version: rep.Version,
			StartedAt: rep.StartedAt.UTC(), LastSeen: rep.LastSeen.UTC(),
			Gone: rep.Gone(now, cluster.GoneAfter), Owns: rep.Owns, Self: rep.ID == self,
		})
	}
	return out, nil
}
