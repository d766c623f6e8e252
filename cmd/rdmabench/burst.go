package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/burst"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/plot"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/report"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/verbs"
)

func burstCommand() *cli.Command {
	return &cli.Command{
		Name:  "burst",
		Usage: "a job's start: ranks × RC QPs created and connected in pairs at once, held, destroyed; untraced, then traced",
		Description: "Each rank (a process, as a job's ranks are; --threads for threads of one process) opens the device,\n" +
			"makes a PD and a CQ, and at the same moment as the others creates its QPs two by two, each\n" +
			"moved RESET→INIT→RTR→RTS and connected to its pair's other QP (over verbs, in NCCL's order by\n" +
			"default: every QP created and in INIT, then each to RTR and RTS; --cm: over rdma_cm, as cmtime does). Every QP is held, then destroyed. It prints QPs a second and each verb's\n" +
			"p50/p99, for an untraced pass and a traced one (rdmatrace trace -j beside it, with trace's own\n" +
			"defaults) with their ratio, what the tracer cost (CPU, memory) and which of the burst's QP\n" +
			"lifecycle events (create, INIT, RTR, RTS, destroy) its trace lacks.\n\n" +
			"EXAMPLES:\n" +
			"   rdmabench burst -d rxe0                          # 4 processes × 1000 QPs, untraced then traced\n" +
			"   rdmabench burst -d rxe0 -P 4 -n 10000 --plot burst.svg\n" +
			"   rdmabench burst -d rxe0 --tracer-flags '--ring-size 67108864'   # the traced pass with a 64 MiB ring\n" +
			"   rdmabench burst -d rxe0 --cm -n 200 --no-trace    # the pairs over rdma_cm\n" +
			"   rdmabench burst -d rxe0 --hold-file /run/held -j # hold until /run/held is removed; NDJSON\n\n" +
			"EXIT STATUS:\n" + exitStatus(""),
		Flags: []cli.Flag{
			devFlag, ibPortFlag,
			&cli.IntFlag{Name: "gid-index", Aliases: []string{"x"}, Value: 0, Usage: "GID index for the QPs' address (verbs: the pairs are on this device)"},
			&cli.IntFlag{Name: "ranks", Aliases: []string{"P"}, Value: 4, Usage: "ranks: processes (or threads, --threads) creating QPs at once"},
			&cli.IntFlag{Name: "qps", Aliases: []string{"n"}, Value: 1000, Usage: "QPs each rank creates"},
			&cli.BoolFlag{Name: "threads", Usage: "the ranks are threads of this process, not processes"},
			&cli.StringFlag{Name: "order", Value: "nccl", Usage: "over verbs: nccl (every QP created and in INIT, then each to RTR and RTS), pairs (a pair at a time) or phases (each verb for every QP before the next)"},
			&cli.BoolFlag{Name: "cm", Usage: "connect the pairs over rdma_cm (each rank connects half its QPs to a listener of its own)"},
			addrFlag,
			&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Value: 18516, Usage: "--cm: rank I listens on this port + I"},
			&cli.IntFlag{Name: "window", Value: 16, Usage: "--cm: connections each rank has in flight at once"},
			&cli.DurationFlag{Name: "hold", Value: 0, Usage: "how long every QP stays in RTS before the destroys"},
			&cli.StringFlag{Name: "hold-file", Usage: "once every QP is in RTS, write `FILE` (a line per rank: rank, pid, tid, qps) and hold until it is removed"},
			&cli.StringFlag{Name: "tracer-flags", Usage: "more flags for the traced pass's rdmatrace trace, e.g. '--ring-size 67108864'"},
			timeoutFlag, jsonFlag, traceFlag, noTraceFlag,
		},
		Action: runBurst,
	}
}

// burstRankCommand is a rank of a burst as its own process: rdmabench
// burst starts it, and they talk over its stdin and stdout.
func burstRankCommand() *cli.Command {
	return &cli.Command{
		Name:   "burst-rank",
		Usage:  "one rank of rdmabench burst (started by it)",
		Hidden: true,
		Action: func(c *cli.Context) error { return burst.ServeRank(os.Stdin, os.Stdout) },
	}
}

func runBurst(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("burst takes no arguments (got %q)", c.Args().First())
	}
	o := burst.Options{Port: c.Int("ib-port"), GIDIndex: c.Int("gid-index"), Ranks: c.Int("ranks"), QPs: c.Int("qps"),
		CM: c.Bool("cm"), CMPort: c.Int("port"), Window: c.Int("window"), Timeout: c.Duration("timeout"),
		Hold: c.Duration("hold"), HoldFile: c.String("hold-file"), Rdmatrace: c.String("rdmatrace"),
		TraceDir: c.String("trace-dir"), TracerFlags: strings.Fields(c.String("tracer-flags")), Warn: os.Stderr}
	var err error
	if o.Order, err = verbs.ParseBurstOrder(c.String("order")); err != nil {
		return fmt.Errorf("--order: %w", err)
	}
	if o.CM && c.IsSet("order") {
		return fmt.Errorf("--order is for verbs: over rdma_cm, librdmacm moves each QP as its connection goes")
	}
	if o.Ranks < 1 || o.Ranks > 1024 {
		return fmt.Errorf("-P %d: want 1 to 1024 ranks", o.Ranks)
	}
	if o.QPs < 1 || o.QPs > 100000 {
		return fmt.Errorf("-n %d: want 1 to 100000 QPs a rank", o.QPs)
	}
	if o.CM && o.QPs%2 != 0 {
		return fmt.Errorf("-n %d with --cm: want an even number (a connection has a QP at each end)", o.QPs)
	}
	if o.Window < 1 {
		return fmt.Errorf("--window %d: want at least 1", o.Window)
	}
	if o.Hold < 0 {
		return fmt.Errorf("--hold %v: want 0 or more", o.Hold)
	}
	if p := c.String("perfetto"); p != "" {
		return fmt.Errorf("--perfetto %s: burst writes no timeline; --plot draws its QPs over time", p)
	}
	if p := c.String("plot"); p != "" {
		if _, err := plot.Format(p); err != nil {
			return err
		}
	}
	switch {
	case c.Bool("no-trace"):
		o.Trace = burst.NoTrace
	case c.Bool("trace"):
		o.Trace = burst.MustTrace
	default:
		o.Trace = burst.TryTrace
	}
	if o.TraceDir != "" {
		if err := os.MkdirAll(o.TraceDir, 0o755); err != nil {
			return fmt.Errorf("--trace-dir: %w", err)
		}
	}
	if !c.Bool("threads") {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this program to start its ranks (--threads runs them in this one): %w", err)
		}
		o.RankCommand = []string{exe, "burst-rank"}
	}
	dev, err := verbs.CheckDevice(c.String("ib-dev"), o.Port, o.GIDIndex)
	if err != nil {
		return err
	}
	o.Dev = dev.Name
	if o.CM {
		if o.Addr = c.String("addr"); o.Addr == "" {
			if o.Addr, err = verbs.AddrOf("/sys", dev.Name, o.Port, -1); err != nil {
				return err
			}
		}
	}
	r, err := burst.Run(o)
	if err != nil {
		return err
	}
	r.Emulated = emulated("/sys", dev.Name)
	if c.Bool("json") {
		err = report.WriteBurstJSON(os.Stdout, r)
	} else {
		err = report.WriteBurstTable(os.Stdout, r)
	}
	if perr := writeBurstPlot(c.String("plot"), r); perr != nil && err == nil {
		err = perr
	}
	return err
}

// writeBurstPlot draws the passes' QPs over time, if asked.
func writeBurstPlot(path string, r *report.BurstReport) error {
	if path == "" {
		return nil
	}
	format, err := plot.Format(path)
	if err != nil {
		return err
	}
	run := &plot.BurstRun{Untraced: &r.Untraced, Traced: r.Traced, Connected: len(r.Untraced.Steps) - 2, Destroyed: len(r.Untraced.Steps) - 1}
	if r.Mode == "rdma_cm" {
		run.Connected-- // connect, before disconnect
	}
	run.Title = fmt.Sprintf("rdmabench burst on %s: %d ranks × %d QPs over %s, in RTS", r.Dev, r.Ranks, r.QPs, r.Mode)
	if r.Traced == nil {
		run.Title += " (untraced only: " + r.Tracing + ")"
	}
	f, err := safefile.Create(path, safefile.Invoker(os.Getenv))
	if err != nil {
		return err
	}
	if werr := plot.WriteBurst(f, format, run); werr != nil {
		f.Close()
		return fmt.Errorf("--plot %s: %w", path, werr)
	}
	return f.Close()
}
