// Package bench holds what the verbs microbenchmarks measure, as plain
// values shared by the timing loops (verbs/, cgo), the correlation with
// traced kernel events (correlate/) and the renderers. Every time is
// CLOCK_MONOTONIC in nanoseconds: the clock of the tracer's
// bpf_ktime_get_ns, so a sample and a kernel event can be joined directly.
package bench

import "net/netip"

// Sample is one latency measurement: when the iteration began and how long
// it took as the program saw it (half a round trip for WRITE and SEND
// ping-pong, a full one for READ, as perftest reports them).
type Sample struct {
	Start int64 // CLOCK_MONOTONIC ns
	Lat   int64 // ns
}

// Step is one timed step of a connection or a control-path operation as the
// program saw it, e.g. "resolve-addr", "resolve-route", "create-qp",
// "connect", "disconnect", "destroy"; or "alloc-pd", "create-cq",
// "modify-qp-rtr", "reg-mr".
type Step struct {
	Name  string
	Start int64 // CLOCK_MONOTONIC ns
	Dur   int64 // ns
}

// Side is one end of an rdma_cm connection: the process and thread that ran
// it and its address, so traced events (which carry pid/tid and the 4-tuple)
// can be matched to it.
type Side struct {
	PID, TID int
	Src, Dst netip.AddrPort
	Steps    []Step
}

// Conn is one rdma_cm connection set up (and torn down) by the benchmark.
type Conn struct {
	Index          int
	Client, Server Side
	Start, End     int64 // the client's first step's start and its last step's end
}

// Op is one control-path operation (ctrl): its name, the size it worked on
// (reg-mr), whether the memory was pre-faulted, and the thread that ran it.
type Op struct {
	Name     string
	Size     int64
	Prefault bool
	TID      int
	Start    int64 // CLOCK_MONOTONIC ns
	Dur      int64 // ns
}

// BurstSteps is how many steps a QP of a connection burst may have timed
// (five over verbs, seven over rdma_cm).
const BurstSteps = 8

// StepTime is one timed step of a burst's QP, as the C loop fills it: a
// step that did not run has Start 0.
type StepTime struct {
	Start int64 // CLOCK_MONOTONIC ns
	Dur   int64 // ns
}

// BurstQP is one QP of a connection burst (rdmabench burst): its number and
// the time of each of its steps, in the order of the burst's step names.
// Its layout is the C loop's (struct rb_burst_qp), which fills an array of
// them in one call.
type BurstQP struct {
	QPN   uint32
	_     uint32
	Steps [BurstSteps]StepTime
}
