package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"cairn/eventstore"
)

// storeCollector reports the event store's counters at scrape time: how
// appends were grouped into transactions, and how much of the reading of
// the log the subscriptions shared.
type storeCollector struct {
	store *eventstore.Store

	batches, appends, events      *prometheus.Desc
	reads, readsShared, recentHit *prometheus.Desc
}

func newStoreCollector(store *eventstore.Store) *storeCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("cairn_eventstore_"+name, help, nil, nil)
	}
	return &storeCollector{
		store:       store,
		batches:     desc("append_transactions_total", "Transactions the appender ran."),
		appends:     desc("appends_total", "Append requests (commands) the transactions carried."),
		events:      desc("events_appended_total", "Events appended."),
		reads:       desc("tail_reads_total", "Reads of the log the subscriptions made."),
		readsShared: desc("tail_reads_shared_total", "Reads of the log a subscription took from another's read instead of making it."),
		recentHit:   desc("recent_events_served_total", "Events given to subscriptions out of the window of recent events instead of read."),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.batches, c.appends, c.events, c.reads, c.readsShared, c.recentHit} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.store.Stats()
	for d, v := range map[*prometheus.Desc]int64{
		c.batches: st.Batches, c.appends: st.Appends, c.events: st.Events,
		c.reads: st.TailReads, c.readsShared: st.TailReadsShared, c.recentHit: st.RecentServed,
	} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
}
