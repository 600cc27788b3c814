package main

import (
	"context"
	"encoding/hex"
	"net"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"cairn/cluster"
	"cairn/internal/seal"
)

// The once-only work, each with its lease: the dispatcher's decisions
// (leases, expiries, retries, liveness, schedule firings) and the
// orchestrator (deployments, whose plugin calls must not run twice).
const (
	DispatchLease     = "dispatch"
	OrchestratorLease = "orchestrator"
)

// clusterSide is this replica's part in the cluster: its announcement, its
// claims on the once-only work, and the agents connected to it.
type clusterSide struct {
	registry     *cluster.Registry
	dispatch     *cluster.Lease
	orchestrator *cluster.Lease
	presence     *cluster.Presence
	// passive: take part in no lease (a replica older than the schema).
	passive bool
}

func newClusterSide(ctx context.Context, pool *pgxpool.Pool, id string, addr net.Addr, sealer *seal.Sealer, metrics prometheus.Registerer, log zerolog.Logger) (*clusterSide, error) {
	log = log.With().Str("component", "cluster").Str("replica", id).Logger()
	keyID := hex.EncodeToString(sealer.MAC([]byte("cairn secrets key id"))[:8])
	cs := &clusterSide{
		registry:     cluster.NewRegistry(pool, id, addr.String(), version, keyID, log),
		dispatch:     cluster.NewLease(pool, DispatchLease, id, cluster.LeaseOptions{Log: log}),
		orchestrator: cluster.NewLease(pool, OrchestratorLease, id, cluster.LeaseOptions{Log: log}),
		presence:     cluster.NewPresence(pool, id),
	}
	for _, l := range []*cluster.Lease{cs.dispatch, cs.orchestrator} {
		owner := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cairn_cluster_owner", Help: "1 while this replica owns the work named by the lease label.",
			ConstLabels: prometheus.Labels{"lease": l.Name()},
		}, func() float64 {
			if l.Owns() {
				return 1
			}
			return 0
		})
		handovers := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cairn_cluster_handovers_total", Help: "Times this replica took over the work named by the lease label.",
			ConstLabels: prometheus.Labels{"lease": l.Name()},
		}, func() float64 { return float64(l.Handovers()) })
		for _, c := range []prometheus.Collector{owner, handovers} {
			if err := metrics.Register(c); err != nil {
				return nil, err
			}
		}
	}
	if err := cs.registry.CheckKey(ctx); err != nil {
		return nil, err
	}
	log.Info().Msg("this replica joins the cluster of its database")
	return cs, nil
}

// run announces the replica and takes part in the leases until ctx ends.
func (cs *clusterSide) run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return cs.registry.Run(ctx) })
	if !cs.passive {
		g.Go(func() error { return cs.dispatch.Run(ctx) })
		g.Go(func() error { return cs.orchestrator.Run(ctx) })
	}
	return g.Wait()
}
