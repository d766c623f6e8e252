package otlp

import "github.com/prometheus/client_golang/prometheus"

// The exporter's metrics of the delivery: what will never reach the
// store, what did, and what waits.
var (
	droppedDesc = prometheus.NewDesc("rdmatrace_otlp_dropped_total",
		"OTLP records (events and identity records) that will never reach the store: dropped from the full queue while the store was down or slow, or refused by it.", nil, nil)
	sentDesc   = prometheus.NewDesc("rdmatrace_otlp_sent_total", "OTLP records the store took.", nil, nil)
	queuedDesc = prometheus.NewDesc("rdmatrace_otlp_queued", "OTLP records waiting to be sent.", nil, nil)
)

// Collector serves the delivery's counts to Prometheus: register it
// beside the exporter's metrics.
func (s *Sink) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Sink }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- droppedDesc
	ch <- sentDesc
	ch <- queuedDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(st.Lost()))
	ch <- prometheus.MustNewConstMetric(sentDesc, prometheus.CounterValue, float64(st.Sent))
	ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, float64(st.Queued))
}
