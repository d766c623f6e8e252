package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/correlate"
)

// BurstReport is a connection burst (rdmabench burst): the untraced pass,
// the headline, and the traced one with what the tracer did and lost.
type BurstReport struct {
	Dev       string
	Mode      string // "verbs" or "rdma_cm": how the pairs were connected
	Order     string // over verbs: "nccl", "pairs" or "phases" (verbs.BurstOrder)
	Ranks     int
	QPs       int  // per rank
	Threads   bool // ranks are threads of one process, not processes
	Hold      time.Duration
	Emulated  string // why these are not hardware numbers ("" for hardware)
	Tracing   string // "off", "unavailable: why", or what traced
	RankSteps []string
	Untraced  bench.BurstPass
	Traced    *bench.BurstPass
	Tracer    *BurstTracer
}

// BurstTracer is what the tracer did during the traced pass.
type BurstTracer struct {
	Events int // events it wrote, from its start to its last
	// Seen, Shown, Dropped are its own counts as it exited (Counted
	// false: it did not say them).
	Seen, Shown, Dropped uint64
	Counted              bool
	CPU                  time.Duration // from the burst's go until it had written its last event
	RSS, PeakRSS         int64         // bytes: resident then, and the most it ever held (start-up included)
	Lag                  time.Duration // from the burst's end to when its last event was found written
	// Wakeups are its threads' sleeps over the same span (voluntary
	// context switches), each ended by a wakeup; -1: unknown.
	Wakeups   int64
	Lifecycle correlate.LifecycleResult
}

// burstSpans are a pass's phases: from the first create to the last RTS
// (connect), from the first destroy to the last (destroy).
type burstSpans struct {
	qps              int
	connect, destroy time.Duration
}

func spansOf(p *bench.BurstPass) burstSpans {
	s := burstSpans{qps: p.QPs()}
	n := len(p.Steps)
	if n < 2 {
		return s
	}
	// The last step destroys; the one before it (verbs: modify-qp-rts;
	// rdma_cm: disconnect, so connect is two before) ends the connection.
	last := n - 2
	if p.Steps[last] == "disconnect" {
		last--
	}
	if a, b, ok := p.Span(0, last); ok {
		s.connect = time.Duration(b - a)
	}
	first := n - 1
	if p.Steps[n-2] == "disconnect" {
		first = n - 2
	}
	if a, b, ok := p.Span(first, n-1); ok {
		s.destroy = time.Duration(b - a)
	}
	return s
}

func perSec(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (r *BurstReport) describe() string {
	who := "processes"
	if r.Threads {
		who = "threads of one process"
	}
	over := "verbs (each QP's RTR names the other's number)"
	switch r.Order {
	case "nccl":
		over += ", every QP created and in INIT before any RTR, as NCCL connects"
	case "pairs":
		over += ", a pair at a time"
	case "phases":
		over += ", each verb for every QP before the next"
	}
	if r.Mode == "rdma_cm" {
		over = "rdma_cm (half of each rank's QPs connect to a listener of its own)"
	}
	return fmt.Sprintf("%d %s × %d RC QPs on %s (%d QPs), connected in pairs over %s", r.Ranks, who, r.QPs,
		formats.Sanitize(r.Dev), r.Ranks*r.QPs, over)
}

// WriteBurstTable writes the burst for people: each pass's rate and
// phases, each verb's distribution in both passes, then the tracer.
func WriteBurstTable(w io.Writer, r *BurstReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "rdmabench burst: %s; held %v\n", r.describe(), r.Hold)
	b.WriteString("timing: CLOCK_MONOTONIC around each verb; connect is the first create to the last RTS over all ranks, destroy the first destroy to the last; µs per verb\n")
	fmt.Fprintf(&b, "tracing: %s\n", formats.Sanitize(r.Tracing))
	if r.Emulated != "" {
		fmt.Fprintf(&b, "not hardware: %s\n", formats.Sanitize(r.Emulated))
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	u := spansOf(&r.Untraced)
	passes := formats.NewTable("PASS", "QPS", "CONNECT", "QPS/S", "DESTROY", "DESTROYS/S", "BURST")
	row := func(name string, s burstSpans) {
		passes.Append(name, fmt.Sprint(s.qps), secs(s.connect), fmt.Sprintf("%.0f", perSec(s.qps, s.connect)),
			secs(s.destroy), fmt.Sprintf("%.0f", perSec(s.qps, s.destroy)), secs(s.connect+s.destroy))
	}
	row("untraced", u)
	var t burstSpans
	if r.Traced != nil {
		t = spansOf(r.Traced)
		row("traced", t)
	}
	if err := passes.Render(w); err != nil {
		return err
	}
	if r.Traced != nil {
		fmt.Fprintf(w, "traced/untraced: %.2f connect, %.2f destroy, %.2f the whole burst\n",
			ratio(t.connect, u.connect), ratio(t.destroy, u.destroy), ratio(t.connect+t.destroy, u.connect+u.destroy))
	}
	fmt.Fprintln(w)
	steps := formats.NewTable("STEP", "PASS", "N", "P50", "P99", "MAX", "SUM[s]", "P50 RATIO")
	for i, name := range r.Untraced.Steps {
		d := bench.Distribution(r.Untraced.Durations(i))
		steps.Append(name, "untraced", fmt.Sprint(d.N), us(d.P50), us(d.P99), us(d.Max), fmt.Sprintf("%.3f", float64(sum(r.Untraced.Durations(i)))/1e9), "")
		if r.Traced != nil && i < len(r.Traced.Steps) {
			td := bench.Distribution(r.Traced.Durations(i))
			rt := "-"
			if d.P50 > 0 {
				rt = fmt.Sprintf("%.2f", td.P50/d.P50)
			}
			steps.Append(name, "traced", fmt.Sprint(td.N), us(td.P50), us(td.P99), us(td.Max), fmt.Sprintf("%.3f", float64(sum(r.Traced.Durations(i)))/1e9), rt)
		}
	}
	// A rank's own steps: each rank's device, PD and CQ.
	for i, name := range r.RankSteps {
		d := bench.Distribution(rankDurations(&r.Untraced, i))
		if d.N == 0 {
			continue
		}
		steps.Append(name, "untraced", fmt.Sprint(d.N), us(d.P50), us(d.P99), us(d.Max), fmt.Sprintf("%.3f", float64(sum(rankDurations(&r.Untraced, i)))/1e9), "")
		if r.Traced != nil {
			td := bench.Distribution(rankDurations(r.Traced, i))
			rt := "-"
			if d.P50 > 0 && td.N > 0 {
				rt = fmt.Sprintf("%.2f", td.P50/d.P50)
			}
			steps.Append(name, "traced", fmt.Sprint(td.N), us(td.P50), us(td.P99), us(td.Max), fmt.Sprintf("%.3f", float64(sum(rankDurations(r.Traced, i)))/1e9), rt)
		}
	}
	if err := steps.Render(w); err != nil {
		return err
	}
	if r.Tracer != nil {
		return writeTracerText(w, r.Tracer)
	}
	return nil
}

// rankDurations are the ns each rank of p took in its own step i.
func rankDurations(p *bench.BurstPass, i int) []int64 {
	var d []int64
	for _, r := range p.Ranks {
		if i < len(r.Setup) && r.Setup[i].Start != 0 {
			d = append(d, r.Setup[i].Dur)
		}
	}
	return d
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

func writeTracerText(w io.Writer, t *BurstTracer) error {
	var b strings.Builder
	b.WriteString("\nthe tracer: ")
	fmt.Fprintf(&b, "%d events written", t.Events)
	if t.Counted {
		fmt.Fprintf(&b, ", %d dropped (ring buffer full), %d seen", t.Dropped, t.Seen)
	} else {
		b.WriteString(" (it did not say what it dropped)")
	}
	b.WriteString("\n")
	lc := &t.Lifecycle
	var ph []string
	wrong := 0
	for _, p := range lc.Phases {
		ph = append(ph, fmt.Sprintf("%s %d/%d", p.Phase, p.Got, p.Want))
		wrong += p.WrongPID
	}
	fmt.Fprintf(&b, "the burst's QPs in the trace: %s: %d lifecycle events lost, %d QPs with a gap", strings.Join(ph, ", "), lc.Lost(), lc.QPsWithGap)
	if wrong > 0 {
		fmt.Fprintf(&b, "; %d %s named another process", wrong, plural(wrong, "event", "events"))
	}
	b.WriteString("\n")
	if len(lc.Missing) > 0 {
		fmt.Fprintf(&b, "  the first gaps: %s\n", formats.Sanitize(strings.Join(lc.Missing, "; ")))
	}
	fmt.Fprintf(&b, "the tracer's CPU: %.2f s from the burst's start until it had written all", t.CPU.Seconds())
	if t.Events > 0 {
		fmt.Fprintf(&b, " (%.3f s per 1000 events)", t.CPU.Seconds()*1000/float64(t.Events))
	}
	if t.Wakeups >= 0 {
		fmt.Fprintf(&b, ", %d wakeups", t.Wakeups)
	}
	fmt.Fprintf(&b, "; its memory: %s resident then, %s at most; its last event %.2f s after the burst's end\n",
		mib(t.RSS), mib(t.PeakRSS), t.Lag.Seconds())
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// BurstRankRecord is one rank of one pass: who it was and its QPs' numbers.
type BurstRankRecord struct {
	Record string             `json:"record"`
	Pass   string             `json:"pass"`
	Index  int                `json:"index"`
	PID    int                `json:"pid"`
	TID    int                `json:"tid"`
	Setup  map[string]float64 `json:"setup-us"`
	QPNs   []uint32           `json:"qpns"`
}

// BurstPassRecord is a pass's rates and its verbs' distributions.
type BurstPassRecord struct {
	QPs         int          `json:"qps"`
	ConnectS    float64      `json:"connect-s"`
	QPsPerS     float64      `json:"qps-per-s"`
	DestroyS    float64      `json:"destroy-s"`
	DestroysPer float64      `json:"destroys-per-s"`
	BurstS      float64      `json:"burst-s"`
	Steps       []DistRecord `json:"steps"`
	RankSteps   []DistRecord `json:"rank-steps"`
}

// BurstRatio is traced over untraced.
type BurstRatio struct {
	Connect float64 `json:"connect"`
	Destroy float64 `json:"destroy"`
	Burst   float64 `json:"burst"`
}

// PhaseRecord is one lifecycle phase in the trace.
type PhaseRecord struct {
	Phase    string `json:"phase"`
	Want     int    `json:"want"`
	Got      int    `json:"got"`
	Lost     int    `json:"lost"`
	WrongPID int    `json:"wrong-pid"`
}

// BurstTracerRecord is the tracer's part of the summary.
type BurstTracerRecord struct {
	Events        int           `json:"events"`
	Seen          *uint64       `json:"seen,omitempty"`
	Shown         *uint64       `json:"shown,omitempty"`
	Dropped       *uint64       `json:"dropped,omitempty"`
	CPUS          float64       `json:"cpu-s"`
	CPUSPer1000   float64       `json:"cpu-s-per-1000-events"`
	RSS           int64         `json:"rss-bytes"`
	PeakRSS       int64         `json:"peak-rss-bytes"`
	LagS          float64       `json:"lag-s"`
	Wakeups       *int64        `json:"wakeups,omitempty"`
	Lifecycle     []PhaseRecord `json:"lifecycle"`
	LifecycleLost int           `json:"lifecycle-lost"`
	QPsWithGap    int           `json:"qps-with-gap"`
	FirstMissing  []string      `json:"first-missing,omitempty"`
}

// BurstSummary is the run's last record.
type BurstSummary struct {
	Record   string             `json:"record"`
	Bench    string             `json:"bench"`
	Dev      string             `json:"dev"`
	Mode     string             `json:"mode"`
	Order    string             `json:"order,omitempty"`
	Ranks    int                `json:"ranks"`
	QPs      int                `json:"qps-per-rank"`
	Threads  bool               `json:"threads"`
	HoldS    float64            `json:"hold-s"`
	Untraced BurstPassRecord    `json:"untraced"`
	Traced   *BurstPassRecord   `json:"traced,omitempty"`
	Ratio    *BurstRatio        `json:"ratio,omitempty"`
	Tracer   *BurstTracerRecord `json:"tracer,omitempty"`
	Tracing  string             `json:"tracing"`
	Emulated string             `json:"emulated,omitempty"`
}

func passRecord(p *bench.BurstPass, rankSteps []string) BurstPassRecord {
	s := spansOf(p)
	r := BurstPassRecord{QPs: s.qps, ConnectS: round3(s.connect.Seconds()), QPsPerS: round2(perSec(s.qps, s.connect)),
		DestroyS: round3(s.destroy.Seconds()), DestroysPer: round2(perSec(s.qps, s.destroy)),
		BurstS: round3((s.connect + s.destroy).Seconds()), Steps: []DistRecord{}}
	for i, name := range p.Steps {
		d := distOf(bench.Distribution(p.Durations(i)))
		d.Step = name
		r.Steps = append(r.Steps, d)
	}
	r.RankSteps = []DistRecord{}
	for i, name := range rankSteps {
		if ds := rankDurations(p, i); len(ds) > 0 {
			d := distOf(bench.Distribution(ds))
			d.Step = name
			r.RankSteps = append(r.RankSteps, d)
		}
	}
	return r
}

func rankRecords(w io.Writer, pass string, p *bench.BurstPass, names []string) error {
	for i, rk := range p.Ranks {
		rec := BurstRankRecord{Record: "rank", Pass: pass, Index: i, PID: rk.PID, TID: rk.TID, Setup: map[string]float64{}, QPNs: make([]uint32, 0, len(rk.QPs))}
		for k, s := range rk.Setup {
			if k < len(names) && s.Start != 0 {
				rec.Setup[names[k]] = round3(float64(s.Dur) / 1e3)
			}
		}
		for _, q := range rk.QPs {
			rec.QPNs = append(rec.QPNs, q.QPN)
		}
		if err := writeRecord(w, rec); err != nil {
			return err
		}
	}
	return nil
}

// WriteBurstJSON writes a rank record per rank and pass (its QP numbers,
// for joining with any trace), then the summary.
func WriteBurstJSON(w io.Writer, r *BurstReport) error {
	if err := rankRecords(w, "untraced", &r.Untraced, r.RankSteps); err != nil {
		return err
	}
	if r.Traced != nil {
		if err := rankRecords(w, "traced", r.Traced, r.RankSteps); err != nil {
			return err
		}
	}
	sm := BurstSummary{Record: "summary", Bench: "burst", Dev: r.Dev, Mode: r.Mode, Order: r.Order, Ranks: r.Ranks, QPs: r.QPs, Threads: r.Threads,
		HoldS: round3(r.Hold.Seconds()), Untraced: passRecord(&r.Untraced, r.RankSteps), Tracing: r.Tracing, Emulated: r.Emulated}
	if r.Traced != nil {
		t := passRecord(r.Traced, r.RankSteps)
		sm.Traced = &t
		u, tr := spansOf(&r.Untraced), spansOf(r.Traced)
		sm.Ratio = &BurstRatio{Connect: round3(ratio(tr.connect, u.connect)), Destroy: round3(ratio(tr.destroy, u.destroy)),
			Burst: round3(ratio(tr.connect+tr.destroy, u.connect+u.destroy))}
	}
	if t := r.Tracer; t != nil {
		rec := &BurstTracerRecord{Events: t.Events, CPUS: round3(t.CPU.Seconds()), RSS: t.RSS, PeakRSS: t.PeakRSS,
			LagS: round3(t.Lag.Seconds()), LifecycleLost: t.Lifecycle.Lost(), QPsWithGap: t.Lifecycle.QPsWithGap,
			FirstMissing: t.Lifecycle.Missing, Lifecycle: []PhaseRecord{}}
		if t.Wakeups >= 0 {
			rec.Wakeups = &t.Wakeups
		}
		if t.Counted {
			rec.Seen, rec.Shown, rec.Dropped = &t.Seen, &t.Shown, &t.Dropped
		}
		if t.Events > 0 {
			rec.CPUSPer1000 = round3(t.CPU.Seconds() * 1000 / float64(t.Events))
		}
		for _, p := range t.Lifecycle.Phases {
			rec.Lifecycle = append(rec.Lifecycle, PhaseRecord{Phase: p.Phase, Want: p.Want, Got: p.Got, Lost: p.Lost(), WrongPID: p.WrongPID})
		}
		sm.Tracer = rec
	}
	return writeRecord(w, sm)
}
