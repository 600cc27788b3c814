package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

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

func newClusterSide(ctx context.Context, pool *pgxpool.Pool, id, addr string, sealer *seal.Sealer, metrics prometheus.Registerer, log zerolog.Logger) (*clusterSide, error) {
	log = log.With().Str("component", "cluster").Str("replica", id).Logger()
	keyID := hex.EncodeToString(sealer.MAC([]byte("cairn secrets key id"))[:8])
	cs := &clusterSide{
		registry:     cluster.NewRegistry(pool, id, addr, version, keyID, log),
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

// checkAdvertise accepts an empty setting, host:port, or an http(s) URL
// with a host.
func checkAdvertise(a string) error {
	if a == "" {
		return nil
	}
	if strings.Contains(a, "://") {
		u, err := url.Parse(a)
		if err != nil {
			return err
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return errors.New("a URL must be http:// or https:// with a host")
		}
		return nil
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return errors.New("use host:port or a URL")
	}
	if host == "" || port == "" {
		return errors.New("both a host and a port are needed")
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// advertisedAddress is what the cluster lists for this replica: the
// setting when given, else the listener's address, with the host's name in
// place of an address that means every interface (which no one can reach).
func advertisedAddress(setting string, listener net.Addr, hostname func() (string, error)) string {
	if setting != "" {
		return setting
	}
	host, port, err := net.SplitHostPort(listener.String())
	if err != nil {
		return listener.String()
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if name, err := hostname(); err == nil && name != "" {
			return net.JoinHostPort(name, port)
		}
	}
	return listener.String()
}
