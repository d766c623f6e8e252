package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/leaks"
	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/tracer"
)

func init() { commands = append(commands, leaksCommand()) }

// exitLeaked is the exit status when leaks were reported: something was
// never freed, or held a device's unregistration past --max-blocked.
const exitLeaked = 3

// reorderWindow is how long events are held to put them in timestamp
// order: far more than two CPUs' reservations can be apart.
const reorderWindow = uint64(50 * time.Millisecond)

// tickInterval is how often leaks looks up from the ring buffer: to put
// held events in order, name what a blocked unregistration waits for, and
// notice signals and the program's exit.
const tickInterval = 250 * time.Millisecond

// stacksFlag names where each user object was created: on for leaks --
// CMD, off elsewhere unless asked (a uprobe costs microseconds a call).
var stacksFlag = &cli.BoolFlag{Name: "stacks", Usage: "name where in its program each user object was created: the call into libibverbs or librdmacm and the callers above it (uprobes: microseconds a call; on for leaks -- CMD, --stacks=false to turn off)"}

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
			"    while it is blocked, every --interval, what it waits for: each process (with its\n" +
			"    open RDMA device files) and kernel module still holding resources on it, and\n" +
			"    which; when it finishes, what was freed and what never was. A removal in which\n" +
			"    the owners (processes told of it, kernel modules' remove callbacks) free\n" +
			"    everything within --max-blocked is no leak: the list and a summary line;\n" +
			"  - at the end (Ctrl-C, --duration): what is still alive;\n" +
			"  - with -- CMD: runs CMD and, when it exits, reports what it created and did not destroy\n" +
			"    itself: what the kernel freed at its exit (or when it closed its device file), and\n" +
			"    what is still alive. CMD runs in a cgroup v2 of its own (what is its, children\n" +
			"    included, is decided by the owner's cgroup at each event), as the user who ran sudo\n" +
			"    (--user to choose), and dies with rdmatrace; SIGINT and SIGTERM are passed on, and\n" +
			"    --duration stops its cgroup (SIGTERM, SIGKILL 5 s later). --report keeps the report apart\n" +
			"    from CMD's own output; a run with no leak ends with \"no leaks: N created, N destroyed\";\n" +
			"  - a port CMD (or, without CMD, anyone) could not have: each bind, rdma_listen or\n" +
			"    rdma_connect that got EADDRINUSE, with who held the port.\n" +
			"Post-mortem, with --log: the kernel's own leak and hang reports (the named restrack report\n" +
			"of kernels up to 6.9 and MLNX_OFED, the bare restrack.c WARNING of newer ones, rxe's pool\n" +
			"WARNING, hung tasks in a device unregistration), each followed, with --recording, by what a\n" +
			"saved `rdmatrace trace -j` of the same boot says: the objects the WARNING leaves unnamed\n" +
			"(matched by the unregistering task's PID), or what the hung task waited for. mlx5's QP\n" +
			"error syndrome lines (\"mlx5_0/1: QP 137 error: ...\") are shown too, with the QP's owner\n" +
			"from the recording (the QP of that device and number alive then); they are not leaks.\n" +
			"\n" + filterHelp(leaksFilterKeys...) +
			"   (leaks takes no filter words: its arguments are CMD's.)\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace leaks -- ./my_rdma_app --server      # what it left behind\n" +
			"   rdmatrace leaks --report report.txt -- ib_write_bw -d rxe0\n" +
			"   rdmatrace leaks --filter-dev mlx5_0            # until Ctrl-C: what blocks an unbind\n" +
			"   rdmatrace leaks --log dmesg.txt --recording trace.ndjson   # post-mortem\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error; post-mortem: some log lines could not be read", "",
			"3  leaks: something was never freed (a device's unregistration dropped it, CMD left it\n"+
				"      to the kernel's cleanup or alive, or it was created during the run and is alive at\n"+
				"      its end), or held a device's unregistration past --max-blocked",
			"N  with -- CMD and no leak: CMD's own status"),
		Flags: append(append([]cli.Flag{
			// No -o here: stdout stays CMD's, --report is the report's file.
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "one JSON object per finding (NDJSON, as a stream is)"},
		}, filterFlags(true, leaksFilterKeys...)...),
			&cli.BoolFlag{Name: "kernel-only", Usage: "only objects owned by kernel modules"},
			&cli.BoolFlag{Name: "user-only", Usage: "only objects owned by processes"},
			streamDetailsFlag,
			durationFlag,
			&cli.DurationFlag{Name: "interval", Value: 5 * time.Second, Usage: "how often to name what a blocked unregistration waits for"},
			&cli.DurationFlag{Name: "max-blocked", Value: leaks.DefaultMaxBlocked, Usage: "how long a device's unregistration may wait for the owners of what is on it; what holds it longer is a leak (exit status 3)"},
			&cli.IntFlag{Name: "max-table", Value: 1 << 18, Usage: "most resources tracked at once (the rest are counted as untracked)"},
			readyFileFlag("once every available hook is attached"),
			ringSizeFlag,
			stacksFlag,
			fallbackFlag,
			btfFlag,
			verboseFlag,
			&cli.StringSliceFlag{Name: "log", Usage: "post-mortem: read the kernel's leak and hang reports from this log (`FILE`: dmesg, dmesg -T, journalctl text; - for stdin; gzip, xz, zstd or bzip2 compressed or not); no tracing"},
			&cli.StringFlag{Name: "recording", Usage: "post-mortem: a `FILE` of rdmatrace trace -j from the same boot, to name what the log's reports leave unnamed"},
			maxInputFlag,
			userFlag,
			&cli.StringFlag{Name: "report", Usage: "write the report to `FILE` instead of stdout (which stays the program's)"},
			&cli.StringFlag{Name: "output", Hidden: true, Usage: "the old spelling of --report: an error that says so"},
		),
		Action: runLeaks,
	}
}

// findingSink hands a leaks report's records to formats' leak sink and
// keeps its first error: the watcher's callback has no error to return.
type findingSink struct {
	s   formats.Sink[formats.LeakRecord]
	err error
}

func newFindingSink(w io.Writer, json bool) *findingSink {
	f := formats.FormatText
	if json {
		f = formats.FormatNDJSON
	}
	return &findingSink{s: formats.NewLeakSink(w, f)}
}

func (s *findingSink) put(r formats.LeakRecord) {
	if s.err == nil {
		s.err = s.s.Write(r)
	}
}

func (s *findingSink) write(f *rdma.Finding) { s.put(formats.LeakRecord{Finding: f}) }

// kernel writes a report from a kernel log; withRecording says whether a
// recording was given, matched how many findings it has on it, and sameAs
// where the findings of the same unregistration were shown.
func (s *findingSink) kernel(r *rdma.KernelReport, withRecording bool, matched int, sameAs string) {
	s.put(formats.LeakRecord{Kernel: &formats.KernelNote{Report: r, WithRecording: withRecording, Matched: matched, SameAs: sameAs}})
}

// noLeaks ends the report of a program that left nothing behind.
func (s *findingSink) noLeaks(now time.Time, created, destroyed int) {
	s.put(formats.LeakRecord{NoLeaks: &formats.NoLeaks{Time: now, Created: created, Destroyed: destroyed}})
}

func (s *findingSink) flush() error {
	if err := s.s.Flush(); s.err == nil {
		s.err = err
	}
	return s.err
}

func runLeaks(c *cli.Context) error {
	if err := checkLeaksFlags(c); err != nil {
		return err
	}
	// No positional filter words: they would be CMD's.
	f, err := parseEvents(c, nil, leaksFilterKeys...)
	if err != nil {
		return usage(c, "%w", err)
	}
	argv := positional(c.Args().Slice())
	if logs := c.StringSlice("log"); len(logs) > 0 {
		return leaksFromLogs(c, logs, argv, f)
	}
	if c.String("recording") != "" {
		return usage(c, "--recording goes with --log FILE (the kernel log of the same boot)")
	}
	o, err := sessionOptions(c, argv)
	if err != nil {
		return err
	}
	o.Tracer.Stacks = c.Bool(stacksFlag.Name) || (len(argv) > 0 && !c.IsSet(stacksFlag.Name))
	o.ReadyClock, o.DropHint = true, "the report may be incomplete; raise --ring-size"
	o.Tracer.Enrich = enrich.New(enrich.Options{}).Then(enrich.PortHolders(portHolders)) // named now, before the holder lets go
	s, err := tracer.NewSession(o)
	if err != nil {
		return err
	}
	defer s.Close()
	out, err := reportOutput(c)
	if err != nil {
		return err
	}
	defer out.Close()
	r := newLeakRun(c, s.Clock(), newFindingSink(out, c.Bool("json")), f)
	if err := snapshotEvents(r.w.Handle); err != nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: snapshot of existing resources: %v\n", err)
	}
	err = s.Run(r.loop(len(argv) > 0))
	r.notes()
	var status *tracer.ExitError // the program's: leaks come first
	if r.w.Leaked() > 0 && (err == nil || errors.As(err, &status)) {
		return exitWith(exitLeaked, nil)
	}
	return err
}

// checkLeaksFlags checks leaks' flags before anything starts.
func checkLeaksFlags(c *cli.Context) error {
	if c.IsSet("output") {
		return usage(c, "--output is now --report FILE")
	}
	if err := checkTracerFlags(c); err != nil {
		return err
	}
	if err := atLeast(c, "max-table", 1, "1 or more"); err != nil {
		return err
	}
	for _, name := range []string{"interval", "max-blocked"} {
		if d := c.Duration(name); d <= 0 {
			return usage(c, "--%s %v: expected a positive duration such as 5s", name, d)
		}
	}
	return nil
}

// leaksFromLogs is leaks --log: the post-mortem of saved kernel logs.
func leaksFromLogs(c *cli.Context, logs, argv []string, f *filter.Events) error {
	if len(argv) > 0 {
		return usage(c, "--log reads saved logs: it runs no program")
	}
	out, err := reportOutput(c)
	if err != nil {
		return err
	}
	defer out.Close()
	return runLeakLog(logs, c.String("recording"), inputLimits{maxInput(c), c.Int("max-table")}, f, newFindingSink(out, c.Bool("json")), c.App.Reader, c.App.ErrWriter)
}

// leakRun is leaks' consumer of a session: the live table, the watcher
// that reports on it, and the window that puts events from several CPUs
// in order.
type leakRun struct {
	w        *leaks.Watcher
	table    *restable.Table
	reorder  *restable.Reorder
	sink     *findingSink
	clock    tracer.Clock
	maxTable int
	warned   uint64 // untracked resources warned of
}

func newLeakRun(c *cli.Context, clock tracer.Clock, sink *findingSink, f *filter.Events) *leakRun {
	r := &leakRun{table: restable.New(c.Int("max-table")), reorder: restable.NewReorder(reorderWindow), sink: sink, clock: clock, maxTable: c.Int("max-table")}
	r.w = leaks.New(r.table, sink.write)
	r.w.Keep = f.Match
	r.w.Interval, r.w.MaxBlocked = c.Duration("interval"), c.Duration("max-blocked")
	return r
}

// loop is what the session runs; withProgram says whether leaks runs
// -- CMD, whose exit ends the report.
func (r *leakRun) loop(withProgram bool) tracer.Loop {
	return tracer.Loop{
		Consumer: tracer.Consumer{
			Event: func(ev *rdma.Event) error {
				r.reorder.Push(ev, r.w.Handle)
				return nil
			},
			Tick:  r.tick,
			Every: tickInterval,
		},
		Program: r.w.Program,
		End: func() error {
			r.reorder.Flush(r.w.Handle)
			r.tick()
			if now := time.Now().UTC(); withProgram {
				r.w.ProgramExited(now)
				if r.w.Leaked() == 0 {
					made, destroyed := r.w.ProgramCounts()
					r.sink.noLeaks(now, made, destroyed)
				}
			} else {
				r.w.End(now)
			}
			return r.sink.flush()
		},
	}
}

// tick does what is due at a moment without events, and under a flood
// every tickInterval all the same.
func (r *leakRun) tick() {
	now := tracer.Mono()
	if now > reorderWindow {
		r.reorder.FlushUntil(now-reorderWindow, r.w.Handle)
	}
	r.w.Tick(r.clock.Wall(now))
	if n := r.table.Untracked(); n > r.warned {
		fmt.Fprintf(os.Stderr, "rdmatrace: WARNING: table full (--max-table %d), %d resources untracked\n", r.maxTable, n)
		r.warned = n
	}
	_ = r.sink.flush()
}

// notes says, after the summary, what may make the report wrong.
func (r *leakRun) notes() {
	if n := r.reorder.Overflowed(); n > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: %d events left the reorder window early (more than %d within %v): their order may be wrong\n", n, restable.DefaultMaxHeld, time.Duration(reorderWindow))
	}
	if n := r.table.Replaced(); n > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: %d resource ids were reused without a traced destroy\n", n)
	}
}

// reportOutput is where leaks writes its report: --report, or stdout
// (which Close leaves open).
func reportOutput(c *cli.Context) (io.WriteCloser, error) {
	name := c.String("report")
	if name == "" || name == "-" {
		return nopCloser{c.App.Writer}, nil
	}
	f, err := safefile.Create(name, outputOwner())
	if err != nil {
		return nil, exitWith(2, fmt.Errorf("--report: %s", formats.Sanitize(err.Error())))
	}
	return f, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
