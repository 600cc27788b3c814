package httpserver

import (
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"cairn/eventstore"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics() *httpMetrics {
	return &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cairn_http_request_duration_seconds",
			Help: "Time taken to answer HTTP requests, by route pattern.",
			// Fine below 100 ms, where the latency targets are.
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
	}
}

// metricsHandler serves the server's registry in the Prometheus formats.
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{
		ErrorLog: promLogger{s.log.With().Str("component", "metrics").Logger()},
		// One failing collector must not hide all the others.
		ErrorHandling: promhttp.ContinueOnError,
	})
}

type promLogger struct{ log zerolog.Logger }

func (l promLogger) Println(v ...any) { l.log.Error().Msg(fmt.Sprint(v...)) }

// poolCollector reports a pgx pool's connections at scrape time.
type poolCollector struct {
	pool *pgxpool.Pool

	acquired, idle, total, max           *prometheus.Desc
	acquires, emptyAcquires, acquireWait *prometheus.Desc
}

// descriptions makes the descriptions of one collector's metrics, named
// prefix plus the metric's name, with labels fixed.
func descriptions(prefix string, labels prometheus.Labels) func(metric, help string) *prometheus.Desc {
	return func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc(prefix+metric, help, nil, labels)
	}
}

func newPoolCollector(name string, pool *pgxpool.Pool) *poolCollector {
	desc := descriptions("cairn_db_pool_", prometheus.Labels{"pool": name})
	return &poolCollector{
		pool:          pool,
		acquired:      desc("acquired_conns", "Connections currently in use."),
		idle:          desc("idle_conns", "Connections open and idle."),
		total:         desc("total_conns", "Connections open, in use, idle or being established."),
		max:           desc("max_conns", "Most connections the pool may open."),
		acquires:      desc("acquires_total", "Connections handed out."),
		emptyAcquires: desc("empty_acquires_total", "Acquires that had to wait because no idle connection was ready."),
		acquireWait:   desc("acquire_wait_seconds_total", "Time spent acquiring connections."),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.idle, c.total, c.max, c.acquires, c.emptyAcquires, c.acquireWait} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.pool.Stat()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.acquired, float64(st.AcquiredConns()))
	gauge(c.idle, float64(st.IdleConns()))
	gauge(c.total, float64(st.TotalConns()))
	gauge(c.max, float64(st.MaxConns()))
	counter(c.acquires, float64(st.AcquireCount()))
	counter(c.emptyAcquires, float64(st.EmptyAcquireCount()))
	counter(c.acquireWait, st.AcquireDuration().Seconds())
}

// storeCollector reports the event store's counters at scrape time: how
// appends were grouped into transactions, and how much of the reading of
// the log the subscriptions shared. Each counter is listed once, with how
// it is read from the store's Stats.
type storeCollector struct {
	stats    func() eventstore.Stats
	counters []storeCounter
}

type storeCounter struct {
	desc  *prometheus.Desc
	value func(eventstore.Stats) int64
}

func newStoreCollector(stats func() eventstore.Stats) *storeCollector {
	desc := descriptions("cairn_eventstore_", nil)
	counter := func(metric, help string, value func(eventstore.Stats) int64) storeCounter {
		return storeCounter{desc: desc(metric, help), value: value}
	}
	return &storeCollector{stats: stats, counters: []storeCounter{
		counter("append_transactions_total", "Transactions the appender ran.",
			func(st eventstore.Stats) int64 { return st.Batches }),
		counter("appends_total", "Append requests (commands) the transactions carried.",
			func(st eventstore.Stats) int64 { return st.Appends }),
		counter("events_appended_total", "Events appended.",
			func(st eventstore.Stats) int64 { return st.Events }),
		counter("tail_reads_total", "Reads of the log the subscriptions made.",
			func(st eventstore.Stats) int64 { return st.TailReads }),
		counter("tail_reads_shared_total", "Reads of the log a subscription took from another's read instead of making it.",
			func(st eventstore.Stats) int64 { return st.TailReadsShared }),
		counter("recent_events_served_total", "Events given to subscriptions out of the window of recent events instead of read.",
			func(st eventstore.Stats) int64 { return st.RecentServed }),
		counter("events_read_total", "Events the subscriptions read from the database.",
			func(st eventstore.Stats) int64 { return st.EventsRead }),
	}}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, sc := range c.counters {
		ch <- sc.desc
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for _, sc := range c.counters {
		ch <- prometheus.MustNewConstMetric(sc.desc, prometheus.CounterValue, float64(sc.value(st)))
	}
}
