package why

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/kernlog"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// RecordingOptions are what `why -r FILE [--log FILE]...` reads.
type RecordingOptions struct {
	// Recording is a `trace -j` recording (lines.Stdin: stdin).
	Recording string
	// Logs are kernel logs whose QP error syndromes are joined with the
	// recording's QPs.
	Logs []string
	// Stdin is what lines.Stdin reads.
	Stdin io.Reader
	// MaxInput bounds each input once decompressed
	// (decompress.DefaultLimit when 0).
	MaxInput int64
	// Warn writes one line on stderr; it is given terminal-safe already.
	Warn func(line string)
}

// Sink is where the lines go (formats' why sink).
type Sink interface {
	Write(Line) error
	Flush() error
}

// ErrNothingJoined ends a run whose logs held QP error syndromes and none
// could be joined with a QP of the recording: the answer asked for is
// empty, which is not success.
var ErrNothingJoined = errors.New("no QP error syndrome of the kernel logs could be joined with a QP of the recording (named or counted above)")

// ReadRecording lists what went wrong in a recording through an, with the
// logs' QP error syndromes joined with its QPs and listed among its
// failures in time order. A line not understood, of the recording or a
// log, is said (file, line, what was expected) and counted, and the rest
// still read. The syndromes that name no QP of the recording are said in
// a few lines whatever their number: those of QPs it does not have in
// one, with the first; those it has but cannot place, the first
// lineerr.Shown each, then a count.
//
// The error (exit status 1) says what went wrong: an input that could not
// be read, lines not understood, ErrNothingJoined; or the sink's.
func ReadRecording(an *Analyzer, o RecordingOptions, sink Sink) error {
	run := &recordingRun{o: o, sink: sink}
	var syn *Syndromes
	var logBad int
	if len(o.Logs) > 0 {
		syn = NewSyndromes()
		for _, path := range o.Logs {
			bad, err := run.readLog(path, syn)
			logBad += bad
			var notLog *kernlog.NotALogError
			if errors.As(err, &notLog) {
				run.warn("%v", err)
				logBad++
			} else if err != nil {
				return err
			}
		}
	}
	pm := NewPostMortem(an, syn)
	recErr, err := run.replay(pm)
	if err != nil {
		return err // the sink's, or the recording could not be opened
	}
	var errs []error
	if syn != nil {
		if err := run.join(pm, syn); err != nil {
			if !errors.Is(err, ErrNothingJoined) {
				return err
			}
			errs = append(errs, err)
		}
	}
	if err := sink.Flush(); err != nil {
		return err
	}
	if logBad > 0 {
		errs = append(errs, fmt.Errorf("%d lines of the kernel logs were not understood (named or counted above)", logBad))
	}
	return errors.Join(append([]error{recErr}, errs...)...)
}

// recordingRun is one ReadRecording.
type recordingRun struct {
	o    RecordingOptions
	sink Sink
}

// warn flushes what was found before it, then says a line on stderr.
func (r *recordingRun) warn(format string, args ...any) {
	_ = r.sink.Flush()
	r.o.Warn(termsafe.Sanitize(fmt.Sprintf(format, args...)))
}

// warnLine says a line not understood: lineerr.Error is terminal-safe.
func (r *recordingRun) warnLine(le *lineerr.Error) {
	_ = r.sink.Flush()
	r.o.Warn(le.Error())
}

// readLog gives the log's syndromes to syn, and says how many of its lines
// could not be read.
func (r *recordingRun) readLog(path string, syn *Syndromes) (bad int, err error) {
	in, done, err := lines.Open(path, r.o.Stdin, r.o.MaxInput)
	if err != nil {
		return 0, err
	}
	defer done()
	return kernlog.NewReader(in, lines.SourceName(path)).Drain(func(rep *rdma.KernelReport) { syn.Take(rep) }, r.warnLine)
}

// replay feeds the recording through pm and writes its lines (held by pm
// when there are logs), then the steps still unanswered at its end (not
// when it could not be read to its end: they may have been answered in
// what is missing). recErr is what the recording's reading ends with (an
// error reading it, lines not understood); err ends the run at once (the
// sink's; a recording that cannot be opened).
func (r *recordingRun) replay(pm *PostMortem) (recErr, err error) {
	in, done, err := lines.Open(r.o.Recording, r.o.Stdin, r.o.MaxInput)
	if err != nil {
		return nil, err
	}
	defer done()
	name := lines.SourceName(r.o.Recording)
	var last time.Time
	var writeErr error
	bad, err := replay.NewReader(in, name).Drain(func(ev *rdma.Event) error {
		last = ev.Time
		writeErr = r.write(pm.Add(ev))
		return writeErr
	}, r.warnLine)
	switch {
	case writeErr != nil:
		return nil, writeErr
	case err != nil:
		return err, r.sink.Flush()
	case bad > 0:
		recErr = fmt.Errorf("%s: %d lines were not events (named or counted above)", name, bad)
	}
	if err := r.write(pm.End(last)); err != nil {
		return nil, err
	}
	return recErr, r.sink.Flush()
}

func (r *recordingRun) write(ls []Line) error {
	for _, l := range ls {
		if err := r.sink.Write(l); err != nil {
			return err
		}
	}
	return nil
}

// join writes the held lines with the syndromes joined, and says those
// that name no QP of the recording: in a few lines whatever their number.
// It returns ErrNothingJoined when the logs had syndromes and none was
// joined.
func (r *recordingRun) join(pm *PostMortem, syn *Syndromes) error {
	held, none := pm.Join()
	name := lines.SourceName(r.o.Recording)
	if syn.Untold > 0 {
		r.warn("%s: %d QPs past the first %d of the numbers the logs name were not kept: a syndrome's QP may be missing", name, syn.Untold, MaxLives)
	}
	var missing, unplaced, told, hidden int
	var firstMissing *Unjoined
	for i := range none {
		u := &none[i]
		n := 1 + u.Repeats
		switch {
		case u.NoQP.Missing:
			if firstMissing == nil {
				firstMissing = u
			}
			missing += n
		case told < lineerr.Shown:
			unplaced += n
			told++
			r.warn("%s: %s", syndromeName(u.Report), u.NoQP.Why+repeated(u.Repeats))
		default:
			unplaced += n
			hidden += n
		}
	}
	if hidden > 0 {
		r.warn("… and %d more syndromes of QPs the recording has that it cannot place (not shown)", hidden)
	}
	if missing > 0 {
		what := fmt.Sprintf("%d syndromes for QPs the recording does not have (first: %s)", missing, syndromeName(firstMissing.Report))
		if missing == 1 {
			what = "1 syndrome for a QP the recording does not have: " + syndromeName(firstMissing.Report)
		}
		r.warn("%s", what)
	}
	if syn.NotKept > 0 {
		r.warn("%d syndromes past the first %d of the logs were not kept: their QPs are not named (first: %s)", syn.NotKept, MaxSyndromes, syn.FirstNotKept)
	}
	if err := r.write(held); err != nil {
		return err
	}
	if total := syn.Lines(); total > 0 && missing+unplaced+syn.NotKept == total {
		return ErrNothingJoined
	}
	return nil
}

// syndromeName is where a syndrome was logged and what it names:
// "dmesg.txt:4: mlx5_0/1 QP 137".
func syndromeName(r *rdma.KernelReport) string {
	return fmt.Sprintf("%s:%d: %s/%d QP %d", r.Source, r.Line, r.Device, r.Port, r.QPN)
}

// repeated says how many times more the logs have a line.
func repeated(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (the logs have this line %d times more)", n)
}
