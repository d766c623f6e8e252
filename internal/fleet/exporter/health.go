package exporter

import (
	"runtime"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// PartTracer is the tracer's part: its events' counters and its own
// health (rdmatrace_hooks...) are served only while it is up.
const PartTracer = "tracer"

// Health is what the exporter says of itself: rdmatrace_build_info, as
// every Prometheus exporter's <name>_build_info, and rdmatrace_part_up
// for each part that is not read at the scrape (the tracer): 1 while it
// works, 0 while it cannot start. The netlink part's series comes from
// the scrape itself (Exporter.Collect), so it is never a scrape late.
type Health struct {
	buildInfo prometheus.Metric
	up        *prometheus.Desc

	mu    sync.Mutex
	parts map[string]bool
}

// NewHealth serves build_info for version and revision ("" when unknown)
// and a part_up series for each of parts, 0 until Set says otherwise.
func NewHealth(version, revision string, parts ...string) *Health {
	h := &Health{up: partUpDesc, parts: map[string]bool{}}
	for _, p := range parts {
		h.parts[p] = false
	}
	h.buildInfo = prometheus.MustNewConstMetric(prometheus.NewDesc("rdmatrace_build_info",
		"A metric with a constant value 1, labelled by the version, revision and Go version rdmatrace was built from.",
		[]string{"version", "revision", "goversion"}, nil), prometheus.GaugeValue, 1, version, revision, runtime.Version())
	return h
}

// partUpDesc is rdmatrace_part_up: the Exporter (netlink) and Health (the
// others) send series of it with different part labels.
var partUpDesc = prometheus.NewDesc("rdmatrace_part_up", partUpHelp, []string{"part"}, nil)

const partUpHelp = "1 when this part of rdmatrace works, 0 when it cannot (netlink: the last scrape could not reach the kernel's RDMA netlink; tracer: the BPF tracer could not start, and is retried; rdmatrace logs why)."

// Set says whether part works now.
func (h *Health) Set(part string, up bool) {
	h.mu.Lock()
	h.parts[part] = up
	h.mu.Unlock()
}

// Up says whether part works now.
func (h *Health) Up(part string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.parts[part]
}

// Describe is for prometheus.Collector. rdmatrace_part_up is described
// here and by the Exporter's scrape, which serves its netlink series from
// a registry of its own (Exporter.Gatherer): the two merge.
func (h *Health) Describe(ch chan<- *prometheus.Desc) { ch <- h.buildInfo.Desc(); ch <- h.up }

// Collect is for prometheus.Collector.
func (h *Health) Collect(ch chan<- prometheus.Metric) {
	ch <- h.buildInfo
	h.mu.Lock()
	defer h.mu.Unlock()
	var names []string
	for p := range h.parts {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		v := 0.0
		if h.parts[p] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(h.up, prometheus.GaugeValue, v, p)
	}
}
