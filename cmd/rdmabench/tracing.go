package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/correlate"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/perfetto"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/plot"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/report"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/tracerun"
)

// The traced half: rdmatrace runs as its own process beside the benchmark
// (its cost is its own, measured apart), following this process so that
// the benchmark threads' off-CPU spells are traced too; after each run its
// NDJSON is read back and joined with the samples.

// tracingFlags are added to every command (main.go).
var tracingFlags = []cli.Flag{
	&cli.StringFlag{Name: "rdmatrace", Usage: "the rdmatrace binary that traces (default: next to rdmabench, then in the sbin beside its bin, then on PATH)"},
	&cli.StringFlag{Name: "perfetto", Usage: "write the run as Chrome trace JSON to `FILE` (open it in ui.perfetto.dev); untraced: the samples (lat) or the program's steps (conn)"},
	&cli.StringFlag{Name: "plot", Usage: "draw latency over time and the CDF to `FILE`.svg or .png (lat), with the outliers' causes when traced"},
	&cli.Float64Flag{Name: "outlier-factor", Value: 3, Usage: "a sample is an outlier above max(p99, this × median)"},
	&cli.StringFlag{Name: "trace-dir", Usage: "keep what the tracer recorded (trace.ndjson, its stderr in trace.err) in `DIR`"},
}

// traceRequest says what to trace and where correlated records go.
type traceRequest struct {
	Bench string    // "lat", "conn" or "ctrl"
	PID   int       // the benchmark's process
	Dev   string    // the device it runs on
	JSON  bool      // records as NDJSON (-j) rather than text
	Out   io.Writer // where the correlation writes (stdout)

	// From the tracing flags, set by traceOptions.
	Off, Must bool    // --no-trace; --trace (a tracer that cannot start is an error)
	Rdmatrace string  // --rdmatrace: the binary ("" finds it)
	Perfetto  string  // --perfetto FILE
	Plot      string  // --plot FILE.svg|.png
	Factor    float64 // --outlier-factor
	TraceDir  string  // --trace-dir DIR: keep the tracer's output there

	// Where the tracer runs (lat: off the benchmark's CPUs), and its
	// nice value; nil and 0 leave it where this process runs.
	CPUs []int
	Nice int
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
	Lat(rec *bench.Recorder, sum *bench.Summary, threads []int, size int) (causes map[string]int, err error)
	Conn(conns []bench.Conn) error
	Ctrl(ops []bench.Op) error
	// TracerSleeps counts the tracer's sleeps so far, each ended by a
	// wakeup (false: unknown).
	TracerSleeps() (int64, bool)
	Stop() error
}

// startTracing starts the tracer; tests replace it with a fake.
var startTracing = startSession

// traceOptions fill req from the tracing flags: --no-trace wins;
// otherwise runs are traced (--trace makes a tracer that cannot start an
// error).
func traceOptions(c *cli.Context, req traceRequest) traceRequest {
	req.Off, req.Must = c.Bool("no-trace"), c.Bool("trace")
	req.Rdmatrace, req.Perfetto, req.Plot, req.Factor = c.String("rdmatrace"), c.String("perfetto"), c.String("plot"), c.Float64("outlier-factor")
	req.TraceDir = c.String("trace-dir")
	return req
}

// startTrace starts the tracer when req asks for it; nil session and
// "off" otherwise.
func startTrace(req traceRequest) (traceSession, string, error) {
	if req.Off {
		return nil, "off", nil
	}
	s, err := startTracing(req)
	if err != nil {
		if req.Must {
			return nil, "", err
		}
		// Traced by default only where the kernel allows it: say why not,
		// on stderr and in the report, and measure alone.
		fmt.Fprintf(os.Stderr, "rdmabench: tracing unavailable, measuring untraced: %v\n", err)
		return nil, "unavailable: " + err.Error(), nil
	}
	return s, tracerDesc(req), nil
}

// tracerDesc says what traces and where it runs.
func tracerDesc(req traceRequest) string {
	d := "rdmatrace trace, beside the benchmark"
	switch len(req.CPUs) {
	case 0:
	case 1:
		d += fmt.Sprintf(", on CPU %d", req.CPUs[0])
	default:
		d += fmt.Sprintf(", on CPUs %s", cpuList(req.CPUs))
	}
	if req.Nice != 0 {
		d += fmt.Sprintf(", nice %d", req.Nice)
	}
	return d
}

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// checkOutputs refuses, before anything runs, a --plot or --perfetto that
// the command could not write.
func checkOutputs(req traceRequest) error {
	bench := req.Bench
	if p := req.Plot; p != "" {
		if bench != "lat" {
			return fmt.Errorf("--plot %s: %s has no latency series to draw; --plot is for lat", p, bench)
		}
		if _, err := plot.Format(p); err != nil {
			return err
		}
	}
	if p := req.Perfetto; p != "" && bench == "ctrl" && req.Off {
		return fmt.Errorf("--perfetto %s: ctrl's file shows the traced kernel events, and --no-trace turns tracing off", p)
	}
	return nil
}

// newOutputs is what --plot and --perfetto will be written from.
func newOutputs(req traceRequest) *outputs {
	return &outputs{req: traceRequest{PID: req.PID, Dev: req.Dev, Perfetto: req.Perfetto, Plot: req.Plot, Factor: req.Factor}}
}

// session is a tracer beside this benchmark and what it has joined so far,
// for the files written at Stop.
type session struct {
	outputs
	run *tracerun.Run
}

// outputs is what --plot and --perfetto show: the samples, and when the
// run was traced the outliers, the connections' phases and the events.
type outputs struct {
	req     traceRequest
	samples []bench.Sample
	lat     []correlate.Result
	conns   []bench.Conn
	phases  *correlate.ConnResult
	events  []rdma.Event
	traced  bool
	// nSamples counts the lat samples; samples keeps a bounded share of
	// them (every k-th, bench.Recorder.Series) for the plot and the
	// Perfetto file. leftOut
	// counts the traced events the Perfetto file does not show.
	nSamples int
	leftOut  int
}

// addSeries keeps rec's share of samples for the files.
func (o *outputs) addSeries(rec *bench.Recorder) {
	o.nSamples += rec.N()
	o.samples = append(o.samples, rec.Series()...)
}

// A long run is held in bounded memory: the samples and events the plot
// and the Perfetto file show are capped (the outliers and the events that
// overlapped them are always shown). The join itself keeps no event that
// overlaps no outlier (correlate.Join).
const (
	keptSamples = 250_000 // per lat run, for the plot and the Perfetto counter
	keptEvents  = 100_000 // per session, for the Perfetto file
)

func startSession(req traceRequest) (traceSession, error) {
	if req.Plot != "" {
		if _, err := plot.Format(req.Plot); err != nil {
			return nil, err
		}
	}
	if req.TraceDir != "" {
		// The user's directory, made as the user who ran sudo, as the
		// files in it are.
		if err := safefile.MkdirAll(req.TraceDir, safefile.Invoker(os.Getenv)); err != nil {
			return nil, fmt.Errorf("--trace-dir: %w", err)
		}
	}
	run, err := tracerun.Start(tracerun.Options{Path: req.Rdmatrace, Follow: []int{req.PID}, Dir: req.TraceDir, CPUs: req.CPUs, Nice: req.Nice})
	if err != nil {
		return nil, err
	}
	return &session{outputs: outputs{req: req, traced: true}, run: run}, nil
}

// events reads what was traced since the last call; bad lines are told
// on stderr, one line each, and the rest is used.
func (s *session) newEvents() ([]rdma.Event, error) {
	evs, bad, err := s.run.Events()
	s.passBad(bad)
	s.events = append(s.events, evs...)
	return evs, err
}

func (s *session) Lat(rec *bench.Recorder, sum *bench.Summary, threads []int, size int) (map[string]int, error) {
	j := correlate.NewJoinRecorder(rec, correlate.Options{Factor: s.req.Factor, PID: uint32(s.req.PID), Threads: threads, Dev: s.req.Dev, Summary: sum})
	seen := make(map[eventKey]bool)
	// Every event that can overlap a sample is read before the join: the
	// tracer may lag behind the run's end under a flood.
	end := rec.End()
	bad, err := s.run.EachUntil(end, func(e *rdma.Event) {
		j.Add(e)
		if len(s.events) < keptEvents {
			s.events = append(s.events, *e)
			seen[keyOf(e)] = true
		} else {
			s.leftOut++
		}
	})
	s.passBad(bad)
	if err != nil {
		return nil, err
	}
	r := j.Result()
	// The events that explain an outlier are shown even past the cap.
	for _, o := range r.Outliers {
		for i := range o.Events {
			if k := keyOf(&o.Events[i]); !seen[k] {
				seen[k] = true
				s.events = append(s.events, o.Events[i])
			}
		}
	}
	s.addSeries(rec)
	s.lat = append(s.lat, r)
	if s.req.JSON {
		err = report.WriteOutliersJSON(s.req.Out, &r, size)
	} else {
		err = report.WriteOutliersText(s.req.Out, &r)
	}
	return r.Causes, err
}

func (s *session) TracerSleeps() (int64, bool) { return s.run.Sleeps() }

// eventKey tells one traced event from another well enough to show it
// once.
type eventKey struct {
	mono, dur uint64
	kind      rdma.EventKind
	tid       uint32
}

func keyOf(e *rdma.Event) eventKey {
	return eventKey{mono: e.Mono, dur: e.Length(), kind: e.Kind, tid: e.Owner.TID}
}

func (s *session) Conn(conns []bench.Conn) error {
	evs, err := s.newEvents()
	if err != nil {
		return err
	}
	r := correlate.Connections(conns, evs)
	s.conns, s.phases = append(s.conns, conns...), &r
	if s.req.JSON {
		return report.WritePhasesJSON(s.req.Out, &r)
	}
	return report.WritePhasesText(s.req.Out, &r)
}

func (s *session) Ctrl(ops []bench.Op) error {
	evs, err := s.newEvents()
	if err != nil {
		return err
	}
	k := correlate.Ops(ops, evs)
	if s.req.JSON {
		return report.WriteOpKernelJSON(s.req.Out, k)
	}
	return report.WriteOpKernelText(s.req.Out, k)
}

// passBad tells the trace's bad lines on stderr, one line each, and
// what the tracer lost.
func (s *session) passBad(bad []error) {
	for _, b := range bad {
		fmt.Fprintf(os.Stderr, "rdmabench: %v\n", b)
	}
	s.passWarnings()
}

// passWarnings tells, on stderr, what the tracer lost: the outliers of a
// run that lost events may lack their causes.
func (s *session) passWarnings() {
	for _, w := range s.run.Warnings() {
		fmt.Fprintf(os.Stderr, "rdmabench: the tracer: %s\n", strings.TrimPrefix(w, "rdmatrace: "))
	}
}

// Stop ends the tracer, then writes the plot and the Perfetto file if asked.
func (s *session) Stop() error {
	err := s.run.Stop()
	s.passWarnings()
	if werr := s.write(); werr != nil && err == nil {
		err = werr
	}
	return err
}

// write writes the plot and the Perfetto file, if asked: a run untraced
// has its samples (lat) or its program's steps (conn) in them, without
// causes.
func (o *outputs) write() error {
	err := o.writePlot()
	if o.req.Perfetto == "" {
		return err
	}
	f, ferr := safefile.Create(o.req.Perfetto, safefile.Invoker(os.Getenv))
	if ferr != nil {
		return ferr
	}
	if o.leftOut > 0 {
		fmt.Fprintf(os.Stderr, "rdmabench: --perfetto %s shows %d traced events and the outliers' own; %d others are left out\n", o.req.Perfetto, keptEvents, o.leftOut)
	}
	phases := o.phases
	if phases == nil && len(o.conns) > 0 {
		r := correlate.Connections(o.conns, nil) // the program's own steps
		phases = &r
	}
	tl := perfetto.Timeline{PID: o.req.PID, Samples: o.samples, Events: o.events, Conns: o.conns, Phases: phases}
	for _, r := range o.lat {
		tl.Outliers = append(tl.Outliers, r.Outliers...)
	}
	if werr := perfetto.Write(f, &tl); werr != nil {
		f.Close()
		return fmt.Errorf("--perfetto %s: %w", o.req.Perfetto, werr)
	}
	if cerr := f.Close(); cerr != nil {
		return cerr
	}
	return err
}

// writePlot draws the lat series (all sizes together), with their
// outliers when traced.
func (o *outputs) writePlot() error {
	if o.req.Plot == "" {
		return nil
	}
	if len(o.samples) == 0 {
		return fmt.Errorf("--plot %s: no samples to draw (the run ended before its first series)", o.req.Plot)
	}
	format, err := plot.Format(o.req.Plot)
	if err != nil {
		return err
	}
	factor := o.req.Factor
	if factor <= 0 {
		factor = 3
	}
	run := &plot.Run{Samples: o.samples,
		Title: fmt.Sprintf("rdmabench lat on %s, %d samples, untraced (no causes: the run was not traced)", o.req.Dev, o.nSamples)}
	if o.traced {
		res := correlate.Result{}
		for _, r := range o.lat {
			res.Outliers = append(res.Outliers, r.Outliers...)
			res.Threshold = max(res.Threshold, r.Threshold)
		}
		run.Result = &res
		run.Title = fmt.Sprintf("rdmabench lat on %s, %d samples traced; outliers above max(p99, %g x median), by what overlapped them", o.req.Dev, o.nSamples, factor)
	}
	f, err := safefile.Create(o.req.Plot, safefile.Invoker(os.Getenv))
	if err != nil {
		return err
	}
	if werr := plot.Write(f, format, run); werr != nil {
		f.Close()
		return fmt.Errorf("--plot %s: %w", o.req.Plot, werr)
	}
	return f.Close()
}
