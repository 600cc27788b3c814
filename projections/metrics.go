package projections

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	labels       = []string{"projection", "state"}
	descBehind   = prometheus.NewDesc("cairn_projection_events_behind", "Events between a projection build's checkpoint and the head of the log (approximate).", labels, nil)
	descSeconds  = prometheus.NewDesc("cairn_projection_seconds_behind", "Age of the last event a projection build applied while it is behind; 0 when caught up.", labels, nil)
	descApplied  = prometheus.NewDesc("cairn_projection_events_applied", "Events a projection build has applied since it started.", labels, nil)
	descParked   = prometheus.NewDesc("cairn_projection_events_parked", "Events a projection build could not apply and parked.", labels, nil)
	descRetrying = prometheus.NewDesc("cairn_projection_retrying", "1 while a projection build is failing and retrying.", labels, nil)
	descBuild    = prometheus.NewDesc("cairn_projection_build_info", "The version and build of each live and building projection.", []string{"projection", "state", "version", "build"}, nil)
	descUp       = prometheus.NewDesc("cairn_projection_status_up", "1 when projection status could be read at scrape time.", nil, nil)
)

// Describe implements prometheus.Collector.
func (r *Runner) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBehind, descSeconds, descApplied, descParked, descRetrying, descBuild, descUp} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads Status at scrape time.
func (r *Runner) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sts, err := r.Status(ctx)
	if err != nil {
		r.log.Warn().Err(err).Msg("projection metrics: could not read status")
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 1)
	for _, s := range sts {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, s.Name, s.State)
		}
		gauge(descBehind, float64(s.EventsBehind))
		gauge(descSeconds, s.SecondsBehind)
		gauge(descApplied, float64(s.Applied))
		gauge(descParked, float64(s.Parked))
		retrying := 0.0
		if s.Retrying {
			retrying = 1
		}
		gauge(descRetrying, retrying)
		ch <- prometheus.MustNewConstMetric(descBuild, prometheus.GaugeValue, 1, s.Name, s.State,
			strconv.Itoa(s.Version), strconv.Itoa(s.Build))
	}
}

var _ prometheus.Collector = (*Runner)(nil)
