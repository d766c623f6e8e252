package main

import (
	"fmt"
	"io"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/leaks"
	lineio "github.com/rdmatrace/rdmatrace/internal/base/lines"
)

// inputLimits bound what a post-mortem reads: --max-input (decompressed
// bytes of an input, decompress.DefaultLimit when 0) and --max-table
// (resources of a recording tracked at once, as live, 1<<18 when 0).
type inputLimits struct {
	maxInput int64
	maxTable int
}

// runLeakLog is `rdmatrace leaks --log FILE... [--recording FILE]`
// (leaks.ReadLogs): the kernel's own leak and hang reports, each followed
// by what a recording of the same boot says about it. "-" reads stdin.
func runLeakLog(logs []string, recording string, limits inputLimits, f *filter.Events, sink *findingSink, stdin io.Reader, stderr io.Writer) error {
	inputs := logs
	if recording != "" {
		inputs = append([]string{recording}, logs...)
	}
	if err := lineio.StdinOnce(inputs, "give it to one --log or to --recording"); err != nil {
		return exitWith(2, err)
	}
	res, err := leaks.ReadLogs(leaks.LogOptions{Logs: logs, Recording: recording, Keep: f.Match, Stdin: stdin, MaxInput: limits.maxInput,
		Limits: leaks.PostMortemLimits{MaxTable: limits.maxTable, Window: reorderWindow},
		Warn:   func(line string) { fmt.Fprintf(stderr, "rdmatrace: %s\n", line) }}, logSink{sink})
	switch {
	case err != nil:
		return err
	case res.Failed > 0:
		return exitWith(2, nil) // what was read is shown; the answer is incomplete
	case res.Reports > 0:
		return exitWith(exitLeaked, nil)
	case res.Bad > 0:
		return exitWith(1, nil)
	}
	return nil
}

// logSink is findingSink as leaks.ReadLogs writes to it (its Finding and
// Flush are findingSink's).
type logSink struct{ *findingSink }

func (s logSink) Report(n leaks.ReportNote) {
	s.put(formats.LeakRecord{Kernel: &formats.KernelNote{Report: n.Report, WithRecording: n.WithRecording, Matched: n.Matched,
		SameAs: n.SameAs, NoQP: n.NoQP, Repeats: n.Repeats}})
}
