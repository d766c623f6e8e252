package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/leaks"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
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
var leaksFilterKeys = []string{"pid", "comm", "dev", "res", "cgroup", "container", "pod", "job"}

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

// leaksRun is what leaks does, as its flags say: a live watch, or with
// --log the post-mortem of saved logs; the report goes to --report (or
// stdout), as NDJSON with -j.
type leaksRun struct {
	Live   leaks.RunOptions
	Logs   *leaks.LogOptions
	Report string
	JSON   bool
}

func runLeaks(c *cli.Context) error {
	o, err := leaksOptions(c)
	if err != nil {
		return err
	}
	out := &formats.LeakReportFile{Name: o.Report, Stdout: c.App.Writer, Owner: outputOwner()}
	defer out.Close()
	open := func() (*formats.LeakReport, error) {
		r, err := out.Open(o.JSON)
		if err != nil {
			return nil, exitWith(2, fmt.Errorf("--report: %s", formats.Sanitize(err.Error())))
		}
		return r, nil
	}
	if o.Logs != nil {
		r, err := open()
		if err != nil {
			return err
		}
		lo := *o.Logs
		lo.Stdin, lo.Warn = c.App.Reader, func(line string) { fmt.Fprintf(c.App.ErrWriter, "rdmatrace: %s\n", line) }
		return leaks.FromLogs(lo, logReport{r})
	}
	return leaks.Run(o.Live, func() (leaks.Report, error) { return open() })
}

// leaksOptions checks leaks' flags and reads them into its run.
func leaksOptions(c *cli.Context) (leaksRun, error) {
	if err := checkLeaksFlags(c); err != nil {
		return leaksRun{}, err
	}
	// No positional filter words: they would be CMD's.
	f, err := eventFilterOptions(c, nil, leaksFilterKeys...)
	if err != nil {
		return leaksRun{}, usagef("%w", err)
	}
	o := leaksRun{Report: c.String("report"), JSON: c.Bool("json")}
	argv := positional(c.Args().Slice())
	if logs := c.StringSlice("log"); len(logs) > 0 {
		if len(argv) > 0 {
			return o, usagef("--log reads saved logs: it runs no program")
		}
		o.Logs = &leaks.LogOptions{Logs: logs, Recording: c.String("recording"), Keep: f.Match, MaxInput: maxInputOptions(c),
			Limits: leaks.PostMortemLimits{MaxTable: c.Int("max-table"), Window: reorderWindow}}
		return o, nil
	}
	if c.String("recording") != "" {
		return o, usagef("--recording goes with --log FILE (the kernel log of the same boot)")
	}
	so, err := sessionOptions(c, argv)
	if err != nil {
		return o, err
	}
	so.Tracer.Stacks = c.Bool(stacksFlag.Name) || (len(argv) > 0 && !c.IsSet(stacksFlag.Name))
	o.Live = leaks.RunOptions{Session: so, Tick: tickInterval, Warn: func(msg string) { logf("%s", msg) },
		Enrich: enrich.New(enrich.Options{}), Stages: []enrich.Stage{enrich.PortHolders(ports.NewHolderLookup().Names)},
		Watch: leaks.Options{MaxTable: c.Int("max-table"), Interval: c.Duration("interval"), MaxBlocked: c.Duration("max-blocked"),
			Keep: f.Match, Window: reorderWindow}}
	return o, nil
}

// checkLeaksFlags checks leaks' flags before anything starts.
func checkLeaksFlags(c *cli.Context) error {
	if c.IsSet("output") {
		return usagef("--output is now --report FILE")
	}
	if err := checkTracerFlags(c); err != nil {
		return err
	}
	if v := c.Int("max-table"); v < 1 {
		return usagef("--max-table %d: expected 1 or more", v)
	}
	for _, name := range []string{"interval", "max-blocked"} {
		if d := c.Duration(name); d <= 0 {
			return usagef("--%s %v: expected a positive duration such as 5s", name, d)
		}
	}
	return nil
}

// logReport is a report as leaks.FromLogs writes to it.
type logReport struct{ *formats.LeakReport }

func (r logReport) Report(n leaks.ReportNote) {
	r.Kernel(formats.KernelNote{Report: n.Report, WithRecording: n.WithRecording, Matched: n.Matched,
		SameAs: n.SameAs, NoQP: n.NoQP, Repeats: n.Repeats})
}
