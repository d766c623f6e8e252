// Package correlate joins what a benchmark measured (bench values) with what
// the tracer saw (rdma.Event) on the same host and clock (CLOCK_MONOTONIC):
// why a latency sample was slow, where a connection's setup spent its time,
// and how much of a control-path verb was the kernel's work.
package correlate

import (
	"math"
	"slices"
	"sort"

	"github.com/rdmatrace/rdmatrace/bench"
	"github.com/rdmatrace/rdmatrace/rdma"
)

// Options say what an outlier is and whose events explain it.
type Options struct {
	// Factor: a sample is an outlier above max(p99, Factor × median); 0 means 3.
	Factor float64
	// PID is the benchmark's process: its own RDMA events are not causes.
	PID uint32
	// Threads are the benchmark's timed threads: their off-CPU spells are
	// causes. Empty: every thread of PID.
	Threads []int
	// Dev is the device the benchmark runs on: other processes' events on
	// another device are not causes ("" : any).
	Dev string
}

// Outlier is one slow sample and the events that overlapped it.
type Outlier struct {
	Index  int // in the samples
	Sample bench.Sample
	Events []rdma.Event // in time order
	Causes []string     // one name per kind of cause, sorted; none: nothing overlapped
}

// Result is every outlier of a series.
type Result struct {
	Threshold int64 // ns: samples above it are outliers
	Median    int64 // ns (perftest's t_typical)
	P99       int64 // ns
	Outliers  []Outlier
	// Causes counts, over all outliers, those that had each cause (an
	// outlier with two causes counts for both); "nothing" counts those
	// that nothing overlapped.
	Causes map[string]int
}

// Nothing is the cause of an outlier that no traced event overlapped.
const Nothing = "nothing"

// Outliers finds the samples above max(p99, factor × median) and, for each,
// the events that overlapped it on this host: off-CPU spells of the
// benchmark's threads, and other processes' RDMA work (MR registrations,
// QP/CQ creation, rdma_cm, QP errors, device events). A sample overlaps
// an event when the event's span meets [start − lat, start + 2·lat]: the
// sample widened by its own duration on each side (a half round trip
// covers only half of its iteration).
func Outliers(samples []bench.Sample, events []rdma.Event, o Options) Result {
	factor := o.Factor
	if factor <= 0 {
		factor = 3
	}
	s := bench.Summarize(samples)
	r := Result{Median: int64(math.Round(s.Typical * 1e3)), P99: int64(math.Round(s.P99 * 1e3)), Causes: map[string]int{}}
	r.Threshold = max(r.P99, int64(math.Round(factor*s.Typical*1e3)))
	if len(samples) <= bench.MeasureTail {
		return r
	}
	cands := make([]rdma.Event, 0, len(events))
	for i := range events {
		if relevant(&events[i], &o) {
			cands = append(cands, events[i])
		}
	}
	// Sorted by start: each outlier stops at the first event after it.
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Mono < cands[j].Mono })
	for i, smp := range samples {
		if smp.Lat <= r.Threshold {
			continue
		}
		lo, hi := uint64(max(0, smp.Start-smp.Lat)), uint64(smp.Start+2*smp.Lat)
		out := Outlier{Index: i, Sample: smp}
		// Events starting after hi cannot overlap; long spans starting
		// before lo can, so the scan starts at the first event.
		end := sort.Search(len(cands), func(k int) bool { return cands[k].Mono > hi })
		for k := 0; k < end; k++ {
			if cands[k].End() >= lo {
				out.Events = append(out.Events, cands[k])
			}
		}
		for k := range out.Events {
			for _, c := range causes(&out.Events[k]) {
				if !slices.Contains(out.Causes, c) {
					out.Causes = append(out.Causes, c)
				}
			}
		}
		slices.Sort(out.Causes)
		if len(out.Causes) == 0 {
			r.Causes[Nothing]++
		}
		for _, c := range out.Causes {
			r.Causes[c]++
		}
		r.Outliers = append(r.Outliers, out)
	}
	return r
}

// relevant says whether an event can explain a slow sample of the benchmark.
func relevant(e *rdma.Event, o *Options) bool {
	if e.Kind == rdma.EvOffCPU {
		if len(o.Threads) > 0 {
			return slices.Contains(o.Threads, int(e.Owner.TID))
		}
		return e.Owner.PID == o.PID
	}
	if e.Has(rdma.EvHasOwner) && e.Owner.PID == o.PID {
		return false // the benchmark's own setup
	}
	if o.Dev != "" && e.Has(rdma.EvHasDev) && e.DevName != o.Dev {
		return false
	}
	return category(e) != ""
}

// category names the kind of cause an event is, "" for events that are no
// cause (destroy steps of the kernel's bookkeeping, exists snapshots...).
func category(e *rdma.Event) string {
	switch e.Kind {
	case rdma.EvOffCPU:
		return "off-cpu"
	case rdma.EvSpan:
		switch e.Func {
		case "ib_uverbs_reg_mr", "ib_umem_get":
			return "mr-reg"
		case "ib_dereg_mr_user":
			return "mr-dereg"
		case "ib_uverbs_handler_UVERBS_METHOD_QP_CREATE", "ib_uverbs_create_qp", "ib_uverbs_ex_create_qp":
			return "qp-create"
		case "ib_uverbs_handler_UVERBS_METHOD_CQ_CREATE", "ib_uverbs_create_cq", "ib_uverbs_ex_create_cq":
			return "cq-create"
		case "rdma_resolve_addr", "rdma_resolve_route", "rdma_connect_locked":
			return "rdma-cm"
		}
		return ""
	case rdma.EvCreate:
		switch e.Res {
		case rdma.ResMR:
			return "mr-reg"
		case rdma.ResQP:
			return "qp-create"
		case rdma.ResCQ:
			return "cq-create"
		case rdma.ResCMID:
			return "rdma-cm"
		}
		return ""
	case rdma.EvDestroy:
		if e.Res == rdma.ResMR {
			return "mr-dereg"
		}
		return ""
	case rdma.EvModify:
		if rdma.QPState(e.State) == rdma.QPStateErr {
			return "qp-error"
		}
		return ""
	case rdma.EvDevRegister, rdma.EvDevUnregister, rdma.EvDevUnregistered:
		return "device"
	case rdma.EvCMIDCreate, rdma.EvCMEventHandler, rdma.EvCMReqHandler, rdma.EvCMSendReq, rdma.EvCMSendRep,
		rdma.EvCMSendRTU, rdma.EvCMSendRej, rdma.EvCMDisconnect:
		return "rdma-cm"
	}
	return ""
}

// causes are Cause, and for an off-CPU spell also the task that ran last
// in the thread's place when it differs from Next (the longest runner, or
// the first where the tracer could not tell: a thread that came back on
// another CPU).
func causes(e *rdma.Event) []string {
	c := []string{Cause(e)}
	if e.Kind == rdma.EvOffCPU && e.Actor.Comm != "" && e.Actor.TID != e.Next.TID && e.Actor.TID != e.Owner.TID {
		c = append(c, "off-cpu:"+e.Actor.Comm)
	}
	return c
}

// Cause names what an event says about a slow sample: its category and
// who: for an off-CPU spell the task that ran instead ("off-cpu:hog"), for
// the rest the process that did it ("mr-reg:noise") or the device.
func Cause(e *rdma.Event) string {
	c := category(e)
	switch {
	case e.Kind == rdma.EvOffCPU:
		return c + ":" + e.Next.Comm
	case c == "device":
		return c + ":" + e.DevName
	case e.Has(rdma.EvHasOwner):
		return c + ":" + e.Owner.Comm
	case e.Owner.KernName != "":
		return c + ":" + e.Owner.KernName
	}
	return c
}
