package main

import (
	"errors"
	"fmt"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"io"
	"time"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/leaks"
	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/kernlog"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// defaultMaxTable is --max-table's default: the resources tracked at once.
const defaultMaxTable = 1 << 18

// maxRecorded bounds the findings kept from a recording (each a few
// hundred bytes): a recording of a device unregistered again and again
// with many objects alive names millions.
const maxRecorded = 1 << 16

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
	_ = p.sink.flush()
	fmt.Fprintf(p.stderr, "rdmatrace: %s\n", formats.Sanitize(fmt.Sprintf(format, args...)))
}

// warnLine prints a bad line's error, which is escaped already (lineerr).
func (p *postMortem) warnLine(le *lineerr.Error) {
	_ = p.sink.flush()
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

// wanted is what a log's reports ask of a recording: the findings of the
// unregistrations by the tasks its WARNINGs and hung tasks name, and what
// was left of the objects its named reports name. Nothing else of a
// recording is kept.
type wanted struct {
	pids  map[uint32]bool // the tasks of WARNINGs and hung tasks
	hung  map[uint32]bool // of hung tasks: what was alive when they began
	named map[namedKey]bool
}

type namedKey struct{ dev, res, owner string }

func wantedBy(reps []*rdma.KernelReport) *wanted {
	w := &wanted{pids: map[uint32]bool{}, hung: map[uint32]bool{}, named: map[namedKey]bool{}}
	for _, r := range reps {
		switch {
		case r.Kind == rdma.KernRestrackNamed:
			w.named[namedKey{r.Device, r.ResType, r.Owner}] = true
		case r.PID > 0:
			w.pids[uint32(r.PID)] = true
			w.hung[uint32(r.PID)] = w.hung[uint32(r.PID)] || r.Kind == rdma.KernHungUnregister
		}
	}
	return w
}

func (w *wanted) keeps(f *rdma.Finding) bool {
	switch f.Report {
	case rdma.LeakUnregister:
		return w.hung[f.By.PID]
	case rdma.LeakUnregistered:
		return w.pids[f.By.PID]
	case rdma.LeakLeft:
		if w.pids[f.By.PID] {
			return true
		}
		res := f.Res.Res.String()
		for _, owner := range []string{f.Res.Owner.KernName, f.Res.Owner.Comm} {
			if owner != "" && (w.named[namedKey{f.Res.DevName, res, owner}] || w.named[namedKey{"", res, owner}]) {
				return true
			}
		}
	}
	return false
}

// recorded is what a saved trace says about each device unregistration:
// the findings `rdmatrace leaks` would have made live, by the task that
// did the unregistration (the task a kernel WARNING or hung-task report
// names).
type recorded struct {
	byPID   map[uint32][]rdma.Finding
	kept    int
	dropped int // wanted, but past maxRecorded
}

// replayRecording rebuilds the resource table from a `trace -j` recording
// and keeps the findings want asks for; nil when it cannot be read.
func (p *postMortem) replayRecording(path string, keep func(*rdma.Event) bool, want *wanted) *recorded {
	in, done, err := p.open(path)
	if err != nil {
		p.failed++
		p.warn("%v", err)
		return nil
	}
	defer done()
	rec := &recorded{byPID: map[uint32][]rdma.Finding{}}
	maxTable := p.limits.maxTable
	if maxTable <= 0 {
		maxTable = defaultMaxTable
	}
	table := restable.New(maxTable)
	w := leaks.New(table, func(fd *rdma.Finding) {
		if fd.By.PID == 0 || !want.keeps(fd) {
			return
		}
		if rec.kept >= maxRecorded {
			rec.dropped++
			return
		}
		rec.kept++
		rec.byPID[fd.By.PID] = append(rec.byPID[fd.By.PID], *fd)
	})
	w.Keep = keep
	reorder := restable.NewReorder(reorderWindow)
	name := sourceName(path)
	r := replay.NewReader(in, name)
	var ev rdma.Event
	p.drain(name, func() error {
		err := r.Next(&ev)
		if err != nil {
			return err
		}
		if ev.Kind == rdma.EvDevUnregister && !want.pids[ev.Actor.PID] {
			// What was alive when it began is kept only for the tasks the
			// log names: naming it for every beginning costs the whole
			// device's table each time.
			return nil
		}
		reorder.Push(&ev, w.Handle)
		return nil
	})
	reorder.Flush(w.Handle)
	if n := reorder.Overflowed(); n > 0 {
		p.warn("%s: %d events left the reorder window early (more than %d within %v): their order may be wrong", name, n, restable.DefaultMaxHeld, time.Duration(reorderWindow))
	}
	if rec.dropped > 0 {
		p.warn("%s: %d findings about the log's reports past the first %d were not kept", name, rec.dropped, maxRecorded)
	}
	if n := table.Untracked(); n > 0 {
		p.warn("%s: table full (--max-table %d), %d resources untracked: what the log's reports left may be missing", name, maxTable, n)
	}
	return rec
}

// matches picks what the recording says about a kernel report.
func (rec *recorded) matches(r *rdma.KernelReport) []rdma.Finding {
	var out []rdma.Finding
	switch r.Kind {
	case rdma.KernRestrackWarning, rdma.KernDriverWarning:
		// What the unregistration left: the objects behind the WARNING.
		for _, f := range rec.byPID[uint32(r.PID)] {
			if f.Report == rdma.LeakLeft || f.Report == rdma.LeakUnregistered {
				out = append(out, f)
			}
		}
	case rdma.KernHungUnregister:
		// What was alive when it began: what it waits for.
		for _, f := range rec.byPID[uint32(r.PID)] {
			if f.Report == rdma.LeakUnregister && f.Res.Has(rdma.EvHasOwner) {
				out = append(out, f)
			}
		}
	case rdma.KernRestrackNamed:
		for _, fs := range rec.byPID {
			for _, f := range fs {
				if f.Report == rdma.LeakLeft && (r.Device == "" || f.Res.DevName == r.Device) && f.Res.Res.String() == r.ResType &&
					(f.Res.Owner.KernName == r.Owner || f.Res.Owner.Comm == r.Owner) {
					out = append(out, f)
				}
			}
		}
	}
	return out
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
	reports := 0
	if recording == "" {
		for _, path := range logs {
			p.readLog(path, func(rep *rdma.KernelReport) {
				reports++
				sink.kernel(rep, false, 0, "")
			})
		}
	} else {
		// The logs first: what they report decides what of the recording
		// is kept.
		var reps []*rdma.KernelReport
		for _, path := range logs {
			p.readLog(path, func(rep *rdma.KernelReport) {
				rep.Frames = nil // not shown; a log can hold many reports
				reps = append(reps, rep)
			})
		}
		rec := p.replayRecording(recording, f.Match, wantedBy(reps))
		shown := map[string]string{} // each unregistration's findings once: where they were
		for _, rep := range reps {
			reports++
			var named []rdma.Finding
			sameAs := ""
			if rec != nil {
				named = rec.matches(rep)
				key := fmt.Sprint(rep.Kind == rdma.KernHungUnregister, rep.PID)
				switch {
				case rep.Kind == rdma.KernRestrackNamed || len(named) == 0:
				case shown[key] != "":
					named, sameAs = nil, shown[key] // told with the first report of this unregistration
				default:
					shown[key] = fmt.Sprintf("%s:%d", rep.Source, rep.Line)
				}
			}
			sink.kernel(rep, rec != nil, len(named), sameAs)
			for i := range named {
				sink.write(&named[i])
			}
		}
	}
	if err := sink.flush(); err != nil {
		return err
	}
	switch {
	case p.failed > 0:
		return exitWith(2, nil) // what was read is shown; the answer is incomplete
	case reports > 0:
		return exitWith(exitLeaked, nil)
	case p.bad > 0:
		return exitWith(1, nil)
	}
	return nil
}
