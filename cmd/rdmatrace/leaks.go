package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/leaks"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/tracer"
)

func init() { commands = append(commands, leaksCommand()) }

// exitLeaked is the exit status when leaks were reported: something was
// never freed, or held a device's unregistration past --max-blocked.
const exitLeaked = leaks.ExitLeaked

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
			"3  leaks: something was never freed (a device's unregistration dropped it, or CMD left\n"+
				"      it to the kernel's cleanup or alive), or held a device's unregistration past\n"+
				"      --max-blocked; what is alive when a watch without CMD ends is listed, not a leak",
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

// Finding writes one finding.
func (s *findingSink) Finding(f *rdma.Finding) { s.put(formats.LeakRecord{Finding: f}) }

// kernel writes a report from a kernel log; withRecording says whether a
// recording was given, matched how many findings it has on it, and sameAs
// where the findings of the same unregistration were shown.
func (s *findingSink) kernel(r *rdma.KernelReport, withRecording bool, matched int, sameAs string) {
	s.put(formats.LeakRecord{Kernel: &formats.KernelNote{Report: r, WithRecording: withRecording, Matched: matched, SameAs: sameAs}})
}

// NoLeaks ends the report of a program that left nothing behind.
func (s *findingSink) NoLeaks(now time.Time, created, destroyed int) {
	s.put(formats.LeakRecord{NoLeaks: &formats.NoLeaks{Time: now, Created: created, Destroyed: destroyed}})
}

// Flush writes out what is buffered; it returns the first error.
func (s *findingSink) Flush() error {
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
	live := leaks.NewLive(leaks.Options{MaxTable: c.Int("max-table"), Interval: c.Duration("interval"), MaxBlocked: c.Duration("max-blocked"),
		Keep: f.Match, Window: reorderWindow, Program: len(argv) > 0}, newFindingSink(out, c.Bool("json")), warn)
	if err := snapshotEvents(live.Snapshot); err != nil {
		warn(fmt.Sprintf("snapshot of existing resources: %v", err))
	}
	clock := s.Clock()
	err = s.Run(tracer.Loop{
		Consumer: tracer.Consumer{
			Event: live.Push,
			Tick: func() {
				now := tracer.Mono()
				live.Tick(now, clock.Wall(now))
			},
			Every: tickInterval,
		},
		Program: live.Program,
		End:     func() error { return live.End(time.Now().UTC()) },
	})
	live.Notes()
	if live.Leaks(err) {
		return exitWith(exitLeaked, nil)
	}
	return err
}

// warn says a problem on stderr.
func warn(msg string) { fmt.Fprintf(os.Stderr, "rdmatrace: %s\n", msg) }

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
	return runLeakLog(logs, c.String("recording"), inputLimits{maxInputOptions(c), c.Int("max-table")}, f, newFindingSink(out, c.Bool("json")), c.App.Reader, c.App.ErrWriter)
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
