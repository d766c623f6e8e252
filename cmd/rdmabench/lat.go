package main

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/report"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/verbs"
)

const (
	maxSamples  = math.MaxInt32   // -n; a series is held in bounded memory (bench.Recorder)
	baselineDur = 5 * time.Second // the untraced series before a traced -D run
)

func latCommand() *cli.Command {
	return &cli.Command{
		Name:  "lat",
		Usage: "RC ping-pong latency over rdma_cm: RDMA WRITE (as ib_write_lat), SEND (ib_send_lat) or READ (ib_read_lat)",
		Description: "Both ends run in this process by default (a server and a client thread, each on its own CPU),\n" +
			"or use --server on one host and --client ADDR on the other.",
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
	if c.Bool("server") {
		defer debug.SetGCPercent(debug.SetGCPercent(-1)) // the loops: see quietGC
		cfg.CPUs = cfg.CPUs[:1]
		for range sizes { // the client says each size
			if _, err := verbs.LatServer(cfg); err != nil {
				return err
			}
		}
		return nil
	}
	if c.IsSet("client") {
		cfg.CPUs = cfg.CPUs[1:]
	}
	// The tracer's cost is measured, not assumed: in one process, each
	// size runs once untraced (at most baselineDur with -D) before the
	// tracer starts.
	var untraced map[int64]*bench.Summary
	if tracing(c) && !c.IsSet("client") {
		untraced = map[int64]*bench.Summary{}
		for _, size := range sizes {
			bc := cfg
			bc.Size = int(size)
			if bc.Duration > baselineDur {
				bc.Duration = baselineDur
			}
			rec := newRecorder(c)
			bc.Consume = consumer(rec)
			if _, err := quietGC(func() (verbs.LatResult, error) { return verbs.Lat(bc) }); err != nil {
				return err
			}
			s := rec.Summary()
			untraced[size] = &s
		}
	}
	sess, tracingDesc, err := startTrace(c, traceRequest{Bench: "lat", PID: os.Getpid(), Dev: dev.Name, JSON: c.Bool("json"), Out: os.Stdout})
	if err != nil {
		return err
	}
	if sess == nil {
		untraced = nil // the tracer did not start: nothing to compare
	}
	if sess != nil {
		defer func() {
			if serr := sess.Stop(); serr != nil && err == nil {
				err = serr
			}
		}()
	}
	clock := verbs.ClockCost(1_000_000)
	emu := emulated("/sys", dev.Name)
	for _, size := range sizes {
		cfg.Size = int(size)
		rec := newRecorder(c)
		cfg.Consume = consumer(rec)
		var res verbs.LatResult
		if c.IsSet("client") {
			res, err = quietGC(func() (verbs.LatResult, error) { return verbs.LatClient(cfg) })
		} else {
			res, err = quietGC(func() (verbs.LatResult, error) { return verbs.Lat(cfg) })
		}
		if err != nil {
			return err
		}
		if dur > 0 && res.Ended == "count" {
			fmt.Fprintf(os.Stderr, "rdmabench: -n %d reached before -D %d s ended\n", iters, c.Int("duration"))
		}
		sum := rec.Summary()
		r := &report.LatReport{Op: op.String(), Dev: res.Dev, Addr: fmt.Sprintf("%s:%d", addr, cfg.Port),
			OneProcess: !c.IsSet("client"), Size: cfg.Size, Iters: iters, DurationSec: dur.Seconds(),
			Client: report.BenchThread(res.Client), Server: report.BenchThread(res.Server), Inline: res.Inline,
			ClockNs: clock, EmptyPollNs: res.EmptyPollNs, Emulated: emu, Tracing: tracingDesc,
			Summary: sum, Untraced: untraced[size]}
		if sess != nil {
			threads := []int{res.Client.TID}
			if res.Server.TID != 0 {
				threads = append(threads, res.Server.TID)
			}
			if r.Causes, err = sess.Lat(rec, &sum, threads, cfg.Size); err != nil {
				return err
			}
		}
		if c.Bool("json") {
			err = report.WriteLatJSON(os.Stdout, r)
		} else {
			err = report.WriteLatTable(os.Stdout, r)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
