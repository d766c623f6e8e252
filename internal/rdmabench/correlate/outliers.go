// Package correlate joins what a benchmark measured (bench values) with what
// the tracer saw (rdma.Event) on the same host and clock (CLOCK_MONOTONIC):
// why a latency sample was slow, where a connection's setup spent its time,
// and how much of a control-path verb was the kernel's work.
package correlate

import (
	"math"
	"slices"
	"sort"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
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
	// Summary is the series' summary when the caller has it already
	// (nil: computed from the samples).
	Summary *bench.Summary
}

// Outlier is one slow sample and the events that overlapped it.
type Outlier struct {
	Index  int // in the samples
	Sample bench.Sample
	Events []rdma.Event // in time order, the earliest MaxOutlierEvents
	More   int          // events that overlapped it beyond those
	Causes []string     // one name per kind of cause, sorted; none: nothing overlapped
}

// Result is every outlier of a series.
type Result struct {
	Threshold int64 // ns: samples above it are outliers
	Median    int64 // ns (perftest's t_typical)
	P99       int64 // ns
	// Total is how many samples are above Threshold; Outliers lists them
	// all when Complete, else a bounded subset of them (a long series:
	// bench.Recorder's worst samples and its reservoir), and Total is then
	// estimated from its histogram.
	Total    int
	Complete bool
	Outliers []Outlier
	// Causes counts, over the outliers listed, those that had each cause (an
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
// covers only half of its iteration). It is NewJoin, Add for each event
// and Result.
func Outliers(samples []bench.Sample, events []rdma.Event, o Options) Result {
	j := NewJoin(samples, o)
	for i := range events {
		j.Add(&events[i])
	}
	return j.Result()
}

// MaxOutlierEvents is how many of the events that overlapped one outlier
// are kept (the earliest); the rest are counted in Outlier.More, and all
// of them name its causes. Under an event flood a slow sample overlaps
// many; without a bound a long run's outliers would hold the whole trace.
const MaxOutlierEvents = 16

// MaxJoinEvents bounds the events all outliers of a series keep (each
// is 456 bytes): past it, outliers keep their causes and count their
// events in More. A series has at most 1 % of its samples as outliers.
const MaxJoinEvents = 100_000

// Join is Outliers as a stream: the series is known when it is made, the
// traced events come one at a time (in any order) and are not kept unless
// they overlap an outlier. Its memory is its outliers', whatever the
// number of events.
type Join struct {
	o      Options
	r      Result
	maxLat int64 // of the outliers: bounds the window an event can meet
	kept   int   // events the outliers keep, at most MaxJoinEvents
}

// NewJoin picks the outliers of samples (in time order, as a run gives
// them); o.Summary, if set, is the series' summary already computed.
func NewJoin(samples []bench.Sample, o Options) *Join {
	var s bench.Summary
	if o.Summary != nil {
		s = *o.Summary
	} else {
		s = bench.Summarize(samples)
	}
	return newJoin(s, o, func(threshold int64) ([]bench.Indexed, int, bool) {
		var out []bench.Indexed
		for i, smp := range samples {
			if smp.Lat > threshold {
				out = append(out, bench.Indexed{Index: i, Sample: smp})
			}
		}
		return out, len(out), true
	})
}

// NewJoinRecorder picks the outliers of a series a Recorder took: all of
// them while it kept every sample, else those among its candidates.
// o.Summary, if set, is r.Summary() already computed.
func NewJoinRecorder(r *bench.Recorder, o Options) *Join {
	var s bench.Summary
	if o.Summary != nil {
		s = *o.Summary
	} else {
		s = r.Summary()
	}
	return newJoin(s, o, r.Above)
}

func newJoin(s bench.Summary, o Options, above func(threshold int64) ([]bench.Indexed, int, bool)) *Join {
	factor := o.Factor
	if factor <= 0 {
		factor = 3
	}
	j := &Join{o: o}
	j.r = Result{Median: int64(math.Round(s.Typical * 1e3)), P99: int64(math.Round(s.P99 * 1e3)), Causes: map[string]int{}, Complete: true}
	j.r.Threshold = bench.Threshold(s, factor)
	if s.N <= bench.MeasureTail {
		return j
	}
	outs, total, complete := above(j.r.Threshold)
	j.r.Total, j.r.Complete = total, complete
	j.r.Outliers = make([]Outlier, 0, len(outs))
	for _, x := range outs {
		j.r.Outliers = append(j.r.Outliers, Outlier{Index: x.Index, Sample: x.Sample})
		j.maxLat = max(j.maxLat, x.Lat)
	}
	// Searched by start below.
	sort.SliceStable(j.r.Outliers, func(a, b int) bool { return j.r.Outliers[a].Sample.Start < j.r.Outliers[b].Sample.Start })
	return j
}

// Add joins one traced event: each outlier it overlaps keeps it (a copy)
// and its causes. e is not retained.
func (j *Join) Add(e *rdma.Event) {
	if len(j.r.Outliers) == 0 || !relevant(e, &j.o) {
		return
	}
	ev0, ev1 := int64(e.Mono), int64(e.End())
	// An outlier's window [start−lat, start+2·lat] meets [ev0, ev1] only
	// if its start lies in [ev0 − 2·maxLat, ev1 + maxLat].
	outs := j.r.Outliers
	k := sort.Search(len(outs), func(i int) bool { return outs[i].Sample.Start >= ev0-2*j.maxLat })
	var cs []string
	for ; k < len(outs) && outs[k].Sample.Start <= ev1+j.maxLat; k++ {
		o := &outs[k]
		lo, hi := max(0, o.Sample.Start-o.Sample.Lat), o.Sample.Start+2*o.Sample.Lat
		if ev0 > hi || ev1 < lo {
			continue
		}
		if cs == nil {
			cs = causes(e)
		}
		for _, c := range cs {
			if !slices.Contains(o.Causes, c) {
				o.Causes = append(o.Causes, c)
			}
		}
		j.keep(o, e)
	}
}

// keep inserts e among the outlier's events in time order (after those of
// the same time: the order they came in), keeping the earliest
// MaxOutlierEvents, within the series' MaxJoinEvents.
func (j *Join) keep(o *Outlier, e *rdma.Event) {
	i := sort.Search(len(o.Events), func(i int) bool { return o.Events[i].Mono > e.Mono })
	full := len(o.Events) == MaxOutlierEvents || (j.kept >= MaxJoinEvents && len(o.Events) > 0)
	switch {
	case i == len(o.Events) && full, j.kept >= MaxJoinEvents && len(o.Events) == 0:
		o.More++
		return
	case full:
		o.More++
		o.Events = o.Events[:len(o.Events)-1]
	default:
		j.kept++
	}
	o.Events = slices.Insert(o.Events, i, *e)
}

// Result is the outliers with their events and causes; the Join is spent.
func (j *Join) Result() Result {
	r := j.r
	slices.SortFunc(r.Outliers, func(a, b Outlier) int { return a.Index - b.Index })
	for i := range r.Outliers {
		o := &r.Outliers[i]
		slices.Sort(o.Causes)
		if len(o.Causes) == 0 {
			r.Causes[Nothing]++
		}
		for _, c := range o.Causes {
			r.Causes[c]++
		}
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
		switch e.Span.Func {
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
		switch e.Type {
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
		if e.Type == rdma.ResMR {
			return "mr-dereg"
		}
		return ""
	case rdma.EvModify:
		if e.QPState == rdma.QPStateErr {
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
	if e.Kind == rdma.EvOffCPU && e.Actor.Comm != "" && e.Actor.TID != e.OffCPU.Next.TID && e.Actor.TID != e.Owner.TID {
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
		return c + ":" + e.OffCPU.Next.Comm
	case c == "device":
		return c + ":" + e.DevName
	case e.Has(rdma.EvHasOwner):
		return c + ":" + e.Owner.Comm
	case e.Owner.KernName != "":
		return c + ":" + e.Owner.KernName
	}
	return c
}
