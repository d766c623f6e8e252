package debugfs

import (
	"errors"
	"io"
	"slices"
	"strconv"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// ParseOptions are what `rdmatrace parse` reads, and where it says what
// it could not.
type ParseOptions struct {
	// Paths are files, directories (their files that hold RDMA state)
	// and lines.Stdin.
	Paths []string
	// Stdin is what lines.Stdin reads.
	Stdin io.Reader
	// MaxInput bounds each compressed input once decompressed
	// (decompress.DefaultLimit when 0).
	MaxInput int64
	// Keep selects the records written; nil keeps all.
	Keep func(*rdma.Resource) bool
	// Warn writes a line on stderr (terminal-safe already): an input that
	// could not be read, or was skipped.
	Warn func(line string)
	// BadLine says a line that yields no record.
	BadLine func(*lineerr.Error)
}

// RecordSink is where Parse writes records (formats' sinks, the legacy
// sink).
type RecordSink interface {
	Write(*Record) error
}

// ParseResult is how a Parse went, for its exit status.
type ParseResult struct {
	Records  int  // records read, kept or not
	Rejected int  // lines that yielded none
	Failed   bool // an input could not be read (one skipped is not)
}

// Parse reads every input of o, in order, and writes each record Keep
// keeps to sink. A line that yields nothing is told and counted, and the
// rest still read; an input that cannot be read is told and the others
// still read. Its error is the sink's.
func Parse(o ParseOptions, sink RecordSink) (ParseResult, error) {
	var res ParseResult
	report := func(err error) {
		for _, e := range unjoin(err) {
			o.Warn(termsafe.Sanitize(e.Error()))
			var skip *SkipError
			if !errors.As(e, &skip) {
				res.Failed = true
			}
		}
	}
	for _, p := range o.Paths {
		inputs, err := InputsMax(p, o.Stdin, o.MaxInput)
		if err != nil {
			report(err)
		}
		for _, in := range inputs {
			rc, err := in.Open()
			if err != nil {
				report(err)
				continue
			}
			rd := NewReader(rc, in.Name)
			var writeErr error
			bad, err := lines.Drain(func() error {
				rec, err := rd.Next()
				if err != nil {
					return err
				}
				res.Records++
				if o.Keep == nil || o.Keep(&rec.Res) {
					writeErr = sink.Write(rec)
				}
				return writeErr
			}, o.BadLine)
			rc.Close()
			res.Rejected += bad
			if writeErr != nil {
				return res, writeErr
			}
			if err != nil {
				report(err)
			}
		}
	}
	return res, nil
}

// unjoin lists the errors errors.Join joined into err, recursively: each
// is said on a line of its own.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, unjoin(e)...)
	}
	return out
}

// LegacySink writes rdma_cm IDs in the legacy layout, each under the
// header it was read under; records of `rdma` output get the 2009 columns
// plus PID and COMM. QPs have no place in the layout: they are counted,
// and said at Close through note.
type LegacySink struct {
	w       *LegacyWriter
	note    func(line string)
	skipped int
}

// NewLegacySink writes to w; note says what was left out.
func NewLegacySink(w io.Writer, note func(line string)) *LegacySink {
	return &LegacySink{w: NewLegacyWriter(w), note: note}
}

var rdmaLegacyColumns = append(slices.Clip(rdma.LegacyColumns), "PID", "COMM")

// Write writes an rdma_cm ID, and counts a QP.
func (s *LegacySink) Write(rec *Record) error {
	if rec.Res.Type != rdma.ResCMID {
		s.skipped++
		return nil
	}
	cols := rdmaLegacyColumns
	if rec.Layout != nil {
		cols = rec.Layout.Names
	}
	return s.w.Write(&rec.Res, cols)
}

// Flush writes what is buffered.
func (s *LegacySink) Flush() error { return s.w.Flush() }

// Close says how many QPs were left out, and flushes.
func (s *LegacySink) Close() error {
	if s.skipped > 0 {
		s.note(strconv.Itoa(s.skipped) + " qp record(s) not written: the legacy layout holds rdma_cm IDs only")
	}
	return s.w.Flush()
}
