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

func runLat(c *cli.Context) (err error) {
	if c.NArg() > 0 {
		return fmt.Errorf("lat takes no arguments (got %q): the server's address goes after --client", c.Args().First())
	}
	op, err := verbs.ParseOp(c.String("op"))
	if err != nil {
		return err
	}
	sizes, err := parseSizes(c.String("size"))
	if err != nil {
		return fmt.Errorf("-s: %w", err)
	}
	if c.Bool("all") {
		sizes = powers(2, 8<<20, 2)
	}
	iters := c.Int("iters")
	if iters < 1 || iters > maxSamples {
		return fmt.Errorf("-n %d: want 1 to %d samples", iters, maxSamples)
	}
	dur := time.Duration(c.Int("duration")) * time.Second
	if dur < 0 {
		return fmt.Errorf("-D %d: want a number of seconds", c.Int("duration"))
	}
	if dur > 0 && !c.IsSet("iters") {
		iters = 0 // no count: the duration ends the series
	}
	if c.Bool("server") && c.IsSet("client") {
		return fmt.Errorf("--server and --client: one end or the other")
	}
	dev, err := verbs.CheckDevice(c.String("ib-dev"), c.Int("ib-port"), c.Int("gid-index"))
	if err != nil {
		return err
	}
	for _, s := range sizes {
		if dev.MaxMsgSz > 0 && s > int64(dev.MaxMsgSz) {
			return fmt.Errorf("-s %d: beyond the largest message of %s port %d (%d bytes)", s, dev.Name, c.Int("ib-port"), dev.MaxMsgSz)
		}
	}
	addr := c.String("client")
	if addr == "" {
		addr = c.String("addr")
	}
	if addr == "" {
		if addr, err = verbs.AddrOf("/sys", dev.Name, c.Int("ib-port"), c.Int("gid-index")); err != nil {
			return err
		}
	}
	cfg := verbs.LatConfig{Op: op, Dev: dev.Name, Addr: addr, Port: c.Int("port"), Iters: iters, Duration: dur,
		Timeout: c.Duration("timeout"), CPUs: verbs.PickCPUs()}
	if c.Bool("no-pin") {
		cfg.CPUs = []int{-1, -1}
	}
	// The headline is always an untraced pass; a traced pass follows it
	// in one process by default, and between two hosts with --trace on
	// both ends (the server then serves each size twice).
	traced := tracing(c) && (!c.IsSet("client") && !c.Bool("server") || c.Bool("trace"))
	if c.Bool("server") {
		defer debug.SetGCPercent(debug.SetGCPercent(-1)) // the loops: see quietGC
		cfg.CPUs = cfg.CPUs[:1]
		runs := len(sizes)
		if traced {
			runs *= 2
		}
		for range runs { // the client says each size
			if _, err := verbs.LatServer(cfg); err != nil {
				return err
			}
		}
		return nil
	}
	if err := checkOutputs(c, "lat"); err != nil {
		return err
	}
	if c.IsSet("client") {
		cfg.CPUs = cfg.CPUs[1:]
	}
	tracerCPUList, tracerNiceness, err := tracerCPUs(c.String("tracer-cpus"), cfg.CPUs)
	if err != nil {
		return err
	}
	l := &latRun{c: c, cfg: cfg, op: op, addr: addr, iters: iters, dur: dur, clock: verbs.ClockCost(1_000_000),
		emu: emulated("/sys", dev.Name), out: newOutputs(c, os.Getpid(), dev.Name)}
	table := &report.LatTable{W: os.Stdout}
	for _, s := range sizes {
		table.Sizes = append(table.Sizes, int(s))
	}
	if traced {
		table.Trace = "rdmatrace"
	}
	untraced := map[int64]*bench.Summary{}
	for _, size := range sizes {
		r, rec, err := l.series(size, "off")
		if err != nil {
			return err
		}
		untraced[size] = &r.Summary
		l.out.addSeries(rec)
		if c.Bool("json") {
			err = report.WriteLatJSON(os.Stdout, r)
		} else {
			err = table.Row(r)
		}
		if err != nil {
			return err
		}
	}
	if !c.Bool("json") {
		if err := table.End(); err != nil {
			return err
		}
	}
	if !traced {
		return l.out.write()
	}
	var outliers bytes.Buffer // the text's outliers go under the traced table
	req := traceRequest{Bench: "lat", PID: os.Getpid(), Dev: dev.Name, JSON: c.Bool("json"), Out: &outliers}
	if req.JSON {
		req.Out = os.Stdout
	}
	req.CPUs, req.Nice = tracerCPUList, tracerNiceness
	sess, tracingDesc, err := startTrace(c, req)
	if err != nil {
		return err
	}
	if sess == nil {
		if !c.Bool("json") {
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
	for _, size := range sizes {
		sleeps0, known0 := sess.TracerSleeps()
		start := time.Now()
		r, rec, err := l.series(size, tracingDesc)
		if err != nil {
			return err
		}
		r.Untraced = untraced[size]
		if sleeps1, known1 := sess.TracerSleeps(); known0 && known1 {
			r.Tracer = &report.TracerActivity{Wakeups: sleeps1 - sleeps0, Seconds: time.Since(start).Seconds()}
		}
		threads := []int{r.Client.TID}
		if r.Server.TID != 0 {
			threads = append(threads, r.Server.TID)
		}
		if !req.JSON && len(sizes) > 1 {
			fmt.Fprintf(&outliers, " Message size    : %d bytes, traced\n", size)
		}
		if r.Causes, err = sess.Lat(rec, &r.Summary, threads, int(size)); err != nil {
			return err
		}
		if req.JSON {
			err = report.WriteLatJSON(os.Stdout, r)
		} else {
			err = table.TracedRow(r)
		}
		if err != nil {
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

// latRun runs one lat invocation's series.
type latRun struct {
	c     *cli.Context
	cfg   verbs.LatConfig
	op    verbs.Op
	addr  string
	iters int
	dur   time.Duration
	clock float64
	emu   string
	out   *outputs
}

// series runs one size once and returns its report (tracing says what
// traced it) and the recorder that holds its samples.
func (l *latRun) series(size int64, tracing string) (*report.LatReport, *bench.Recorder, error) {
	cfg := l.cfg
	cfg.Size = int(size)
	rec := newRecorder(l.c)
	cfg.Consume = consumer(rec)
	var res verbs.LatResult
	var err error
	if l.c.IsSet("client") {
		res, err = quietGC(func() (verbs.LatResult, error) { return verbs.LatClient(cfg) })
	} else {
		res, err = quietGC(func() (verbs.LatResult, error) { return verbs.Lat(cfg) })
	}
	if err != nil {
		return nil, nil, err
	}
	if l.dur > 0 && res.Ended == "count" {
		fmt.Fprintf(os.Stderr, "rdmabench: -n %d reached before -D %d s ended\n", l.iters, l.c.Int("duration"))
	}
	r := &report.LatReport{Op: l.op.String(), Dev: res.Dev, Addr: fmt.Sprintf("%s:%d", l.addr, cfg.Port),
		OneProcess: !l.c.IsSet("client"), Size: cfg.Size, Iters: l.iters, DurationSec: l.dur.Seconds(),
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
// bench.ExactSamples, a histogram and outlier candidates beyond.
func newRecorder(c *cli.Context) *bench.Recorder {
	return bench.NewRecorder(bench.RecorderConfig{Factor: c.Float64("outlier-factor"), Series: keptSamples})
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
