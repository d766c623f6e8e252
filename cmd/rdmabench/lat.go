package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/report"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/verbs"
)

const maxSamples = math.MaxInt32 // -n; a series is held in bounded memory (bench.Recorder)

func latCommand() *cli.Command {
	return &cli.Command{
		Name:  "lat",
		Usage: "RC ping-pong latency over rdma_cm: RDMA WRITE (as ib_write_lat), SEND (ib_send_lat) or READ (ib_read_lat)",
		Description: "Both ends run in this process by default (a server and a client thread, each on its own CPU),\n" +
			"or use --server on one host and --client ADDR on the other. The table is perftest's, one row per\n" +
			"size, from a pass with no tracer. In one process a traced pass follows (--no-trace: none): its own\n" +
			"table with traced/untraced per size, then the slow samples and what overlapped them; the tracer\n" +
			"runs on the CPUs the two ends leave free at nice 19 (where none are free, where the scheduler puts it). Between two hosts, --trace\n" +
			"on both ends asks for the traced pass.\n\n" +
			"EXAMPLES:\n" +
			"   rdmabench lat -d rxe0                          # 2 bytes, 1000 iterations, as ib_write_lat\n" +
			"   rdmabench lat -d rxe0 --op send -a --no-trace  # ib_send_lat -a: every size, one table\n" +
			"   rdmabench lat -d rxe0 -s 64,4K -D 60 -j        # a minute per size, NDJSON records\n" +
			"   rdmabench lat -d rxe0 --plot lat.svg           # latency over time and its CDF, causes marked\n\n" +
			"EXIT STATUS:\n" + exitStatus(""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "op", Value: "write", Usage: "write, send or read"},
			devFlag, ibPortFlag, gidFlag,
			&cli.StringFlag{Name: "size", Aliases: []string{"s"}, Value: "2", Usage: "message size(s): 2, 4K, or a list 2,64,4K"},
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "every size from 2 to 8M (powers of two), as perftest -a"},
			&cli.IntFlag{Name: "iters", Aliases: []string{"n"}, Value: 1000, Usage: "samples per size"},
			&cli.IntFlag{Name: "duration", Aliases: []string{"D"}, Usage: "run each size for this many seconds instead (with -n: until either is reached)"},
			&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Value: 18515, Usage: "rdma_cm port"},
			addrFlag,
			&cli.BoolFlag{Name: "no-pin", Usage: "leave the threads unpinned (default: server and client each on its own CPU)"},
			&cli.StringFlag{Name: "tracer-cpus", Usage: "run the tracer on `CPUS` (a list: 2,3) at nice 19, or \"any\": where it likes, at this process's nice (default: the CPUs the two ends leave free, else any)"},
			&cli.BoolFlag{Name: "server", Usage: "be the server for a client on another host"},
			&cli.StringFlag{Name: "client", Usage: "be the client of the server at `ADDR`"},
			timeoutFlag, jsonFlag, traceFlag, noTraceFlag,
		},
		Action: runLat,
	}
}

func runLat(c *cli.Context) error {
	l, err := latOptions(c)
	if err != nil {
		return err
	}
	if l.server {
		return l.serve()
	}
	if err := checkOutputs(l.req); err != nil {
		return err
	}
	if l.req.CPUs, l.req.Nice, err = tracerCPUs(l.tracerCPUs, l.cfg.CPUs); err != nil {
		return err
	}
	l.out = newOutputs(l.req)
	table := &report.LatTable{W: os.Stdout}
	for _, s := range l.sizes {
		table.Sizes = append(table.Sizes, int(s))
	}
	if l.traced {
		table.Trace = "rdmatrace"
	}
	untraced, err := l.untracedPass(table)
	if err != nil {
		return err
	}
	if !l.traced {
		return l.out.write()
	}
	return l.tracedPass(table, untraced)
}

// latRun is one lat invocation, as its flags say.
type latRun struct {
	cfg        verbs.LatConfig
	op         verbs.Op
	sizes      []int64
	addr       string
	iters      int
	dur        time.Duration
	server     bool // --server: serve each size (twice when traced)
	client     bool // --client ADDR: this end only
	traced     bool // a traced pass follows the headline's
	tracerCPUs string
	factor     float64 // --outlier-factor
	req        traceRequest
	clock      float64
	emu        string
	out        *outputs
}

func latOptions(c *cli.Context) (*latRun, error) {
	if c.NArg() > 0 {
		return nil, fmt.Errorf("lat takes no arguments (got %q): the server's address goes after --client", c.Args().First())
	}
	l := &latRun{iters: c.Int("iters"), dur: time.Duration(c.Int("duration")) * time.Second,
		server: c.Bool("server"), client: c.IsSet("client"), tracerCPUs: c.String("tracer-cpus"), factor: c.Float64("outlier-factor")}
	var err error
	if l.op, err = verbs.ParseOp(c.String("op")); err != nil {
		return nil, err
	}
	if l.sizes, err = parseSizes(c.String("size")); err != nil {
		return nil, fmt.Errorf("-s: %w", err)
	}
	if c.Bool("all") {
		l.sizes = powers(2, 8<<20, 2)
	}
	switch {
	case l.iters < 1 || l.iters > maxSamples:
		return nil, fmt.Errorf("-n %d: want 1 to %d samples", l.iters, maxSamples)
	case l.dur < 0:
		return nil, fmt.Errorf("-D %d: want a number of seconds", c.Int("duration"))
	case l.server && l.client:
		return nil, fmt.Errorf("--server and --client: one end or the other")
	}
	if l.dur > 0 && !c.IsSet("iters") {
		l.iters = 0 // no count: the duration ends the series
	}
	dev, err := verbs.CheckDevice(c.String("ib-dev"), c.Int("ib-port"), c.Int("gid-index"))
	if err != nil {
		return nil, err
	}
	for _, s := range l.sizes {
		if dev.MaxMsgSz > 0 && s > int64(dev.MaxMsgSz) {
			return nil, fmt.Errorf("-s %d: beyond the largest message of %s port %d (%d bytes)", s, dev.Name, c.Int("ib-port"), dev.MaxMsgSz)
		}
	}
	if l.addr = c.String("client"); l.addr == "" {
		l.addr = c.String("addr")
	}
	if l.addr == "" {
		if l.addr, err = verbs.AddrOf("/sys", dev.Name, c.Int("ib-port"), c.Int("gid-index")); err != nil {
			return nil, err
		}
	}
	l.cfg = verbs.LatConfig{Op: l.op, Dev: dev.Name, Addr: l.addr, Port: c.Int("port"), Iters: l.iters, Duration: l.dur,
		Timeout: c.Duration("timeout"), CPUs: verbs.PickCPUs()}
	if c.Bool("no-pin") {
		l.cfg.CPUs = []int{-1, -1}
	}
	switch {
	case l.server:
		l.cfg.CPUs = l.cfg.CPUs[:1]
	case l.client:
		l.cfg.CPUs = l.cfg.CPUs[1:]
	}
	l.req = traceOptions(c, traceRequest{Bench: "lat", PID: os.Getpid(), Dev: dev.Name, JSON: c.Bool("json")})
	// The headline is always an untraced pass; a traced pass follows it
	// in one process by default, and between two hosts with --trace on
	// both ends (the server then serves each size twice).
	l.traced = !l.req.Off && (!l.client && !l.server || l.req.Must)
	return l, nil
}

// serve is --server: each size the client asks for, twice when traced.
func (l *latRun) serve() error {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // the loops: see quietGC
	runs := len(l.sizes)
	if l.traced {
		runs *= 2
	}
	for range runs { // the client says each size
		if _, err := verbs.LatServer(l.cfg); err != nil {
			return err
		}
	}
	return nil
}

// untracedPass is the headline: every size with no tracer, a row each
// (or a record each with -j). It returns each size's summary, for the
// traced pass's comparison.
func (l *latRun) untracedPass(table *report.LatTable) (map[int64]*bench.Summary, error) {
	l.clock, l.emu = verbs.ClockCost(1_000_000), emulated("/sys", l.cfg.Dev)
	untraced := map[int64]*bench.Summary{}
	for _, size := range l.sizes {
		r, rec, err := l.series(size, "off")
		if err != nil {
			return nil, err
		}
		untraced[size] = &r.Summary
		l.out.addSeries(rec)
		if l.req.JSON {
			err = report.WriteLatJSON(os.Stdout, r)
		} else {
			err = table.Row(r)
		}
		if err != nil {
			return nil, err
		}
	}
	if !l.req.JSON {
		return untraced, table.End()
	}
	return untraced, nil
}

// tracedPass runs every size again beside the tracer: its rows with
// traced/untraced, then the slow samples and what overlapped them.
func (l *latRun) tracedPass(table *report.LatTable, untraced map[int64]*bench.Summary) (err error) {
	var outliers bytes.Buffer // the text's outliers go under the traced table
	req := l.req
	if req.Out = &outliers; req.JSON {
		req.Out = os.Stdout
	}
	sess, tracingDesc, err := startTrace(req)
	if err != nil {
		return err
	}
	if sess == nil {
		if !req.JSON {
			if err := table.NoTrace(strings.TrimPrefix(tracingDesc, "unavailable: ")); err != nil {
				return err
			}
		}
		return l.out.write() // the headline's samples, without causes
	}
	defer func() {
		if serr := sess.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	for _, size := range l.sizes {
		if err := l.tracedSeries(sess, table, size, tracingDesc, untraced[size], &outliers); err != nil {
			return err
		}
	}
	if !req.JSON {
		if err := table.TracedEnd(); err != nil {
			return err
		}
		_, err = os.Stdout.Write(outliers.Bytes())
	}
	return err
}

// tracedSeries runs one size beside the tracer and writes its row (or
// record) and its outliers.
func (l *latRun) tracedSeries(sess traceSession, table *report.LatTable, size int64, tracing string, untraced *bench.Summary, outliers *bytes.Buffer) error {
	sleeps0, known0 := sess.TracerSleeps()
	start := time.Now()
	r, rec, err := l.series(size, tracing)
	if err != nil {
		return err
	}
	r.Untraced = untraced
	if sleeps1, known1 := sess.TracerSleeps(); known0 && known1 {
		r.Tracer = &report.TracerActivity{Wakeups: sleeps1 - sleeps0, Seconds: time.Since(start).Seconds()}
	}
	threads := []int{r.Client.TID}
	if r.Server.TID != 0 {
		threads = append(threads, r.Server.TID)
	}
	if !l.req.JSON && len(l.sizes) > 1 {
		fmt.Fprintf(outliers, " Message size    : %d bytes, traced\n", size)
	}
	if r.Causes, err = sess.Lat(rec, &r.Summary, threads, int(size)); err != nil {
		return err
	}
	if l.req.JSON {
		return report.WriteLatJSON(os.Stdout, r)
	}
	return table.TracedRow(r)
}

// series runs one size once and returns its report (tracing says what
// traced it) and the recorder that holds its samples.
func (l *latRun) series(size int64, tracing string) (*report.LatReport, *bench.Recorder, error) {
	cfg := l.cfg
	cfg.Size = int(size)
	rec := newRecorder(l.factor)
	cfg.Consume = consumer(rec)
	var res verbs.LatResult
	var err error
	if l.client {
		res, err = quietGC(func() (verbs.LatResult, error) { return verbs.LatClient(cfg) })
	} else {
		res, err = quietGC(func() (verbs.LatResult, error) { return verbs.Lat(cfg) })
	}
	if err != nil {
		return nil, nil, err
	}
	if l.dur > 0 && res.Ended == "count" {
		fmt.Fprintf(os.Stderr, "rdmabench: -n %d reached before -D %d s ended\n", l.iters, int(l.dur/time.Second))
	}
	r := &report.LatReport{Op: l.op.String(), Dev: res.Dev, Addr: fmt.Sprintf("%s:%d", l.addr, cfg.Port),
		OneProcess: !l.client, Size: cfg.Size, Iters: l.iters, DurationSec: l.dur.Seconds(),
		Client: report.BenchThread(res.Client), Server: report.BenchThread(res.Server), Inline: res.Inline, MaxInline: res.MaxInline,
		ClockNs: l.clock, EmptyPollNs: res.EmptyPollNs, Emulated: l.emu, Tracing: tracing, Summary: rec.Summary()}
	return r, rec, nil
}

// tracerPlace keeps the tracer off the benchmark's CPUs: on the CPUs this
// process may use that the timed threads do not, as taskset would put it,
// at nice 19.
func tracerPlace(benchCPUs []int) (cpus []int, nice int) {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return nil, 0
	}
	return placeTracer(&set, benchCPUs)
}

// placeTracer is tracerPlace on the CPUs of set. Where no CPU is left
// free (two CPUs, both ends pinned) or the ends are not pinned, the
// tracer is left where the scheduler puts it, at this process's nice: a
// busy-polling end never sleeps, and a reader at nice 19 on its CPU got
// so little of it that the ring buffer overflowed (175 000 events
// dropped in one soft-RoCE run, the off-CPU spells behind the outliers
// among them).
func placeTracer(set *unix.CPUSet, benchCPUs []int) (cpus []int, nice int) {
	busy := map[int]bool{}
	for _, c := range benchCPUs {
		if c >= 0 {
			busy[c] = true
		}
	}
	if len(busy) == 0 {
		return nil, 0
	}
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) && !busy[i] {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) == 0 {
		return nil, 0
	}
	return cpus, tracerNice
}

const tracerNice = 19

// tracerCPUs reads --tracer-cpus: "" places the tracer (tracerPlace),
// "any" leaves it be, a list pins it there.
func tracerCPUs(flag string, benchCPUs []int) ([]int, int, error) {
	switch flag {
	case "":
		cpus, nice := tracerPlace(benchCPUs)
		return cpus, nice, nil
	case "any":
		return nil, 0, nil
	}
	var cpus []int
	for _, f := range strings.Split(flag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n >= 1024 {
			return nil, 0, fmt.Errorf("--tracer-cpus %q: want a list of CPU numbers such as 2,3, or any", flag)
		}
		cpus = append(cpus, n)
	}
	return cpus, tracerNice, nil
}

// newRecorder holds one series in bounded memory: every sample up to
// bench.ExactSamples, a histogram and outlier candidates beyond (factor:
// --outlier-factor).
func newRecorder(factor float64) *bench.Recorder {
	return bench.NewRecorder(bench.RecorderConfig{Factor: factor, Series: keptSamples})
}

// consumer feeds the loop's chunks to rec. When the series outgrows the
// exact budget the samples kept so far are let go of: with the collector
// off during the loop, it runs once there, between two chunks (no sample
// counts that time).
func consumer(rec *bench.Recorder) func([]bench.Sample) {
	return func(chunk []bench.Sample) {
		exact := rec.Exact()
		rec.Add(chunk)
		if exact && !rec.Exact() {
			debug.FreeOSMemory()
		}
	}
}

// quietGC runs a timing loop with the collector off: the loops run in C,
// the collector has nothing to do meanwhile, and must not stop the world
// while samples are taken. It is on again between runs: with it off for
// the whole program, everything the join of a long traced run read and
// let go of (the tracer's lines, the events) stayed in memory.
func quietGC(loop func() (verbs.LatResult, error)) (verbs.LatResult, error) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	return loop()
}
