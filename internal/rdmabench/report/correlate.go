package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/correlate"
)

// The correlation's records: `outlier` (a slow sample and what overlapped
// it), `phases` (one connection split into correlate.Phases, µs each) with
// a `phases-summary`, and `op-kernel` (a control-path op beside the
// kernel's time for it). Times (ts) are CLOCK_MONOTONIC ns, as the samples'.

// jstr is a string that JSON-encodes with formats.AppendJSONString: no control
// character of a process name (DEL and C1 included) reaches a terminal raw.
type jstr string

func (s jstr) MarshalJSON() ([]byte, error) { return formats.AppendJSONString(nil, string(s)), nil }

type OutlierEvent struct {
	Event     string  `json:"event"`
	Res       string  `json:"res,omitempty"`
	Func      string  `json:"func,omitempty"`
	PID       uint32  `json:"pid,omitempty"`
	Comm      jstr    `json:"comm,omitempty"`
	TS        uint64  `json:"ts"`
	DurUS     float64 `json:"dur-us,omitempty"`
	Size      uint64  `json:"size,omitempty"`
	Preempted bool    `json:"preempted,omitempty"`
	NextPID   *uint32 `json:"next-pid,omitempty"`
	NextComm  jstr    `json:"next-comm,omitempty"`
	// The task that ran last in its place, when another than next: the
	// second name an off-CPU spell gives among the causes.
	LastPID  uint32 `json:"last-pid,omitempty"`
	LastComm jstr   `json:"last-comm,omitempty"`
}

type OutlierRecord struct {
	Record string         `json:"record"`
	Index  int            `json:"index"`
	TS     int64          `json:"ts"`
	LatUS  float64        `json:"lat-us"`
	Size   int            `json:"size,omitempty"` // the message size of the run
	Causes []jstr         `json:"causes"`
	Events []OutlierEvent `json:"events"`
	// More counts the events that overlapped it beyond those listed
	// (correlate.MaxOutlierEvents, the earliest, are).
	More int `json:"more-events,omitempty"`
}

func eventOf(e *rdma.Event) OutlierEvent {
	o := OutlierEvent{Event: e.Kind.String(), Func: e.Span.Func, TS: e.Mono, Size: e.Size, Preempted: e.Has(rdma.EvPreempted)}
	if e.Has(rdma.EvHasRes) {
		o.Res = e.Type.String()
	}
	if e.Has(rdma.EvHasOwner) {
		o.PID, o.Comm = e.Owner.PID, jstr(e.Owner.Comm)
	}
	if e.Has(rdma.EvHasDur) {
		o.DurUS = round3(float64(e.Length()) / 1e3)
	}
	if e.Kind == rdma.EvOffCPU {
		pid := e.OffCPU.Next.TID
		o.NextPID, o.NextComm = &pid, jstr(e.OffCPU.Next.Comm)
		if e.Actor.Comm != "" && e.Actor.TID != e.OffCPU.Next.TID && e.Actor.TID != e.Owner.TID {
			o.LastPID, o.LastComm = e.Actor.TID, jstr(e.Actor.Comm)
		}
	}
	return o
}

func causes(cs []string) []jstr {
	out := []jstr{}
	for _, c := range cs {
		out = append(out, jstr(c))
	}
	if len(cs) == 0 {
		out = append(out, correlate.Nothing)
	}
	return out
}

// WriteOutliersJSON writes one outlier record per slow sample of size.
func WriteOutliersJSON(w io.Writer, r *correlate.Result, size int) error {
	for _, o := range r.Outliers {
		rec := OutlierRecord{Record: "outlier", Index: o.Index, TS: o.Sample.Start, LatUS: round3(float64(o.Sample.Lat) / 1e3),
			Size: size, Causes: causes(o.Causes), Events: []OutlierEvent{}, More: o.More}
		for i := range o.Events {
			rec.Events = append(rec.Events, eventOf(&o.Events[i]))
		}
		if err := writeRecord(w, rec); err != nil {
			return err
		}
	}
	return nil
}

// WriteOutliersText lists the outliers, each with what overlapped it, and
// the cause counts, under the latency table.
func WriteOutliersText(w io.Writer, r *correlate.Result) error {
	var b strings.Builder
	if r.Complete || r.Total <= len(r.Outliers) {
		fmt.Fprintf(&b, " Outliers       : %d above %.2f usec (max of p99 %.2f and %.2f x median %.2f)\n", len(r.Outliers),
			float64(r.Threshold)/1e3, float64(r.P99)/1e3, float64(r.Threshold)/max(1, float64(r.Median)), float64(r.Median)/1e3)
	} else {
		fmt.Fprintf(&b, " Outliers       : about %d above %.2f usec (max of p99 %.2f and %.2f x median %.2f); %d listed:\n"+
			"                  the worst, and a random sample of the rest (causes count those listed)\n", r.Total,
			float64(r.Threshold)/1e3, float64(r.P99)/1e3, float64(r.Threshold)/max(1, float64(r.Median)), float64(r.Median)/1e3, len(r.Outliers))
	}
	for _, o := range r.Outliers {
		fmt.Fprintf(&b, "  #%-7d ts %d  %10.2f usec  ", o.Index, o.Sample.Start, float64(o.Sample.Lat)/1e3)
		if len(o.Events) == 0 && o.More == 0 {
			b.WriteString("nothing traced overlapped it\n")
			continue
		}
		b.WriteString(formats.Sanitize(strings.Join(o.Causes, ", ")) + "\n")
		if len(o.Events) == 0 {
			fmt.Fprintf(&b, "      %d events, not kept (a run's outliers keep %d in all)\n", o.More, correlate.MaxJoinEvents)
		}
		for i := range o.Events {
			if i == maxOutlierEvents && len(o.Events)+o.More > maxOutlierEvents+1 {
				if o.More > 0 {
					fmt.Fprintf(&b, "      ... and %d more (-j lists the first %d)\n", len(o.Events)-i+o.More, len(o.Events))
				} else {
					fmt.Fprintf(&b, "      ... and %d more (-j lists them all)\n", len(o.Events)-i)
				}
				break
			}
			b.WriteString("      " + eventText(&o.Events[i], o.Sample.Start) + "\n")
		}
	}
	if len(r.Causes) > 0 {
		b.WriteString(" Causes         :")
		keys := make([]string, 0, len(r.Causes))
		for k := range r.Causes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s %d", formats.Sanitize(k), r.Causes[k])
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxOutlierEvents bounds the events the text view lists per outlier:
// under soft-RoCE a slow sample overlaps dozens of short spells.
const maxOutlierEvents = 8

// eventText is one overlapping event, its time relative to the sample's start.
func eventText(e *rdma.Event, start int64) string {
	rel := float64(int64(e.Mono)-start) / 1e3
	var b strings.Builder
	fmt.Fprintf(&b, "%+10.1f us  %-8s", rel, e.Kind.String())
	switch e.Kind {
	case rdma.EvOffCPU:
		how := "asleep"
		if e.Has(rdma.EvPreempted) {
			how = "preempted"
		}
		fmt.Fprintf(&b, " %s[%d] %s %.1f us, instead: %s[%d]", formats.Sanitize(e.Owner.Comm), e.Owner.TID, how,
			float64(e.OffCPU.Dur)/1e3, formats.Sanitize(e.OffCPU.Next.Comm), e.OffCPU.Next.TID)
		if e.Actor.TID != e.OffCPU.Next.TID && e.Actor.TID != e.Owner.TID && e.Actor.Comm != "" {
			fmt.Fprintf(&b, " ... %s[%d]", formats.Sanitize(e.Actor.Comm), e.Actor.TID)
		}
		return b.String()
	case rdma.EvSpan:
		fmt.Fprintf(&b, " %s %.1f us", e.Span.Func, float64(e.Span.Dur)/1e3)
	default:
		if e.Has(rdma.EvHasRes) {
			b.WriteString(" " + e.Type.String())
		}
		if e.Has(rdma.EvHasDev) {
			b.WriteString(" " + formats.Sanitize(e.DevName))
		}
	}
	if e.Has(rdma.EvHasSize) {
		b.WriteString(" size " + SizeString(int64(e.Size)))
	}
	if e.Has(rdma.EvHasOwner) {
		fmt.Fprintf(&b, " by %s[%d]", formats.Sanitize(e.Owner.Comm), e.Owner.PID)
	}
	return b.String()
}

type phaseJSON struct {
	Name string  `json:"name"`
	US   float64 `json:"us"`
}

type phasesRecord struct {
	Record  string      `json:"record"`
	Index   int         `json:"index"`
	TS      int64       `json:"ts"`
	TotalUS float64     `json:"total-us"`
	Phases  []phaseJSON `json:"phases"`
	Missing []string    `json:"missing,omitempty"`
}

type phasesSummary struct {
	Record string       `json:"record"`
	N      int          `json:"connections"`
	SumOK  bool         `json:"phases-add-up"`
	Phases []DistRecord `json:"phases"`
}

// WritePhasesJSON writes a phases record per connection and a summary.
func WritePhasesJSON(w io.Writer, r *correlate.ConnResult) error {
	for _, c := range r.Conns {
		rec := phasesRecord{Record: "phases", Index: c.Index, TS: c.Start, TotalUS: round3(float64(c.Total) / 1e3), Missing: c.Missing}
		for i, p := range c.Phases {
			rec.Phases = append(rec.Phases, phaseJSON{Name: correlate.Phases[i], US: round3(float64(p) / 1e3)})
		}
		if err := writeRecord(w, rec); err != nil {
			return err
		}
	}
	sum := phasesSummary{Record: "phases-summary", N: len(r.Conns), SumOK: r.SumOK}
	for _, s := range r.Stats {
		d := distOf(s.Dist)
		d.Step, d.Share = s.Name, round3(s.Share)
		sum.Phases = append(sum.Phases, d)
	}
	return writeRecord(w, sum)
}

// WritePhasesText is the per-phase table of a conn run.
func WritePhasesText(w io.Writer, r *correlate.ConnResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, " Phases (traced, %d connections; they add up to the total: %v)\n", len(r.Conns), r.SumOK)
	fmt.Fprintf(&b, " %-16s %10s %10s %10s %10s %7s\n", "phase", "p50[usec]", "p90[usec]", "p99[usec]", "max[usec]", "share")
	for _, s := range r.Stats {
		fmt.Fprintf(&b, " %-16s %10.1f %10.1f %10.1f %10.1f %6.1f%%\n", s.Name, s.Dist.P50, s.Dist.P90, s.Dist.P99, s.Dist.Max, 100*s.Share)
	}
	missing := map[string]int{}
	for _, c := range r.Conns {
		for _, m := range c.Missing {
			missing[m]++
		}
	}
	for _, p := range correlate.Phases {
		if n := missing[p]; n > 0 {
			fmt.Fprintf(&b, " not traced in %d connections: %s (its time is in the next phase)\n", n, p)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type opKernelRecord struct {
	Record   string  `json:"record"`
	Name     string  `json:"name"`
	Size     int64   `json:"size,omitempty"`
	Prefault bool    `json:"prefault,omitempty"`
	TS       int64   `json:"ts"`
	UserUS   float64 `json:"user-us"`
	Func     string  `json:"func,omitempty"`
	KernelUS float64 `json:"kernel-us"`
	PinUS    float64 `json:"pin-us,omitempty"`
}

// WriteOpKernelJSON writes an op-kernel record per op.
func WriteOpKernelJSON(w io.Writer, ops []correlate.OpKernel) error {
	for _, o := range ops {
		rec := opKernelRecord{Record: "op-kernel", Name: o.Op.Name, Size: o.Op.Size, Prefault: o.Op.Prefault, TS: o.Op.Start,
			UserUS: round3(float64(o.Op.Dur) / 1e3), Func: o.Func, KernelUS: round3(float64(o.Kernel) / 1e3), PinUS: round3(float64(o.Pin) / 1e3)}
		if err := writeRecord(w, rec); err != nil {
			return err
		}
	}
	return nil
}

// WriteOpKernelText is the user-seen time beside the kernel's, per op.
func WriteOpKernelText(w io.Writer, ops []correlate.OpKernel) error {
	var b strings.Builder
	fmt.Fprintf(&b, " %-16s %8s %12s %12s %12s  %s\n", "op", "size", "user[usec]", "kernel[usec]", "pin[usec]", "kernel function")
	for _, o := range ops {
		size := "-"
		if o.Op.Size > 0 {
			size = SizeString(o.Op.Size)
		}
		fn := o.Func
		if fn == "" {
			fn = "(not traced)"
		}
		fmt.Fprintf(&b, " %-16s %8s %12.1f %12.1f %12.1f  %s\n", o.Op.Name, size, float64(o.Op.Dur)/1e3, float64(o.Kernel)/1e3, float64(o.Pin)/1e3, fn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
