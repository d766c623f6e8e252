package exporter

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A bind flood the kernel bounded is not silent: what its rate limit held
// back and what the ring's quarter refused are counters beside the drops.
func TestTracerCountsAreServed(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewTracerMetrics()
	reg.MustRegister(m)
	m.Attach(30, 2, TracerCounts{
		Drops:            func() uint64 { return 1 },
		PortBusyHeldBack: func() uint64 { return 334994 },
		PortBusyDropped:  func() uint64 { return 7 },
	})
	want := `
# HELP rdmatrace_port_busy_dropped_total Port-busy events refused while the ring buffer was a quarter full, to keep room for lifecycle events.
# TYPE rdmatrace_port_busy_dropped_total counter
rdmatrace_port_busy_dropped_total 7
# HELP rdmatrace_port_busy_held_back_total Port-busy events the kernel held back: at most one a second per process, port and call.
# TYPE rdmatrace_port_busy_held_back_total counter
rdmatrace_port_busy_held_back_total 334994
# HELP rdmatrace_events_dropped_total Events the kernel could not queue for the tracer (the ring buffer was full).
# TYPE rdmatrace_events_dropped_total counter
rdmatrace_events_dropped_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"rdmatrace_port_busy_dropped_total", "rdmatrace_port_busy_held_back_total", "rdmatrace_events_dropped_total"); err != nil {
		t.Error(err)
	}
}

// A tracer that stopped (or never started) leaves no series behind: a
// counter frozen at its last value would look like a quiet tracer.
func TestTracerMetricsGoAwayWithTheTracer(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewTracerMetrics()
	reg.MustRegister(m)
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("before a tracer: %d series, %v; want none", n, err)
	}
	m.Attach(30, 2, TracerCounts{})
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 5 {
		t.Fatalf("with a tracer: %d series, %v; want 5 (2 hooks, 3 counters)", n, err)
	}
	m.Detach()
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Errorf("after the tracer stopped: %d series, %v; want none", n, err)
	}
}
