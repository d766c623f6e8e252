package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/leaks"
	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/analysis/why"
	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/kernlog"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// postMortem is one run of `rdmatrace leaks --log`: where it reads and
// writes, and what went wrong (bad: lines or files not understood, exit 1;
// failed: files that could not be read, exit 2).
type postMortem struct {
	stdin  io.Reader
	stderr io.Writer
	sink   *findingSink
	limits inputLimits
	bad    int
	failed int
	// reports are the leak and hang reports of the logs (exit status 3).
	reports int
}

// inputLimits bound what a post-mortem reads: --max-input (decompressed
// bytes of an input, decompress.DefaultLimit when 0) and --max-table
// (resources of a recording tracked at once, as live, 1<<18 when 0).
type inputLimits struct {
	maxInput int64
	maxTable int
}

// warn prints one line on stderr, after what was found before it. The
// line is escaped: it names files and quotes their content.
func (p *postMortem) warn(format string, args ...any) {
	_ = p.sink.Flush()
	fmt.Fprintf(p.stderr, "rdmatrace: %s\n", formats.Sanitize(fmt.Sprintf(format, args...)))
}

// warnLine prints a bad line's error, which is escaped already (lineerr).
func (p *postMortem) warnLine(le *lineerr.Error) {
	_ = p.sink.Flush()
	fmt.Fprintf(p.stderr, "rdmatrace: %v\n", le)
}

// open opens a log or recording ("-": stdin), decompressed whatever the
// compression.
func (p *postMortem) open(path string) (io.Reader, func(), error) {
	return openInput(path, p.stdin, p.limits.maxInput)
}

// drain calls next until the end of an input: a line it does not
// understand is told and counted, and reading goes on; a read error ends
// it, and drain says whether one did.
func (p *postMortem) drain(name string, next func() error) (failed bool) {
	for {
		err := next()
		if errors.Is(err, io.EOF) {
			return false
		}
		var le *lineerr.Error
		if errors.As(err, &le) {
			p.bad += le.Lines()
			p.warnLine(le)
			continue
		}
		if err != nil {
			p.failed++
			p.warn("%v", readError(name, err))
			return true
		}
	}
}

// readLog passes each report of a kernel log to each. A file with no report
// and no line of a kernel log is probably the wrong file: it is said, not
// passed over in silence.
func (p *postMortem) readLog(path string, each func(*rdma.KernelReport)) {
	r, done, err := p.open(path)
	if err != nil {
		p.failed++
		p.warn("%v", err)
		return
	}
	defer done()
	name := sourceName(path)
	kr := kernlog.NewReader(r, name)
	found := 0
	failed := p.drain(name, func() error {
		rep, err := kr.Next()
		if err == nil {
			found++
			each(rep)
		}
		return err
	})
	if found == 0 && kr.Stamped() == 0 && !failed {
		p.bad++
		p.warn("%s: not a kernel log: no line of it has the prefix of dmesg, dmesg -T or journalctl -k (gzip, xz, zstd and bzip2 are read)", name)
	}
}

// replayRecording replays a `trace -j` recording against the logs'
// reports reps, keeping what keep selects, and passes each event to also
// (the QP error syndromes' join); nil when it cannot be read.
func (p *postMortem) replayRecording(path string, reps []*rdma.KernelReport, keep func(*rdma.Event) bool, also func(*rdma.Event)) *leaks.PostMortem {
	in, done, err := p.open(path)
	if err != nil {
		p.failed++
		p.warn("%v", err)
		return nil
	}
	defer done()
	pm := leaks.NewPostMortem(reps, keep, leaks.PostMortemLimits{MaxTable: p.limits.maxTable, Window: reorderWindow})
	name := sourceName(path)
	r := replay.NewReader(in, name)
	var ev rdma.Event
	p.drain(name, func() error {
		err := r.Next(&ev)
		if err == nil {
			also(&ev)
			pm.Add(&ev)
		}
		return err
	})
	lost := pm.Finish()
	if lost.Reordered > 0 {
		p.warn("%s: %d events left the reorder window early (more than %d within %v): their order may be wrong", name, lost.Reordered, restable.DefaultMaxHeld, time.Duration(reorderWindow))
	}
	if lost.Findings > 0 {
		p.warn("%s: %d findings about the log's reports past the first %d were not kept", name, lost.Findings, leaks.DefaultMaxFindings)
	}
	if lost.Untracked > 0 {
		maxTable := p.limits.maxTable
		if maxTable <= 0 {
			maxTable = leaks.DefaultMaxTable
		}
		p.warn("%s: table full (--max-table %d), %d resources untracked: what the log's reports left may be missing", name, maxTable, lost.Untracked)
	}
	return pm
}

// joinSyndromes names the QP of each QP error syndrome of the logs from
// the recording (a QP whose owner the filters leave out is not named), and
// returns why the others have none.
func (p *postMortem) joinSyndromes(syn *why.Syndromes, recording string, f *filter.Events) map[*rdma.KernelReport]string {
	noQP := syn.JoinKept(f.Match)
	if syn.Untold > 0 {
		p.warn("%s: %d QPs past the first %d of the numbers the log names were not kept: a syndrome's QP may be missing", sourceName(recording), syn.Untold, why.MaxLives)
	}
	return noQP
}

// withRecording writes each of the logs' reports followed by what the
// recording says of it: the findings of a leak or hang, the QP (and its
// owner) of a QP error syndrome.
func (p *postMortem) withRecording(logs []string, recording string, f *filter.Events) {
	// The logs first: what they report decides what of the recording is
	// kept.
	var reps []*rdma.KernelReport
	for _, path := range logs {
		p.readLog(path, func(rep *rdma.KernelReport) {
			rep.Frames = nil // not shown; a log can hold many reports
			reps = append(reps, rep)
			p.reports += leakReport(rep)
		})
	}
	syn := why.NewSyndromes(reps)
	pm := p.replayRecording(recording, reps, f.Match, syn.Add)
	if pm == nil {
		for _, rep := range reps {
			p.sink.kernel(rep, false, 0, "")
		}
		return
	}
	noQP := p.joinSyndromes(syn, recording, f)
	for _, x := range pm.Join() {
		if x.Report.Kind == rdma.KernQPErrSyndrome {
			matched := 0
			if x.Report.QP != nil {
				matched = 1
			}
			p.sink.put(formats.LeakRecord{Kernel: &formats.KernelNote{Report: x.Report, WithRecording: true, Matched: matched, NoQP: noQP[x.Report]}})
			continue
		}
		p.sink.kernel(x.Report, true, len(x.Findings), x.SameAs)
		for i := range x.Findings {
			p.sink.Finding(&x.Findings[i])
		}
	}
}

// leakReport is 1 for a report of a leak or a hang (exit status 3), 0 for
// a QP error syndrome: a failure, not a leak.
func leakReport(rep *rdma.KernelReport) int {
	if rep.Kind == rdma.KernQPErrSyndrome {
		return 0
	}
	return 1
}

// runLeakLog is `rdmatrace leaks --log FILE... [--recording FILE]`: the
// kernel's own leak and hang reports, each followed by what a recording of
// the same boot says about it. "-" reads stdin. A file that cannot be read
// is named and the others are still read.
func runLeakLog(logs []string, recording string, limits inputLimits, f *filter.Events, sink *findingSink, stdin io.Reader, stderr io.Writer) error {
	stdins := 0
	for _, path := range append([]string{recording}, logs...) {
		if path == "-" {
			stdins++
		}
	}
	if stdins > 1 {
		return exitWith(2, errors.New("stdin (-) can be read once: give it to one --log or to --recording"))
	}
	p := &postMortem{stdin: stdin, stderr: stderr, sink: sink, limits: limits}
	if recording == "" {
		for _, path := range logs {
			p.readLog(path, func(rep *rdma.KernelReport) {
				p.reports += leakReport(rep)
				sink.kernel(rep, false, 0, "")
			})
		}
	} else {
		p.withRecording(logs, recording, f)
	}
	if err := sink.Flush(); err != nil {
		return err
	}
	switch {
	case p.failed > 0:
		return exitWith(2, nil) // what was read is shown; the answer is incomplete
	case p.reports > 0:
		return exitWith(exitLeaked, nil)
	case p.bad > 0:
		return exitWith(1, nil)
	}
	return nil
}
