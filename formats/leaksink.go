package formats

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// LeakRecord is one record of a leaks report: a finding, a report the
// kernel logged (with what a recording added to it), or the end of a
// clean program's run. Exactly one of its parts is set.
type LeakRecord struct {
	Finding *rdma.Finding
	Kernel  *KernelNote
	NoLeaks *NoLeaks
}

// KernelNote is a kernel log's report as leaks shows it: whether a
// recording was given, how many of its findings it matched, and where the
// findings of the same unregistration were shown (SameAs).
type KernelNote struct {
	Report        *rdma.KernelReport
	WithRecording bool
	Matched       int
	SameAs        string
	// NoQP says why a recording names no QP for a QP error syndrome.
	NoQP string
	// Repeats is how many times more the logs have the report's line (a
	// QP error syndrome's: the same line is kept once).
	Repeats int
}

// NoLeaks ends the report of a program that left nothing behind.
type NoLeaks struct {
	Time               time.Time
	Created, Destroyed int
}

// NewLeakSink is the writer of a leaks report: NDJSON (one object a
// record, as a stream is; -o json too) or the human report (FormatText).
func NewLeakSink(w io.Writer, f Format) Sink[LeakRecord] {
	if f == FormatNDJSON || f == FormatJSON {
		return &leakNDJSON{nd: NewNDJSONWriter(w)}
	}
	b := bufio.NewWriter(w)
	return &leakText{w: b, human: NewLeakWriter(b)}
}

type leakNDJSON struct{ nd *NDJSONWriter }

func (s *leakNDJSON) Write(r LeakRecord) error {
	switch {
	case r.Finding != nil:
		return s.nd.Write(FindingObject(r.Finding))
	case r.Kernel != nil:
		k := r.Kernel
		o := KernelReportObject(k.Report)
		if k.WithRecording {
			o = append(o, Field{Key: "recording-findings", Kind: Num, Num: uint64(k.Matched)})
		}
		if k.SameAs != "" {
			o = append(o, Field{Key: "same-unregistration-as", Kind: Str, Str: k.SameAs})
		}
		if k.NoQP != "" {
			o = o.str("no-qp", k.NoQP)
		}
		if k.Repeats > 0 {
			o = append(o, Field{Key: "repeats", Kind: Num, Num: uint64(k.Repeats)})
		}
		return s.nd.Write(o)
	case r.NoLeaks != nil:
		return s.nd.Write(NoLeaksObject(r.NoLeaks.Time, r.NoLeaks.Created, r.NoLeaks.Destroyed))
	}
	return nil
}

func (s *leakNDJSON) Flush() error { return s.nd.Flush() }
func (s *leakNDJSON) Close() error { return s.nd.Flush() }

// leakText groups findings into the human report's tables (LeakWriter);
// a kernel report or the no-leaks line first writes out the group before
// it.
type leakText struct {
	w     *bufio.Writer
	human *LeakWriter
}

func (s *leakText) Write(r LeakRecord) error {
	if r.Finding != nil {
		return s.human.Write(r.Finding)
	}
	if err := s.human.Flush(); err != nil {
		return err
	}
	var line string
	switch {
	case r.Kernel != nil:
		k := r.Kernel
		line = KernelReportLine(k.Report)
		switch {
		case k.SameAs != "":
			line += "\n  (the same unregistration as " + Sanitize(k.SameAs) + ")"
		case k.NoQP != "":
			line += "\n  (" + Sanitize(k.NoQP) + ")"
		case k.WithRecording && k.Matched == 0:
			line += "\n  (the recording says nothing more about it)"
		}
		if k.Repeats > 0 {
			line += fmt.Sprintf("\n  (the logs have this line %d times more)", k.Repeats)
		}
	case r.NoLeaks != nil:
		line = NoLeaksLine(r.NoLeaks.Created, r.NoLeaks.Destroyed)
	default:
		return nil
	}
	_, err := s.w.WriteString(line + "\n")
	return err
}

func (s *leakText) Flush() error {
	if err := s.human.Flush(); err != nil {
		return err
	}
	return s.w.Flush()
}

func (s *leakText) Close() error { return s.Flush() }

// LeakReport is a leaks report as its producers write it, live (the
// watch's findings, a clean program's end) and post-mortem (with Kernel's
// reports): each record through NewLeakSink, the first error kept for
// Flush (a watcher's callback has none to return).
type LeakReport struct {
	s   Sink[LeakRecord]
	err error
}

// NewLeakReport writes a report to w: NDJSON with json, else the human
// report.
func NewLeakReport(w io.Writer, json bool) *LeakReport {
	f := FormatText
	if json {
		f = FormatNDJSON
	}
	return &LeakReport{s: NewLeakSink(w, f)}
}

func (r *LeakReport) put(rec LeakRecord) {
	if r.err == nil {
		r.err = r.s.Write(rec)
	}
}

// Finding writes one finding.
func (r *LeakReport) Finding(f *rdma.Finding) { r.put(LeakRecord{Finding: f}) }

// Kernel writes a report of a kernel log.
func (r *LeakReport) Kernel(n KernelNote) { r.put(LeakRecord{Kernel: &n}) }

// NoLeaks ends the report of a program that left nothing behind.
func (r *LeakReport) NoLeaks(now time.Time, created, destroyed int) {
	r.put(LeakRecord{NoLeaks: &NoLeaks{Time: now, Created: created, Destroyed: destroyed}})
}

// Flush writes out what is buffered; it returns the first error.
func (r *LeakReport) Flush() error {
	if err := r.s.Flush(); r.err == nil {
		r.err = err
	}
	return r.err
}
