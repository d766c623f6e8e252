package leaks

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/analysis/why"
	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/kernlog"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// LogOptions are what `leaks --log FILE... [--recording FILE]` reads.
type LogOptions struct {
	// Logs are kernel logs (lines.Stdin: stdin).
	Logs []string
	// Recording is a `trace -j` recording of the same boot, or "".
	Recording string
	// Keep selects the resources a finding or a syndrome's QP may name
	// (the filters); nil keeps all.
	Keep func(*rdma.Event) bool
	// Stdin is what lines.Stdin reads.
	Stdin io.Reader
	// MaxInput bounds each input once decompressed
	// (decompress.DefaultLimit when 0).
	MaxInput int64
	// Limits bound what the recording may take.
	Limits PostMortemLimits
	// Warn writes one line on stderr; it is given terminal-safe already.
	Warn func(line string)
}

// LogSink is where ReadLogs writes: each report of the logs, in order,
// and after it what the recording found about it.
type LogSink interface {
	Report(ReportNote)
	Finding(*rdma.Finding)
	// Flush writes out what was given, before a line on stderr.
	Flush() error
}

// ReportNote is a report of a kernel log as the post-mortem gives it.
type ReportNote struct {
	Report *rdma.KernelReport
	// WithRecording: a recording was given; Matched findings of it are
	// about the report (they follow it); SameAs is "SOURCE:LINE" of the
	// report the findings of the same unregistration followed.
	WithRecording bool
	Matched       int
	SameAs        string
	// NoQP says why the recording names no QP for a QP error syndrome;
	// Repeats is how many times more the logs have its line.
	NoQP    string
	Repeats int
}

// LogResult is how a post-mortem went, for its exit status.
type LogResult struct {
	Reports int // reports of a leak or a hang (not QP error syndromes)
	Bad     int // lines, or files, not understood
	Failed  int // inputs that could not be read (what was read is shown)
}

// ReadLogs is the post-mortem of kernel logs: the kernel's own leak and
// hang reports, and mlx5's QP error syndromes, each followed by what a
// recording of the same boot says about it. Without a recording the
// reports stream as they are read. A file that cannot be read is said
// and the others are still read. Its error is the sink's.
func ReadLogs(o LogOptions, sink LogSink) (LogResult, error) {
	p := &logRun{o: o, sink: sink}
	if o.Recording == "" {
		for _, path := range o.Logs {
			p.readLog(path, func(rep *rdma.KernelReport) {
				p.res.Reports += leakReport(rep)
				sink.Report(ReportNote{Report: rep})
			})
		}
	} else {
		p.withRecording()
	}
	return p.res, sink.Flush()
}

// logRun is one ReadLogs.
type logRun struct {
	o    LogOptions
	sink LogSink
	res  LogResult
}

// warn flushes what was found before it, then says a line on stderr.
func (p *logRun) warn(format string, args ...any) {
	_ = p.sink.Flush()
	p.o.Warn(termsafe.Sanitize(fmt.Sprintf(format, args...)))
}

// warnLine says a line not understood: lineerr.Error is terminal-safe.
func (p *logRun) warnLine(le *lineerr.Error) {
	_ = p.sink.Flush()
	p.o.Warn(le.Error())
}

// readLog passes each report of a kernel log to each. A file with no
// report and no line of a kernel log is probably the wrong file: it is
// said, not passed over in silence.
func (p *logRun) readLog(path string, each func(*rdma.KernelReport)) {
	in, done, err := lines.Open(path, p.o.Stdin, p.o.MaxInput)
	if err != nil {
		p.res.Failed++
		p.warn("%v", err)
		return
	}
	defer done()
	bad, err := kernlog.NewReader(in, lines.SourceName(path)).Drain(each, p.warnLine)
	p.res.Bad += bad
	var notLog *kernlog.NotALogError
	switch {
	case errors.As(err, &notLog):
		p.res.Bad++
		p.warn("%v", err)
	case err != nil:
		p.res.Failed++
		p.warn("%v", err)
	}
}

// withRecording writes each of the logs' reports followed by what the
// recording says of it: the findings of a leak or hang, the QP (and its
// owner) of a QP error syndrome.
func (p *logRun) withRecording() {
	// The logs first: what they report decides what of the recording is
	// kept. Their syndromes are kept once each, repeats counted, up to
	// why.MaxSyndromes.
	var reps []*rdma.KernelReport
	maxHeld := cmp.Or(p.o.Limits.MaxReports, DefaultMaxReports)
	var notHeld int
	var firstNotHeld string
	syn := why.NewSyndromes()
	for _, path := range p.o.Logs {
		p.readLog(path, func(rep *rdma.KernelReport) {
			p.res.Reports += leakReport(rep)
			rep.Frames = nil // not shown; a log can hold many reports
			if rep.Kind == rdma.KernQPErrSyndrome {
				if rep = syn.Take(rep); rep == nil {
					return
				}
			}
			if len(reps) >= maxHeld {
				if notHeld++; notHeld == 1 {
					firstNotHeld = fmt.Sprintf("%s:%d", rep.Source, rep.Line)
				}
				return
			}
			reps = append(reps, rep)
		})
	}
	name := lines.SourceName(p.o.Recording)
	if syn.NotKept > 0 {
		p.warn("%d QP error syndromes past the first %d of the logs were not kept: they are not shown (first: %s)", syn.NotKept, why.MaxSyndromes, syn.FirstNotKept)
	}
	if notHeld > 0 {
		p.warn("%d reports past the first %d of the logs are not shown: a recording is joined with that many at most (first: %s; --log without --recording shows them all)", notHeld, maxHeld, firstNotHeld)
	}
	pm := p.replay(reps, syn)
	if pm == nil {
		for _, rep := range reps {
			p.sink.Report(ReportNote{Report: rep, Repeats: syn.Repeats(rep)})
		}
		return
	}
	noQP := syn.JoinKept(p.o.Keep)
	if syn.Untold > 0 {
		p.warn("%s: %d QPs past the first %d of the numbers the log names were not kept: a syndrome's QP may be missing", name, syn.Untold, why.MaxLives)
	}
	for _, x := range pm.Join() {
		if x.Report.Kind == rdma.KernQPErrSyndrome {
			matched := 0
			if x.Report.QP != nil {
				matched = 1
			}
			p.sink.Report(ReportNote{Report: x.Report, WithRecording: true, Matched: matched, NoQP: noQP[x.Report], Repeats: syn.Repeats(x.Report)})
			continue
		}
		p.sink.Report(ReportNote{Report: x.Report, WithRecording: true, Matched: len(x.Findings), SameAs: x.SameAs})
		for i := range x.Findings {
			p.sink.Finding(&x.Findings[i])
		}
	}
}

// replay replays the recording against the logs' reports reps, and gives
// its QP events to syn; nil when it cannot be read.
func (p *logRun) replay(reps []*rdma.KernelReport, syn *why.Syndromes) *PostMortem {
	in, done, err := lines.Open(p.o.Recording, p.o.Stdin, p.o.MaxInput)
	if err != nil {
		p.res.Failed++
		p.warn("%v", err)
		return nil
	}
	defer done()
	pm := NewPostMortem(reps, p.o.Keep, p.o.Limits)
	name := lines.SourceName(p.o.Recording)
	bad, err := replay.NewReader(in, name).Drain(func(ev *rdma.Event) error {
		syn.Add(ev)
		pm.Add(ev)
		return nil
	}, p.warnLine)
	p.res.Bad += bad
	if err != nil {
		p.res.Failed++
		p.warn("%v", err)
	}
	lost := pm.Finish()
	if lost.Reordered > 0 {
		p.warn("%s: %d events left the reorder window early (more than %d within %v): their order may be wrong", name, lost.Reordered, restable.DefaultMaxHeld, time.Duration(pm.limits.Window))
	}
	if lost.Findings > 0 {
		p.warn("%s: %d findings about the log's reports past the first %d were not kept", name, lost.Findings, pm.limits.MaxFindings)
	}
	if lost.Untracked > 0 {
		p.warn("%s: table full (--max-table %d), %d resources untracked: what the log's reports left may be missing", name, pm.limits.MaxTable, lost.Untracked)
	}
	return pm
}

// leakReport is 1 for a report of a leak or a hang, 0 for a QP error
// syndrome: a failure, not a leak.
func leakReport(rep *rdma.KernelReport) int {
	if rep.Kind == rdma.KernQPErrSyndrome {
		return 0
	}
	return 1
}
