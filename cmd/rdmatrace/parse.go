package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/debugfs"
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func init() { commands = append(commands, parseCommand()) }

func parseCommand() *cli.Command {
	return &cli.Command{
		Name:      "parse",
		Usage:     "read saved RDMA state: legacy rdma_cm debugfs dumps, `rdma res show cm_id|qp` text and JSON",
		ArgsUsage: "[FILE|DIR|-]...",
		Description: `Reads each FILE (- for standard input, the default), or the files of each
DIR tree that hold RDMA state (a support bundle), in any of the forms the
legacy dumps arrive in: one device file, cat of several, grep -H/-r output,
head/tail output, with CRLF, tabs or a truncated last line. The kind of each
input is told by its content.

` + filterHelp(parseFilterFlagKeys...) + `   With -f, every filter of rdmatrace res cm_id (and qp, for rdma res qp input).

EXAMPLES:
   rdmatrace parse /sys/kernel/debug/rdma_cm/*      # a live legacy dump
   rdmatrace parse -f 'state LISTEN' bundle/        # the listeners of a support bundle
   rdma res show cm_id -j | rdmatrace parse -o legacy
   rdmatrace parse --filter-pid 1234 -j dump.txt

EXIT STATUS:
` + exitStatus("some lines were rejected (each is named on stderr; every good record is still printed)",
			"usage error, or an input that cannot be read"),
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "write one JSON object per record (NDJSON, as a stream is); same as -o ndjson"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output `FORMAT`: table, json (one array), ndjson (one object a line, as -j), legacy"},
			&cli.StringFlag{Name: "filter", Aliases: []string{"f"}, Usage: "keep records matching `EXPR`, with the filters of `rdmatrace res cm_id` (e.g. 'state LISTEN ps TCP src-port 7174')"},
			&cli.BoolFlag{Name: "details", Aliases: []string{"d"}, Usage: "accepted as in iproute2 (-dd too); every output shows all a record has already"},
			maxInputFlag,
		}, filterFlags(false, parseFilterFlagKeys...)...),
		OnUsageError: func(_ *cli.Context, err error, _ bool) error { return exitWith(2, err) },
		Action:       runParse,
	}
}

// parseSink is where parsed records go: one writer per format.
type parseSink = formats.Sink[*debugfs.Record]

// newParseSink is parse's writer for -o (output) and -j (json); note says
// on stderr what a table or the legacy layout left out.
func newParseSink(output string, json bool, stdout io.Writer, note func(string)) (parseSink, error) {
	f, err := formats.ParseFormat(output, json, formats.FormatNDJSON,
		formats.FormatTable, formats.FormatJSON, formats.FormatNDJSON, formats.FormatLegacy)
	if err != nil {
		return nil, exitWith(2, err)
	}
	switch f {
	case formats.FormatTable:
		return formats.NewParsedTableSink(stdout, note, func(rec *debugfs.Record) (string, int, *rdma.Resource) {
			return rec.Source, rec.Line, &rec.Res
		}), nil
	case formats.FormatLegacy:
		return debugfs.NewLegacySink(stdout, note), nil
	}
	return formats.NewObjectSink(stdout, f, false, func(o formats.Object, rec *debugfs.Record) formats.Object {
		return formats.ParsedObject(rec.Source, rec.Line, &rec.Res)
	}), nil
}

// runParse is `rdmatrace parse` (debugfs.Parse).
func runParse(c *cli.Context) error {
	stdout, stderr := c.App.Writer, c.App.ErrWriter
	if stderr == nil {
		stderr = os.Stderr
	}
	warn := func(line string) { fmt.Fprintf(stderr, "rdmatrace: %s\n", line) }
	sink, err := newParseSink(c.String("output"), c.Bool("json"), stdout, warn)
	if err != nil {
		return err
	}
	keep, err := filter.ParseSaved(filterOptions(c, strings.Fields(c.String("filter")), parseFilterFlagKeys...))
	if err != nil {
		return exitWith(2, err)
	}
	paths := c.Args().Slice()
	if len(paths) == 0 {
		if f, ok := c.App.Reader.(*os.File); ok && isTerminal(f) {
			return exitWith(2, errors.New("parse: no input: name files or directories, or pipe a dump to standard input"))
		}
		paths = []string{"-"}
	}
	res, err := debugfs.Parse(debugfs.ParseOptions{Paths: paths, Stdin: c.App.Reader, MaxInput: maxInputOptions(c), Keep: keep, Warn: warn,
		// lineerr.Error quotes the input it shows: terminal-safe.
		BadLine: func(le *lineerr.Error) { fmt.Fprintln(stderr, le.Error()) }}, sink)
	if err != nil {
		return exitWith(2, fmt.Errorf("write: %w", err))
	}
	if err := sink.Close(); err != nil {
		return exitWith(2, fmt.Errorf("write: %w", err))
	}
	switch {
	case res.Failed:
		return exitWith(2, nil)
	case res.Rejected > 0:
		warn(fmt.Sprintf("%d line(s) rejected, %d record(s) read", res.Rejected, res.Records))
		return exitWith(1, nil)
	}
	return nil
}

// isTerminal reports whether f is a terminal: waiting on one for a dump
// nobody is going to type is a usage error.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parseFilterFlagKeys are res's --filter-KEY flags that a saved dump can
// answer: it records no cgroup, container or pod.
var parseFilterFlagKeys = []string{"pid", "comm", "dev"}
