package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// This file renders rdmabench's results: perftest's latency report, the
// connection steps and the control-path operations, as a table for people
// and as NDJSON records (each with a "record" key) for programs. The records
// are few (one per run, connection or op), so encoding/json is fine here.

// BenchThread is one thread of a benchmark, for joining with traced events.
type BenchThread struct {
	PID int `json:"pid,omitempty"`
	TID int `json:"tid,omitempty"`
	CPU int `json:"cpu"` // -1: not pinned
}

// LatReport is one latency series (one size of one pass) as rdmabench
// reports it.
type LatReport struct {
	Op          string // write, send, read
	Dev         string
	Addr        string // the server's address and port
	OneProcess  bool   // both ends in this process
	Size        int
	Iters       int
	DurationSec float64 // -D; 0: a number of iterations
	Client      BenchThread
	Server      BenchThread // zero when the server is elsewhere
	Inline      bool
	MaxInline   int     // the QP's max_inline_data (0: unknown)
	ClockNs     float64 // one clock_gettime(CLOCK_MONOTONIC)
	EmptyPollNs float64 // one ibv_poll_cq that finds nothing
	Emulated    string  // why these are not hardware numbers ("" for hardware)
	Tracing     string  // "off", or what traced this series
	Summary     bench.Summary
	Causes      map[string]int // outlier causes from the correlation, when traced
	// Untraced is the headline series of the same size, run before the
	// tracer started: set on a traced series, for the tracer's cost.
	Untraced *bench.Summary
	// Tracer is what the tracer did during a traced series (nil: unknown).
	Tracer *TracerActivity
}

// TracerActivity is the tracer's own activity during one traced series,
// its connection included: each wakeup takes a CPU, maybe from an end.
type TracerActivity struct {
	Wakeups int64   // its threads' voluntary context switches
	Seconds float64 // how long the series took
}

var latTitles = map[string]string{"write": "RDMA_Write Latency Test", "send": "Send Latency Test", "read": "RDMA_Read Latency Test"}

const (
	resultLine = "---------------------------------------------------------------------------------------\n"
	latColumns = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]   max[usec]"
)

// LatTable writes a lat run as perftest lays its report out: one header
// that says what ran and how it was timed, the column line, a row per
// message size (plus the true maximum, which perftest does not show) and
// the closing line. These rows are the untraced pass: the headline. When
// the run is also traced, a second table follows with the traced pass's
// rows and each size's traced/untraced ratio; the outliers come after it.
type LatTable struct {
	W     io.Writer
	Sizes []int  // the sizes the run covers, for the header
	Trace string // what the traced pass will be ("" for none), for the header

	rows, traced bool // a header (of either table) was written
	hist         bool // a row's percentiles came from a histogram
	wakeups      []string
}

// Row writes the headline row of one size, after the header if it is the
// first.
func (t *LatTable) Row(r *LatReport) error {
	var b strings.Builder
	if !t.rows {
		t.rows = true
		t.header(&b, r)
		b.WriteString(resultLine + latColumns + "\n")
	}
	t.hist = t.hist || r.Summary.FromHistogram
	b.WriteString(latRow(r) + "\n")
	_, err := io.WriteString(t.W, b.String())
	return err
}

// End closes the headline table.
func (t *LatTable) End() error {
	return t.end()
}

// TracedRow writes one size's traced row with its ratio to the headline,
// after the traced table's header if it is the first.
func (t *LatTable) TracedRow(r *LatReport) error {
	var b strings.Builder
	if !t.traced {
		t.traced, t.hist = true, false
		fmt.Fprintf(&b, " Traced pass     : %s\n", formats.Sanitize(r.Tracing))
		b.WriteString("                   the same series again, traced: what the tracer costs, and why samples were slow\n")
		b.WriteString(resultLine + latColumns + "   traced/untraced t_typical\n")
	}
	t.hist = t.hist || r.Summary.FromHistogram
	b.WriteString(latRow(r))
	if u := r.Untraced; u != nil && u.Typical > 0 {
		fmt.Fprintf(&b, "   x%.2f", r.Summary.Typical/u.Typical)
	}
	if a := r.Tracer; a != nil && a.Seconds > 0 {
		t.wakeups = append(t.wakeups, fmt.Sprintf("%d in %.2f s (%.1f a second) at %d bytes", a.Wakeups, a.Seconds, float64(a.Wakeups)/a.Seconds, r.Size))
	}
	b.WriteString("\n")
	_, err := io.WriteString(t.W, b.String())
	return err
}

// TracedEnd closes the traced table, and says how often the tracer woke.
func (t *LatTable) TracedEnd() error {
	if err := t.end(); err != nil || len(t.wakeups) == 0 {
		return err
	}
	_, err := fmt.Fprintf(t.W, " Tracer wakeups  : %s\n", strings.Join(t.wakeups, ", "))
	return err
}

// NoTrace says, under the headline table, why no traced pass follows
// although one was asked for.
func (t *LatTable) NoTrace(why string) error {
	_, err := fmt.Fprintf(t.W, " Traced pass     : none: %s\n", formats.Sanitize(why))
	return err
}

func (t *LatTable) end() error {
	var b strings.Builder
	b.WriteString(resultLine)
	if t.hist {
		fmt.Fprintf(&b, " Percentiles     : t_typical and the percentiles from a histogram (within %.3f %%; exact among the %d worst),\n"+
			"                   t_min, t_max, max, t_avg and t_stdev exact: the series outgrew the %d samples kept whole\n",
			100*bench.HistRelErr, bench.WorstSamples, bench.ExactSamples)
	}
	_, err := io.WriteString(t.W, b.String())
	return err
}

// header says what ran, from the first series: what differs between
// sizes (the threads, inline or not) is in each size's -j record.
func (t *LatTable) header(b *strings.Builder, r *LatReport) {
	b.WriteString(resultLine)
	fmt.Fprintf(b, "                    %s (rdmabench)\n", latTitles[r.Op])
	fmt.Fprintf(b, " Device          : %s\n", formats.Sanitize(r.Dev))
	fmt.Fprintf(b, " Connection      : RC over rdma_cm to %s\n", formats.Sanitize(r.Addr))
	if r.OneProcess {
		fmt.Fprintf(b, " Ends            : both in pid %d: server %s, client %s\n", r.Client.PID, cpu(r.Server.CPU), cpu(r.Client.CPU))
	} else {
		fmt.Fprintf(b, " Ends            : client pid %d %s, server on the other host\n", r.Client.PID, cpu(r.Client.CPU))
	}
	sizes := t.Sizes
	if len(sizes) == 0 {
		sizes = []int{r.Size}
	}
	inline := "not inline"
	switch {
	case r.Op == "read":
	case len(sizes) == 1 && r.Inline:
		inline = "inline"
	case len(sizes) > 1 && r.MaxInline > 0:
		inline = fmt.Sprintf("inline up to %d bytes", r.MaxInline)
	}
	if len(sizes) == 1 {
		fmt.Fprintf(b, " Message size    : %d bytes, %s\n", sizes[0], inline)
	} else {
		fmt.Fprintf(b, " Message sizes   : %d to %d bytes, %d sizes, %s\n", slices.Min(sizes), slices.Max(sizes), len(sizes), inline)
	}
	if r.DurationSec > 0 {
		fmt.Fprintf(b, " Duration        : %g s per size\n", r.DurationSec)
	} else {
		fmt.Fprintf(b, " Iterations      : %d\n", r.Iters)
	}
	half := "half of each round trip, as perftest"
	if r.Op == "read" {
		half = "each whole round trip, as perftest"
	}
	calls := "one C call runs a series"
	if r.Summary.N > bench.ChunkSamples || r.DurationSec > 0 {
		calls = fmt.Sprintf("one C call per %d samples", bench.ChunkSamples)
	}
	fmt.Fprintf(b, " Samples         : CLOCK_MONOTONIC at each post, %s; %s\n", half, calls)
	fmt.Fprintf(b, " Timestamp cost  : %.1f ns per clock_gettime, %.1f ns per empty ibv_poll_cq\n", r.ClockNs, r.EmptyPollNs)
	if t.Trace != "" {
		b.WriteString(" Tracing         : off in these rows; a traced pass follows them\n")
	} else {
		fmt.Fprintf(b, " Tracing         : %s\n", formats.Sanitize(r.Tracing))
	}
	if r.Emulated != "" {
		fmt.Fprintf(b, " Not hardware    : %s\n", formats.Sanitize(r.Emulated))
	}
}

func latRow(r *LatReport) string {
	s := r.Summary
	return fmt.Sprintf(" %-7d %-11d    %-11.2f    %-11.2f  %-15.2f    %-11.2f    %-13.2f   %-20.2f   %-22.2f   %.2f",
		r.Size, s.N, s.Min, s.Max, s.Typical, s.Avg, s.Stdev, s.P99, s.P999, s.TrueMax)
}

func cpu(c int) string {
	if c < 0 {
		return "not pinned"
	}
	return fmt.Sprintf("on CPU %d", c)
}

// LatUS has perftest's names for its columns (its --out_json keys), plus
// the true maximum.
type LatUS struct {
	Min     float64 `json:"t_min"`
	Max     float64 `json:"t_max"`
	Typical float64 `json:"t_typical"`
	Avg     float64 `json:"t_avg"`
	Stdev   float64 `json:"t_stdev"`
	P99     float64 `json:"percentile_99"`
	P999    float64 `json:"percentile_99.9"`
	TrueMax float64 `json:"max"`
}

// Lat's record kinds: the headline (untraced) series and the traced one.
const (
	RecordLat       = "summary"
	RecordLatTraced = "traced-summary"
)

// LatRecord is lat's record of one series: RecordLat for the untraced
// pass (the headline, what perftest prints), RecordLatTraced for the
// traced pass, with the tracer's cost against the headline.
type LatRecord struct {
	Record      string         `json:"record"`
	Bench       string         `json:"bench"`
	Op          string         `json:"op"`
	Dev         string         `json:"dev"`
	Addr        string         `json:"addr"`
	Size        int            `json:"size"`
	Iterations  int            `json:"iterations"`
	DurationSec float64        `json:"duration-s,omitempty"`
	LatUS       LatUS          `json:"lat-us"`
	Inline      bool           `json:"inline"`
	Clock       string         `json:"clock"`
	ClockNs     float64        `json:"clock-ns"`
	EmptyPollNs float64        `json:"empty-poll-ns"`
	Client      BenchThread    `json:"client"`
	Server      *BenchThread   `json:"server,omitempty"`
	Tracing     string         `json:"tracing"`
	Emulated    string         `json:"emulated,omitempty"`
	Causes      map[string]int `json:"causes,omitempty"`
	// FromHistogram: t_typical and the percentiles come from a histogram
	// (a series past bench.ExactSamples), within HistRelErr.
	FromHistogram bool `json:"from-histogram,omitempty"`
	// On a traced series: the headline's t_typical and traced/untraced.
	UntracedTypicalUS float64 `json:"untraced-t_typical-us,omitempty"`
	TracerRatio       float64 `json:"tracer-ratio,omitempty"`
	// On a traced series: the tracer's wakeups during it, and how long it
	// took (its connection included).
	TracerWakeups *int64  `json:"tracer-wakeups,omitempty"`
	TracedSec     float64 `json:"traced-s,omitempty"`
}

// WriteLatJSON writes r's record: RecordLatTraced when r has the headline
// to compare with (r.Untraced), RecordLat otherwise.
func WriteLatJSON(w io.Writer, r *LatReport) error {
	s := r.Summary
	rec := LatRecord{Record: RecordLat, Bench: "lat", Op: r.Op, Dev: r.Dev, Addr: r.Addr, Size: r.Size,
		Iterations: s.N, DurationSec: r.DurationSec,
		LatUS:  LatUS{round2(s.Min), round2(s.Max), round2(s.Typical), round2(s.Avg), round2(s.Stdev), round2(s.P99), round2(s.P999), round2(s.TrueMax)},
		Inline: r.Inline, Clock: "CLOCK_MONOTONIC", ClockNs: round2(r.ClockNs), EmptyPollNs: round2(r.EmptyPollNs),
		Client: r.Client, Tracing: r.Tracing, Emulated: r.Emulated, Causes: r.Causes, FromHistogram: s.FromHistogram}
	if r.OneProcess {
		rec.Server = &r.Server
	}
	if u := r.Untraced; u != nil {
		rec.Record = RecordLatTraced
		if u.Typical > 0 {
			rec.UntracedTypicalUS, rec.TracerRatio = round2(u.Typical), round3(s.Typical/u.Typical)
		}
	}
	if a := r.Tracer; a != nil {
		rec.TracerWakeups, rec.TracedSec = &a.Wakeups, round3(a.Seconds)
	}
	return writeRecord(w, rec)
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func writeRecord(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ConnReport is a connection-setup run.
type ConnReport struct {
	Addr        string
	Concurrency int
	OneProcess  bool
	Emulated    string
	Tracing     string
	Conns       []bench.Conn
}

type stepRow struct {
	side, step string
	durs       []int64
}

// stepRows gathers each side's step durations in step order, then the
// client's total.
func (r *ConnReport) stepRows() (rows []stepRow, total []int64) {
	idx := map[string]int{}
	add := func(side string, s bench.Step) {
		k := side + "/" + s.Name
		i, ok := idx[k]
		if !ok {
			i = len(rows)
			idx[k] = i
			rows = append(rows, stepRow{side: side, step: s.Name})
		}
		rows[i].durs = append(rows[i].durs, s.Dur)
	}
	for _, c := range r.Conns {
		for _, s := range c.Client.Steps {
			add("client", s)
		}
		total = append(total, c.End-c.Start)
	}
	for _, c := range r.Conns {
		for _, s := range c.Server.Steps {
			add("server", s)
		}
	}
	return rows, total
}

func sum(v []int64) (s int64) {
	for _, x := range v {
		s += x
	}
	return s
}

// WriteConnTable writes each step's distribution and its share of the
// client's total, and how much of the total the client's steps cover.
func WriteConnTable(w io.Writer, r *ConnReport) error {
	rows, total := r.stepRows()
	ends := "both ends in this process"
	if !r.OneProcess {
		ends = "client only, the server is elsewhere"
	}
	fmt.Fprintf(w, "rdma_cm connection setup: %d connections to %s, %d at a time, %s\n", len(r.Conns), formats.Sanitize(r.Addr), r.Concurrency, ends)
	fmt.Fprintf(w, "timing: CLOCK_MONOTONIC around each call, and until its rdma_cm event where there is one (cmtime's steps); µs\n")
	fmt.Fprintf(w, "tracing: %s\n", formats.Sanitize(r.Tracing))
	if r.Emulated != "" {
		fmt.Fprintf(w, "not hardware: %s\n", formats.Sanitize(r.Emulated))
	}
	t := formats.NewTable("SIDE", "STEP", "N", "MIN", "P50", "P90", "P99", "MAX", "SHARE")
	tot := sum(total)
	var clientSum int64
	totalRow := func() {
		d := bench.Distribution(total)
		t.Append("client", "total", fmt.Sprint(d.N), us(d.Min), us(d.P50), us(d.P90), us(d.P99), us(d.Max), "100%")
	}
	for i, row := range rows {
		if row.side == "server" && (i == 0 || rows[i-1].side == "client") {
			totalRow()
		}
		d := bench.Distribution(row.durs)
		share := "-"
		if row.side == "client" {
			clientSum += sum(row.durs)
			if tot > 0 {
				share = fmt.Sprintf("%.1f%%", 100*float64(sum(row.durs))/float64(tot))
			}
		}
		t.Append(row.side, row.step, fmt.Sprint(d.N), us(d.Min), us(d.P50), us(d.P90), us(d.P99), us(d.Max), share)
	}
	if len(rows) == 0 || rows[len(rows)-1].side == "client" {
		totalRow()
	}
	if err := t.Render(w); err != nil {
		return err
	}
	if tot > 0 {
		_, err := fmt.Fprintf(w, "the client's steps cover %.1f%% of its total (the rest is the benchmark's own bookkeeping between steps)\n", 100*float64(clientSum)/float64(tot))
		return err
	}
	return nil
}

func us(x float64) string { return fmt.Sprintf("%.1f", x) }

type StepRecord struct {
	Name  string  `json:"name"`
	Start int64   `json:"ts"`
	DurUS float64 `json:"dur-us"`
}

type SideRecord struct {
	PID   int          `json:"pid,omitempty"`
	TID   int          `json:"tid,omitempty"`
	Src   string       `json:"src,omitempty"`
	Dst   string       `json:"dst,omitempty"`
	Steps []StepRecord `json:"steps"`
}

type ConnRecord struct {
	Record  string      `json:"record"`
	Index   int         `json:"index"`
	Start   int64       `json:"ts"`
	TotalUS float64     `json:"total-us"`
	Client  SideRecord  `json:"client"`
	Server  *SideRecord `json:"server,omitempty"`
}

func sideOf(s bench.Side) SideRecord {
	j := SideRecord{PID: s.PID, TID: s.TID, Steps: []StepRecord{}}
	if s.Src.IsValid() {
		j.Src, j.Dst = s.Src.String(), s.Dst.String()
	}
	for _, st := range s.Steps {
		j.Steps = append(j.Steps, StepRecord{st.Name, st.Start, round3(float64(st.Dur) / 1e3)})
	}
	return j
}

type DistRecord struct {
	Side  string  `json:"side,omitempty"`
	Step  string  `json:"step,omitempty"`
	N     int     `json:"n"`
	Min   float64 `json:"min-us"`
	P50   float64 `json:"p50-us"`
	P90   float64 `json:"p90-us"`
	P99   float64 `json:"p99-us"`
	Max   float64 `json:"max-us"`
	Share float64 `json:"share,omitempty"`
}

func distOf(d bench.Dist) DistRecord {
	return DistRecord{N: d.N, Min: round3(d.Min), P50: round3(d.P50), P90: round3(d.P90), P99: round3(d.P99), Max: round3(d.Max)}
}

type ConnSummary struct {
	Record      string       `json:"record"`
	Bench       string       `json:"bench"`
	Addr        string       `json:"addr"`
	Connections int          `json:"connections"`
	Concurrency int          `json:"concurrency"`
	Steps       []DistRecord `json:"steps"`
	Total       DistRecord   `json:"total"`
	Tracing     string       `json:"tracing"`
	Emulated    string       `json:"emulated,omitempty"`
}

// WriteConnJSON writes a connection record per connection and a summary.
func WriteConnJSON(w io.Writer, r *ConnReport) error {
	for _, c := range r.Conns {
		rec := ConnRecord{Record: "connection", Index: c.Index, Start: c.Start, TotalUS: round3(float64(c.End-c.Start) / 1e3), Client: sideOf(c.Client)}
		if len(c.Server.Steps) > 0 {
			s := sideOf(c.Server)
			rec.Server = &s
		}
		if err := writeRecord(w, rec); err != nil {
			return err
		}
	}
	rows, total := r.stepRows()
	tot := sum(total)
	sm := ConnSummary{Record: "summary", Bench: "conn", Addr: r.Addr, Connections: len(r.Conns), Concurrency: r.Concurrency,
		Total: distOf(bench.Distribution(total)), Tracing: r.Tracing, Emulated: r.Emulated, Steps: []DistRecord{}}
	for _, row := range rows {
		d := distOf(bench.Distribution(row.durs))
		d.Side, d.Step = row.side, row.step
		if row.side == "client" && tot > 0 {
			d.Share = round3(float64(sum(row.durs)) / float64(tot))
		}
		sm.Steps = append(sm.Steps, d)
	}
	return writeRecord(w, sm)
}

// CtrlReport is a control-path run.
type CtrlReport struct {
	Dev      string
	Emulated string
	Tracing  string
	Ops      []bench.Op
}

type opKey struct {
	name     string
	size     int64
	prefault bool
}

func (r *CtrlReport) groups() ([]opKey, map[opKey][]int64) {
	var keys []opKey
	g := map[opKey][]int64{}
	for _, o := range r.Ops {
		k := opKey{o.Name, o.Size, o.Prefault}
		if _, ok := g[k]; !ok {
			keys = append(keys, k)
		}
		g[k] = append(g[k], o.Dur)
	}
	return keys, g
}

func hasMR(ops []bench.Op, prefault bool) bool {
	for _, o := range ops {
		if o.Name == "reg-mr" && o.Prefault == prefault {
			return true
		}
	}
	return false
}

// WriteCtrlTable writes each operation's distribution (reg-mr and dereg-mr
// per size and prefault choice) and the registration fit.
func WriteCtrlTable(w io.Writer, r *CtrlReport) error {
	fmt.Fprintf(w, "control path on %s: each call timed with CLOCK_MONOTONIC around it, on one thread; µs\n", formats.Sanitize(r.Dev))
	fmt.Fprintf(w, "tracing: %s\n", formats.Sanitize(r.Tracing))
	if r.Emulated != "" {
		fmt.Fprintf(w, "not hardware: %s\n", formats.Sanitize(r.Emulated))
	}
	keys, g := r.groups()
	t := formats.NewTable("OP", "SIZE", "MEMORY", "N", "MIN", "P50", "MAX", "AVG")
	for _, k := range keys {
		d := bench.Distribution(g[k])
		size, mem := "-", "-"
		if k.size > 0 {
			size = SizeString(k.size)
			mem = "untouched"
			if k.prefault {
				mem = "prefaulted"
			}
		}
		t.Append(k.name, size, mem, fmt.Sprint(d.N), us(d.Min), us(d.P50), us(d.Max), us(d.Avg))
	}
	if err := t.Render(w); err != nil {
		return err
	}
	for _, pf := range []bool{true, false} {
		if !hasMR(r.Ops, pf) {
			continue
		}
		f, perGiB := bench.RegFit(r.Ops, pf)
		mem := "untouched memory"
		if pf {
			mem = "prefaulted memory"
		}
		fmt.Fprintf(w, "reg-mr over size, %s: %.1f µs per GiB + %.1f µs (least squares, r² %.3f, %d registrations)\n", mem, perGiB, f.Intercept, f.R2, f.N)
	}
	return nil
}

// SizeString prints a size as perftest-like users write it: 4K, 1M, 1G.
func SizeString(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	return fmt.Sprint(n)
}

type OpRecord struct {
	Record   string  `json:"record"`
	Op       string  `json:"op"`
	Size     int64   `json:"size,omitempty"`
	Prefault *bool   `json:"prefault,omitempty"`
	TID      int     `json:"tid"`
	Start    int64   `json:"ts"`
	DurUS    float64 `json:"dur-us"`
}

type RegFitRecord struct {
	Prefault    bool    `json:"prefault"`
	USPerGiB    float64 `json:"us-per-gib"`
	InterceptUS float64 `json:"intercept-us"`
	R2          float64 `json:"r2"`
	N           int     `json:"n"`
}

type OpDist struct {
	Op       string `json:"op"`
	Size     int64  `json:"size,omitempty"`
	Prefault *bool  `json:"prefault,omitempty"`
	DistRecord
}

type CtrlSummary struct {
	Record   string         `json:"record"`
	Bench    string         `json:"bench"`
	Dev      string         `json:"dev"`
	Ops      []OpDist       `json:"ops"`
	RegFit   []RegFitRecord `json:"reg-fit,omitempty"`
	Tracing  string         `json:"tracing"`
	Emulated string         `json:"emulated,omitempty"`
}

// WriteCtrlJSON writes an op record per operation and a summary.
func WriteCtrlJSON(w io.Writer, r *CtrlReport) error {
	for _, o := range r.Ops {
		rec := OpRecord{Record: "op", Op: o.Name, TID: o.TID, Start: o.Start, DurUS: round3(float64(o.Dur) / 1e3)}
		if o.Size > 0 {
			rec.Size, rec.Prefault = o.Size, &o.Prefault
		}
		if err := writeRecord(w, rec); err != nil {
			return err
		}
	}
	keys, g := r.groups()
	sm := CtrlSummary{Record: "summary", Bench: "ctrl", Dev: r.Dev, Tracing: r.Tracing, Emulated: r.Emulated, Ops: []OpDist{}}
	for _, k := range keys {
		d := OpDist{Op: k.name, DistRecord: distOf(bench.Distribution(g[k]))}
		if k.size > 0 {
			pf := k.prefault
			d.Size, d.Prefault = k.size, &pf
		}
		sm.Ops = append(sm.Ops, d)
	}
	for _, pf := range []bool{true, false} {
		if hasMR(r.Ops, pf) {
			f, perGiB := bench.RegFit(r.Ops, pf)
			sm.RegFit = append(sm.RegFit, RegFitRecord{pf, round3(perGiB), round3(f.Intercept), round3(f.R2), f.N})
		}
	}
	return writeRecord(w, sm)
}
