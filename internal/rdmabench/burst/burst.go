// Package burst runs rdmabench burst: the connection burst of a job's
// start. Ranks (processes, or threads) each create many RC QPs at once and
// bring them to RTS connected in pairs, hold them, and destroy them; the
// burst runs once untraced, the headline, then again with rdmatrace trace
// beside it as a user would run it, and says what the tracer cost and
// which of the burst's QP lifecycle events its trace lacks.
package burst

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/correlate"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/report"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/tracerun"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/verbs"
)

// Tracing says whether the burst runs a traced pass.
type Tracing int

const (
	NoTrace   Tracing = iota // the untraced pass only
	TryTrace                 // a traced pass where the tracer can run; else say why and go on
	MustTrace                // a tracer that cannot run is an error
)

// Options are rdmabench burst's.
type Options struct {
	Dev      string
	Port     int
	GIDIndex int
	Ranks    int              // processes (or threads)
	QPs      int              // per rank
	Order    verbs.BurstOrder // over verbs
	// RankCommand runs a rank as a process (its ServeRank on stdin and
	// stdout); nil: ranks are threads of this process.
	RankCommand []string
	// CM connects the pairs over rdma_cm: rank i listens on Addr at
	// CMPort+i, Window connections in flight at once.
	CM      bool
	Addr    string
	CMPort  int
	Window  int
	Timeout time.Duration
	// Hold is how long every QP stays in RTS before the destroys; with
	// HoldFile, the burst also writes that file (a line per rank: "rank
	// I pid P tid T qps N") once every QP is in RTS, and holds until it
	// is removed.
	Hold     time.Duration
	HoldFile string

	Trace       Tracing
	Rdmatrace   string   // the binary ("" finds it)
	TraceDir    string   // keep the tracer's output there
	TracerFlags []string // more of trace's flags
	// Warn gets what the tracer says it lost, and why a pass is untraced.
	Warn io.Writer
}

// Mode is how the pairs are connected, as the report names it.
func (o *Options) Mode() string {
	if o.CM {
		return "rdma_cm"
	}
	return "verbs"
}

func (o *Options) steps() []string {
	if o.CM {
		return verbs.BurstCMSteps
	}
	return verbs.BurstVerbsSteps
}

// drainLimit bounds how long the traced pass waits, after the burst, for
// the tracer to write what it has queued: under a flood on an emulated
// machine it lagged by tens of seconds. settleQuiet is how long its
// output must stay the same for the tracer to be done: while it reads,
// it writes every 4 KiB of output (about 15 events).
const (
	drainLimit  = 5 * time.Minute
	settleQuiet = 2 * time.Second
)

// Run runs the untraced pass, then (Options.Trace) the traced one.
func Run(o Options) (*report.BurstReport, error) {
	if o.Ranks < 1 || o.QPs < 1 {
		return nil, fmt.Errorf("%d ranks × %d QPs: need at least one of each", o.Ranks, o.QPs)
	}
	r := &report.BurstReport{Dev: o.Dev, Mode: o.Mode(), Ranks: o.Ranks, QPs: o.QPs, Threads: o.RankCommand == nil,
		Hold: o.Hold, Tracing: "off", RankSteps: verbs.BurstRankSteps}
	if !o.CM {
		r.Order = o.Order.String()
	}
	p, err := runPass(o, nil)
	if err != nil {
		return nil, err
	}
	r.Untraced = *p
	if o.Trace == NoTrace {
		return r, nil
	}
	tr, err := tracerun.Start(tracerun.Options{Path: o.Rdmatrace, Dir: o.TraceDir, Plain: true, Extra: o.TracerFlags})
	if err != nil {
		if o.Trace == MustTrace {
			return nil, err
		}
		fmt.Fprintf(o.warn(), "rdmabench: tracing unavailable, measuring untraced: %v\n", err)
		r.Tracing = "unavailable: " + err.Error()
		return r, nil
	}
	r.Tracing = "rdmatrace trace -j beside the burst, with trace's own defaults"
	if len(o.TracerFlags) > 0 {
		r.Tracing += " and " + strings.Join(o.TracerFlags, " ")
	}
	r.Traced, r.Tracer, err = tracedPass(o, tr)
	if serr := tr.Stop(); serr != nil && err == nil {
		err = serr
	}
	o.passWarnings(tr)
	if err != nil {
		return nil, err
	}
	if s := tr.Summary(); s.OK {
		r.Tracer.Seen, r.Tracer.Shown, r.Tracer.Dropped, r.Tracer.Counted = s.Seen, s.Shown, s.Dropped, true
	}
	if u, uerr := tr.Usage(); uerr == nil {
		r.Tracer.PeakRSS = max(r.Tracer.PeakRSS, u.PeakRSS)
	}
	return r, nil
}

func (o *Options) warn() io.Writer {
	if o.Warn == nil {
		return io.Discard
	}
	return o.Warn
}

// tracedPass runs the burst with tr tracing it, and then reads all that
// tr wrote: every event is counted and the QPs' joined with the burst.
func tracedPass(o Options, tr *tracerun.Run) (*bench.BurstPass, *report.BurstTracer, error) {
	var before tracerun.Usage
	var uerr error
	var sleeps int64
	var sleepsOK bool
	p, err := runPass(o, func() {
		before, uerr = tr.Usage()
		sleeps, sleepsOK = tr.Sleeps()
	})
	if err != nil {
		return nil, nil, err
	}
	if uerr != nil {
		return nil, nil, fmt.Errorf("the tracer's usage: %w", uerr)
	}
	end := burstEnd(p)
	t := &report.BurstTracer{}
	last, err := tr.Settle(settleQuiet, drainLimit)
	if err != nil {
		return nil, nil, err
	}
	after, err := tr.Usage()
	if err != nil {
		return nil, nil, fmt.Errorf("the tracer's usage: %w", err)
	}
	t.CPU, t.RSS, t.PeakRSS = after.CPU-before.CPU, after.RSS, after.PeakRSS
	t.Wakeups = -1
	if n, ok := tr.Sleeps(); ok && sleepsOK {
		t.Wakeups = n - sleeps
	}
	if last > end {
		t.Lag = time.Duration(last - end)
	}
	// Only the QPs' lines are decoded: the others are counted.
	join := correlate.NewLifecycle(p, o.Dev)
	lines, bad, err := tr.EachLine(func(l []byte) bool { return bytes.Contains(l, []byte(`"res":"qp"`)) }, join.Add)
	for _, b := range bad {
		fmt.Fprintf(o.warn(), "rdmabench: %v\n", b)
	}
	if err != nil {
		return nil, nil, err
	}
	t.Events = lines
	t.Lifecycle = join.Result()
	return p, t, nil
}

// burstEnd is when the last QP of the pass was destroyed.
func burstEnd(p *bench.BurstPass) int64 {
	_, end, _ := p.Span(0, len(p.Steps)-1)
	return end
}

// passWarnings tells what the tracer said it lost, but its ring buffer
// drops, which the report counts, each in one line however many times the
// tracer said them.
func (o *Options) passWarnings(tr *tracerun.Run) {
	seen := map[string]bool{}
	for _, w := range tr.Warnings() {
		w = strings.TrimPrefix(w, "rdmatrace: ")
		if strings.Contains(w, "events dropped (ring buffer full") {
			continue
		}
		if k := strings.TrimLeft(w, "WARNING: 0123456789"); !seen[k] {
			seen[k] = true
			fmt.Fprintf(o.warn(), "rdmabench: the tracer: %s\n", w)
		}
	}
}

// runPass runs the burst once. beforeGo runs when every rank is ready,
// just before they are told to go.
func runPass(o Options, beforeGo func()) (p *bench.BurstPass, err error) {
	var ranks []*rank
	defer func() {
		if err != nil {
			for _, r := range ranks {
				r.abort()
			}
		}
	}()
	for i := 0; i < o.Ranks; i++ {
		cfg := verbs.BurstConfig{Dev: o.Dev, Port: o.Port, GIDIndex: o.GIDIndex, QPs: o.QPs, Order: o.Order, CM: o.CM, Addr: o.Addr,
			CMPort: o.CMPort + i, Window: o.Window, Timeout: o.Timeout}
		r, err := startRank(i, o.RankCommand, cfg)
		if err != nil {
			return nil, err
		}
		ranks = append(ranks, r)
	}
	p = &bench.BurstPass{Steps: o.steps(), Ranks: make([]bench.BurstRank, len(ranks))}
	for i, r := range ranks {
		m, err := r.expect("ready")
		if err != nil {
			return nil, err
		}
		p.Ranks[i].PID, p.Ranks[i].TID = m.PID, m.TID
	}
	if beforeGo != nil {
		beforeGo()
	}
	p.Go = verbs.Now()
	for _, r := range ranks {
		if err := r.order(orderGo); err != nil {
			return nil, err
		}
	}
	var errs []error
	for _, r := range ranks {
		if _, err := r.expect("held"); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := hold(o, p); err != nil {
		return nil, err
	}
	for _, r := range ranks {
		if err := r.order(orderDestroy); err != nil {
			return nil, err
		}
	}
	for i, r := range ranks {
		m, err := r.expect("done")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Ranks[i].Setup, p.Ranks[i].QPs = m.Setup, m.QPs
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, r := range ranks {
		if err := r.wait(); err != nil {
			errs = append(errs, fmt.Errorf("rank %d%s: %w%s", r.index, r.who(), err, r.why()))
		}
	}
	ranks = nil // all ended
	return p, errors.Join(errs...)
}

// holdPoll is how often a hold file is looked for.
const holdPoll = 100 * time.Millisecond

// hold keeps every QP in RTS for o.Hold, and with o.HoldFile says so in
// that file and waits until it is removed.
func hold(o Options, p *bench.BurstPass) error {
	until := time.Now().Add(o.Hold)
	if o.HoldFile != "" {
		var b strings.Builder
		for i, r := range p.Ranks {
			fmt.Fprintf(&b, "rank %d pid %d tid %d qps %d\n", i, r.PID, r.TID, o.QPs)
		}
		if err := safefile.WriteFile(o.HoldFile, []byte(b.String()), safefile.Invoker(os.Getenv)); err != nil {
			return fmt.Errorf("--hold-file: %w", err)
		}
		for {
			if _, err := os.Lstat(o.HoldFile); errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(holdPoll)
		}
	}
	time.Sleep(time.Until(until))
	return nil
}
