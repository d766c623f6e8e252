package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/leaks"
	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/host/launch"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/tracer"
)

func init() { commands = append(commands, leaksCommand()) }

// exitLeaked is the exit status when leaks were reported.
const exitLeaked = 3

// reorderWindow is how long events are held to put them in timestamp
// order: far more than two CPUs' reservations can be apart.
const reorderWindow = uint64(50 * time.Millisecond)

// tickInterval is how often leaks looks up from the ring buffer: to put
// held events in order, name what a blocked unregistration waits for, and
// notice signals and the program's exit.
const tickInterval = 250 * time.Millisecond

// leaksFilterKeys are leaks' filter keys: not event, which would hide the
// destroys that end a resource's life.
var leaksFilterKeys = []string{"pid", "comm", "dev", "res", "cgroup", "container", "pod"}

func leaksCommand() *cli.Command {
	return &cli.Command{
		Name:      "leaks",
		Usage:     "name what is still alive when a device unregisters, when the run ends, or when a program exits",
		ArgsUsage: "[-- CMD [ARG...]]",
		Description: "Keeps a table of live RDMA resources (a netlink snapshot at start, then the tracer's\n" +
			"events) and reports:\n" +
			"  - when a device's unregistration begins: everything still alive on it, by owner;\n" +
			"    while it is blocked, every --interval, the processes it waits for and their open\n" +
			"    RDMA device files; when it finishes, what was freed and what never was;\n" +
			"  - at the end (Ctrl-C, --duration): what is still alive;\n" +
			"  - with -- CMD: runs CMD and, when it exits, reports what it created and did not destroy\n" +
			"    itself: what the kernel freed at its exit (or when it closed its device file), and\n" +
			"    what is still alive. CMD runs in a cgroup v2 of its own (what is its, children\n" +
			"    included, is decided by the owner's cgroup at each event), as the user who ran sudo\n" +
			"    (--user to choose), and dies with rdmatrace; SIGINT and SIGTERM are passed on, and\n" +
			"    --duration stops its cgroup (SIGTERM, SIGKILL 5 s later). --output keeps the report apart\n" +
			"    from CMD's own output;\n" +
			"  - a port CMD (or, without CMD, anyone) could not have: each bind, rdma_listen or\n" +
			"    rdma_connect that got EADDRINUSE, with who held the port.\n" +
			"Post-mortem, with --log: the kernel's own leak and hang reports (the named restrack report\n" +
			"of kernels up to 6.9 and MLNX_OFED, the bare restrack.c WARNING of newer ones, rxe's pool\n" +
			"WARNING, hung tasks in a device unregistration), each followed, with --recording, by what a\n" +
			"saved `rdmatrace trace -j` of the same boot says: the objects the WARNING leaves unnamed\n" +
			"(matched by the unregistering task's PID), or what the hung task waited for.\n" +
			"\n" + filterHelp(leaksFilterKeys...) +
			"   (leaks takes no filter words: its arguments are CMD's.)\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace leaks -- ./my_rdma_app --server      # what it left behind\n" +
			"   rdmatrace leaks --output report.txt -- ib_write_bw -d rxe0\n" +
			"   rdmatrace leaks --filter-dev mlx5_0            # until Ctrl-C: what blocks an unbind\n" +
			"   rdmatrace leaks --log dmesg.txt --recording trace.ndjson   # post-mortem\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error; post-mortem: some log lines could not be read", "",
			"3  leaks were reported",
			"N  with -- CMD and no leak: CMD's own status"),
		Flags: append(append(append([]cli.Flag{
			// No -o here: --output is the report's file (stdout stays CMD's).
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "one JSON object per finding (NDJSON, as a stream is)"},
		}, filterFlags(true, leaksFilterKeys...)...),
			&cli.BoolFlag{Name: "kernel-only", Usage: "only objects owned by kernel modules"},
			&cli.BoolFlag{Name: "user-only", Usage: "only objects owned by processes"},
			streamDetailsFlag,
			&cli.DurationFlag{Name: "duration", Usage: "stop after this long (-d is --details, as in iproute2)"},
			&cli.DurationFlag{Name: "interval", Value: 5 * time.Second, Usage: "how often to name what a blocked unregistration waits for"},
			&cli.IntFlag{Name: "max-table", Value: 1 << 18, Usage: "most resources tracked at once (the rest are counted as untracked)"},
			&cli.StringFlag{Name: "ready-file", Usage: "create `PATH` once every available hook is attached"},
			&cli.IntFlag{Name: "ring-size", Value: 4 << 20, Usage: "ring buffer size in bytes (a power of two)"},
			&cli.BoolFlag{Name: "fallback", Usage: "use kprobes and raw tracepoints instead of fentry/fexit/tp_btf"},
			verboseFlag,
			&cli.StringSliceFlag{Name: "log", Usage: "post-mortem: read the kernel's leak and hang reports from this log (`FILE`: dmesg, dmesg -T, journalctl text; - for stdin; gzip, xz, zstd or bzip2 compressed or not); no tracing"},
			&cli.StringFlag{Name: "recording", Usage: "post-mortem: a `FILE` of rdmatrace trace -j from the same boot, to name what the log's reports leave unnamed"},
			maxInputFlag,
		), programFlags()...),
		Action: runLeaks,
	}
}

// findingSink writes findings as NDJSON or as the human report.
type findingSink struct {
	json  bool
	w     *bufio.Writer
	nd    *formats.NDJSONWriter
	human *formats.LeakWriter
	err   error
}

func newFindingSink(w io.Writer, json bool) *findingSink {
	s := &findingSink{json: json, w: bufio.NewWriter(w)}
	s.nd = formats.NewNDJSONWriter(w)
	s.human = formats.NewLeakWriter(s.w)
	return s
}

func (s *findingSink) write(f *rdma.Finding) {
	if s.err != nil {
		return
	}
	if s.json {
		s.err = s.nd.Write(formats.FindingObject(f))
		return
	}
	s.err = s.human.Write(f)
}

// kernel writes a report from a kernel log; withRecording says whether a
// recording was given, matched how many findings it has on it, and sameAs
// where the findings of the same unregistration were shown.
func (s *findingSink) kernel(r *rdma.KernelReport, withRecording bool, matched int, sameAs string) {
	if s.err != nil {
		return
	}
	if s.json {
		o := formats.KernelReportObject(r)
		if withRecording {
			o = append(o, formats.Field{Key: "recording-findings", Kind: formats.Num, Num: uint64(matched)})
		}
		if sameAs != "" {
			o = append(o, formats.Field{Key: "same-unregistration-as", Kind: formats.Str, Str: sameAs})
		}
		s.err = s.nd.Write(o)
		return
	}
	if s.err = s.human.Flush(); s.err != nil {
		return
	}
	line := formats.KernelReportLine(r)
	switch {
	case sameAs != "":
		line += "\n  (the same unregistration as " + formats.Sanitize(sameAs) + ")"
	case withRecording && matched == 0:
		line += "\n  (the recording says nothing more about it)"
	}
	_, s.err = s.w.WriteString(line + "\n")
}

func (s *findingSink) flush() error {
	if s.json {
		if err := s.nd.Flush(); s.err == nil {
			s.err = err
		}
		return s.err
	}
	if err := s.human.Flush(); s.err == nil {
		s.err = err
	}
	if err := s.w.Flush(); s.err == nil {
		s.err = err
	}
	return s.err
}

func runLeaks(c *cli.Context) error {
	if err := checkTracerFlags(c); err != nil {
		return err
	}
	if err := atLeast(c, "max-table", 1, "1 or more"); err != nil {
		return err
	}
	if d := c.Duration("interval"); d <= 0 {
		return usage(c, "--interval %v: expected a positive duration such as 5s", d)
	}
	// No positional filter words: they would be CMD's.
	f, err := parseEvents(c, nil, leaksFilterKeys...)
	if err != nil {
		return usage(c, "%w", err)
	}
	argv := c.Args().Slice()
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if logs := c.StringSlice("log"); len(logs) > 0 {
		if len(argv) > 0 {
			return usage(c, "--log reads saved logs: it runs no program")
		}
		var out io.Writer = c.App.Writer
		if c.String("output") != "" {
			file, err := reportOutput(c)
			if err != nil {
				return err
			}
			defer file.Close()
			out = file
		}
		return runLeakLog(logs, c.String("recording"), inputLimits{maxInput(c), c.Int("max-table")}, f, newFindingSink(out, c.Bool("json")), c.App.Reader, c.App.ErrWriter)
	}
	if c.String("recording") != "" {
		return usage(c, "--recording goes with --log FILE (the kernel log of the same boot)")
	}
	t, err := openTracer(c)
	if err != nil {
		return err
	}
	defer t.Close()

	out, err := reportOutput(c)
	if err != nil {
		return err
	}
	if out != os.Stdout {
		defer out.Close()
	}
	sink := newFindingSink(out, c.Bool("json"))
	table := restable.New(c.Int("max-table"))
	w := leaks.New(table, sink.write)
	w.Keep = f.Match
	w.Interval = c.Duration("interval")
	clock := t.Clock()
	if err := snapshotEvents(clock, func(e *rdma.Event) { w.Handle(e) }); err != nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: snapshot of existing resources: %v\n", err)
	}
	// Without a program, a signal or the end of --duration stops the
	// tracer: it delivers what is queued at that moment. With one, the
	// program decides when it ends; SIGTERM is passed on (a terminal's
	// SIGINT reached it already). A second signal exits at once. Signals
	// are caught before the ready file tells a script it may send them.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var prog atomic.Pointer[launch.Program]
	defer onInterrupt(func(s os.Signal) {
		if len(argv) == 0 {
			stop()
		} else if p := prog.Load(); p != nil {
			p.Forward(s)
		}
	})()
	if err := writeReadyFile(c, strconv.Itoa(os.Getpid())+"\n"); err != nil {
		return err
	}

	var cmd *launch.Program
	exited := make(chan error, 1)
	if len(argv) > 0 {
		if cmd, err = startProgram(c, argv); err != nil {
			return err
		}
		defer endProgram(cmd)
		prog.Store(cmd)
		w.Program(uint32(cmd.Cmd.Process.Pid), programCgroup(cmd))
		go func() { exited <- cmd.Wait() }()
	}
	if d := c.Duration("duration"); d > 0 {
		// Without a program the tracer stops; with one, the program is
		// stopped and the tracer follows when it has exited.
		end := stop
		if cmd != nil {
			end = func() { cmd.Stop(stopGrace) }
		}
		defer time.AfterFunc(d, end).Stop()
	}
	var cmdErr error
	waited := make(chan struct{})
	if cmd != nil {
		go func() {
			cmdErr = <-exited
			// Its exit cleanup ran before the wait returned; read what is
			// queued, and a little longer for the reorder window.
			time.AfterFunc(200*time.Millisecond, stop)
			close(waited)
		}()
	}

	reorder := restable.NewReorder(reorderWindow)
	var seen uint64
	// Losses (drops, skipped or missed runs) are reported as soon as
	// they are seen.
	lw := &lossWatch{dropHint: "the report may be incomplete; raise --ring-size"}
	warnedUntracked := uint64(0)
	// tick does what is due at a moment without events, and under a
	// flood every tickInterval all the same.
	tick := func() {
		now := tracer.Mono()
		if now > reorderWindow {
			reorder.FlushUntil(now-reorderWindow, w.Handle)
		}
		w.Tick(clock.Wall(now))
		lw.check(t)
		if n := table.Untracked(); n > warnedUntracked {
			fmt.Fprintf(os.Stderr, "rdmatrace: WARNING: table full (--max-table %d), %d resources untracked\n", c.Int("max-table"), n)
			warnedUntracked = n
		}
		_ = sink.flush()
	}
	err = t.Run(ctx, tracer.Consumer{
		Event: func(ev *rdma.Event) error {
			seen++
			if ev.Kind == rdma.EvPortBusy && ev.Holders == nil {
				ev.Holders = portHolders(ev) // now, before the holder lets go
			}
			reorder.Push(ev, w.Handle)
			return nil
		},
		Tick:  tick,
		Every: tickInterval,
		Bad:   func(err error) { fmt.Fprintf(os.Stderr, "rdmatrace: %v\n", err) },
	})
	if err != nil && !errors.Is(err, tracer.ErrClosed) {
		return err
	}
	if cmd != nil {
		<-waited // cmdErr is set
	}
	reorder.Flush(w.Handle)
	tick()
	now := time.Now().UTC()
	if cmd != nil {
		w.ProgramExited(now)
	} else {
		w.End(now)
	}
	if err := sink.flush(); err != nil {
		return err
	}
	drops, _ := t.Drops()
	summary(t, seen, seen, drops)
	if n := reorder.Overflowed(); n > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: %d events left the reorder window early (more than %d within %v): their order may be wrong\n", n, restable.DefaultMaxHeld, time.Duration(reorderWindow))
	}
	if r := table.Replaced(); r > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: %d resource ids were reused without a traced destroy\n", r)
	}
	if w.Leaked() > 0 {
		return exitWith(exitLeaked, nil)
	}
	if cmd != nil && cmdErr != nil {
		if code := launch.ExitCode(cmdErr); code >= 0 {
			return exitWith(code, nil)
		}
		return cmdErr
	}
	return nil
}
