package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/bench"
)

// The traced half of rdmabench lives in tracing.go (another branch): it
// starts `rdmatrace trace -j` beside the benchmark, and after the run joins
// what was traced with what was measured. This file is the contract between
// the two halves. Without tracing.go, startTracing stays nil: runs are
// untraced and --trace is an error that says so; nothing is faked.

// traceRequest says what to trace and where correlated records go.
type traceRequest struct {
	Bench string    // "lat", "conn" or "ctrl"
	PID   int       // the benchmark's process
	Dev   string    // the device it runs on
	JSON  bool      // records as NDJSON (-j) rather than text
	Out   io.Writer // where the correlation writes (stdout)

	// From the tracing flags (tracing.go's tracingFlags), set by startTrace.
	Rdmatrace string  // --rdmatrace: the binary ("" finds it)
	Perfetto  string  // --perfetto FILE
	Plot      string  // --plot FILE.svg|.png
	Factor    float64 // --outlier-factor
	TraceDir  string  // --trace-dir DIR: keep the tracer's output there
}

// traceSession is a tracer running beside the benchmark. startTracing
// returns once its hooks are attached, so the benchmark never runs untraced
// by accident. After each run the matching method joins what was traced
// with what was measured and writes it to the request's Out: for lat the
// outliers with what overlapped them (it returns the cause counts for the
// summary; threads are the benchmark's timed threads, size the message size
// its outlier records carry), for conn the phases
// of each connection, for ctrl the kernel's time per op. Stop ends tracing.
type traceSession interface {
	Lat(samples []bench.Sample, threads []int, size int) (causes map[string]int, err error)
	Conn(conns []bench.Conn) error
	Ctrl(ops []bench.Op) error
	Stop() error
}

// startTracing is set by tracing.go's init.
var startTracing func(traceRequest) (traceSession, error)

var errNoTracing = errors.New("--trace: this rdmabench was built without tracing (cmd/rdmabench/tracing.go)")

// tracing decides whether to trace: --no-trace wins, --trace insists, and
// otherwise runs are traced when tracing was built in.
func tracing(c *cli.Context) (bool, error) {
	switch {
	case c.Bool("no-trace"):
		return false, nil
	case c.Bool("trace"):
		if startTracing == nil {
			return false, errNoTracing
		}
		return true, nil
	}
	return startTracing != nil, nil
}

// startTrace starts the tracer when c asks for it; nil session and
// "off" otherwise.
func startTrace(c *cli.Context, req traceRequest) (traceSession, string, error) {
	on, err := tracing(c)
	if err != nil || !on {
		return nil, "off", err
	}
	req.Rdmatrace, req.Perfetto, req.Plot, req.Factor = c.String("rdmatrace"), c.String("perfetto"), c.String("plot"), c.Float64("outlier-factor")
	req.TraceDir = c.String("trace-dir")
	s, err := startTracing(req)
	if err != nil {
		if c.Bool("trace") {
			return nil, "", err
		}
		// Traced by default only where the kernel allows it: say why not,
		// on stderr and in the report, and measure alone.
		fmt.Fprintf(os.Stderr, "rdmabench: tracing unavailable, measuring untraced: %v\n", err)
		return nil, "unavailable: " + err.Error(), nil
	}
	return s, "rdmatrace trace, beside the benchmark", nil
}
