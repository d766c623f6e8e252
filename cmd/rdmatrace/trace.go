package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/trace"
	"github.com/rdmatrace/rdmatrace/internal/base/rotate"
	"github.com/rdmatrace/rdmatrace/internal/fleet/otlp"
)

func init() { commands = append(commands, traceCommand()) }

func traceCommand() *cli.Command {
	return &cli.Command{
		Name:  "trace",
		Usage: "stream RDMA resource, rdma_cm and device events as they happen, with the owning process",
		Description: "Attaches eBPF programs to ib_core's resource tracking, the rdma_cma tracepoints,\n" +
			"QP state changes and device (un)registration, each with the cheapest variant the\n" +
			"kernel allows (fentry/fexit/tp_btf, else kprobe/raw tracepoint). Resources that\n" +
			"exist when tracing starts are counted in one line (--snapshot lists them as \"exists\"\n" +
			"events; -j, -w and --otlp always have them). An rdma_cm event is one line, with what\n" +
			"the program's handler returned, and so is a destroy (-j: cm_event_handler and\n" +
			"cm_event_done, destroy_begin and destroy). Objects are their process's; -d or -v\n" +
			"adds the thread. Events the kernel could not queue are counted and reported, live\n" +
			"and at the end.\n\n" +
			"Where BPF cannot be used (no privileges for it, no BTF, a kernel that refuses it) or\n" +
			"with --netlink, trace says so and goes on through RDMA netlink: device events from the\n" +
			"kernel's monitor group (Linux 6.12+) and resources compared every --poll (1s unless\n" +
			"given), shown as polled; rdma_cm events and what lives between two polls are not seen.\n\n" +
			filterHelp(traceFilterKeys...) +
			"   A first word that is no key is a resource type: trace qp pid 1234.\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace trace                              # everything, human view\n" +
			"   rdmatrace trace qp pid 1234 comm rping       # iproute2's words\n" +
			"   rdmatrace trace -p 1234 --filter-res qp      # bpftrace's -p, ptcpdump's --filter-*\n" +
			"   rdmatrace trace cm_id event cm -j            # rdma_cm events as NDJSON\n" +
			"   rdmatrace trace --snapshot                   # what exists at start too, one line each\n" +
			"   rdmatrace trace --duration 30s --no-snapshot > events.txt\n" +
			"   rdmatrace trace -w rec.ndjson -C 100 -W 5     # record, rotated past 100 MB, 5 files kept\n" +
			"   rdmatrace trace -r rec.ndjson qp --timestamp relative   # read it back, filtered\n" +
			"   rdmatrace trace -- rping -s -a 10.0.0.1       # only what rping and its children hold\n" +
			"   rdmatrace trace --netlink --poll 500ms       # no BPF: netlink's device events and polled resources\n" +
			"   rdmatrace trace --otlp http://127.0.0.1:4318 > /dev/null   # to an OpenTelemetry collector\n\n" +
			"EXIT STATUS:\n" + exitStatus("nothing could be attached, or the kernel cannot trace RDMA (the line says why)", "",
			"130  a second Ctrl-C (128 + the signal): exited at once"),
		ArgsUsage: "[TYPE] [FILTER VALUE]... [-- CMD [ARG...]]\n\n" +
			"   With -- CMD: runs CMD (as the user who ran sudo, in a cgroup of its own) and shows\n" +
			"   only the objects it and its children hold; ends when it exits, with its exit status.\n" +
			"   -w FILE writes the recording (trace -j's lines) instead of printing (--print: both);\n" +
			"   -r FILE reads one back through the same filters and views, without BPF or root.",
		Flags: append(append(streamOutputFlags("one JSON object per event (NDJSON, as a stream is; same as -o ndjson)",
			"text, json (one array, closed at the end) or ndjson (one object a line, as -j)"),
			filterFlags(true, traceFilterKeys...)...),
			&cli.BoolFlag{Name: "kernel-only", Usage: "only objects owned by kernel modules"},
			&cli.BoolFlag{Name: "user-only", Usage: "only objects owned by processes"},
			&cli.BoolFlag{Name: "details", Aliases: []string{"d"}, Usage: "the human view names the thread that made an object (tid=) and a thread of its process that acted (by=); -j has pid and tgid always"},
			durationFlag,
			&cli.IntFlag{Name: "count", Aliases: []string{"c"}, Usage: "stop after this many events"},
			readyFileFlag("once every available hook is attached"),
			ringSizeFlag,
			stacksFlag,
			fallbackFlag,
			btfFlag,
			pollFlag,
			netlinkFlag,
			bpfFlag,
			verboseFlag,
			&cli.BoolFlag{Name: "snapshot", Usage: "list the resources that exist at start, one \"exists\" line each (by default the human view counts them in one line)"},
			&cli.BoolFlag{Name: "no-snapshot", Usage: "do not read the resources that exist at start, not even into -j, -w or --otlp"},
			&cli.StringFlag{Name: "timestamp", Value: "absolute", Usage: "how the human view times events: absolute (time of day), relative (seconds since the first), date, none"},
			&cli.StringFlag{Name: "read", Aliases: []string{"r"}, Usage: "read a recording back from `FILE` (- for stdin; compressed ones too) instead of tracing"},
			maxInputFlag,
			&cli.StringFlag{Name: "write", Aliases: []string{"w"}, Usage: "write the recording (NDJSON) to `FILE` (- for stdout) instead of printing events"},
			&cli.BoolFlag{Name: "print", Usage: "with -w FILE: print events too"},
			&cli.IntFlag{Name: "file-size", Aliases: []string{"C"}, Usage: "with -w: start a new file past `MB` megabytes (1,000,000 bytes), as tcpdump; FILE is the newest, FILE.1 the one before"},
			&cli.IntFlag{Name: "file-count", Aliases: []string{"W"}, Value: rotate.DefaultCount, Usage: "with -C: keep `N` files, the oldest dropped"},
			&cli.BoolFlag{Name: "no-kernel-filter", Usage: "filter pid, cgroup, container, pod, job and -- CMD in user space only (by default the kernel discards what they exclude; a container's cgroup is found within a second of its start)"},
			userFlag,
			&cli.IntSliceFlag{Name: "follow-pid", Usage: "also trace this process's off-CPU spells (sched_switch/sched_wakeup, who ran instead) and its ucma_get_event calls, and every process's time in the kernel functions behind verbs and rdma_cm steps (span events; repeatable)"},
			otlpFlag,
			nodeFlag,
			&cli.StringFlag{Name: "record-raw", Hidden: true, Usage: "also append every raw ring buffer record to `FILE` (test fixtures)"},
			&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a Go CPU profile of the run to `FILE`"},
			listFlag,
		),
		Action: runTrace,
	}
}

// traceFilterKeys are trace's filter keys: all of filter.EventKeys.
var traceFilterKeys = []string{"pid", "comm", "dev", "res", "event", "cgroup", "container", "pod", "job"}

// traceRun is a trace as its flags say: the use case's options and
// where its events go.
type traceRun struct {
	Run trace.Options
	Out eventOutput
}

func runTrace(c *cli.Context) error {
	if c.Bool("list") {
		o, pattern, err := traceListOptions(c)
		if err != nil {
			return err
		}
		return listHooks(o, pattern)
	}
	o, err := traceOptions(c)
	if err != nil {
		return err
	}
	sink, err := o.Out.open()
	if err != nil {
		return err
	}
	defer sink.Close()
	o.Run.Attached = func() error { return o.Out.openRecording(sink) }
	err = trace.Run(o.Run, sink)
	if ue := (*trace.UsageError)(nil); errors.As(err, &ue) {
		return usagef("%w", ue.Err)
	}
	return err
}

func traceOptions(c *cli.Context) (t traceRun, err error) {
	if err := checkTracerFlags(c); err != nil {
		return t, err
	}
	if c.Int("count") < 0 {
		return t, usagef("--count %d: expected 0 (no limit) or more", c.Int("count"))
	}
	words, argv := splitCommand(c.Args().Slice())
	o := &t.Run
	if o.Filter, err = eventFilterOptions(c, words, traceFilterKeys...); err != nil {
		return t, usagef("%w", err)
	}
	if t.Out, err = eventOutputOptions(c); err != nil {
		return t, err
	}
	o.Argv, o.Read, o.MaxInput, o.Count = argv, c.String("read"), maxInputOptions(c), uint64(c.Int("count"))
	if o.Read != "" {
		if len(argv) > 0 || t.Out.Write != "" {
			return t, usagef("-r reads a recording: no -w, no -- CMD")
		}
		return t, nil
	}
	if o.Session, err = sessionOptions(c, argv); err != nil {
		return t, err
	}
	o.Session.Tracer.Stacks = c.Bool(stacksFlag.Name)
	o.Session.Keep, o.Session.OnlyProgram, o.Session.ReadyClock = o.Filter.Match, true, true
	o.Session.DropHint, o.Session.NeedsRoot = "raise --ring-size or filter", ""
	if !c.Bool("no-kernel-filter") {
		o.Session.Kernel = o.Filter
	}
	o.NoFallback = c.Bool("bpf")
	if c.Bool("netlink") {
		o.NoBPF = "--netlink asked for none (without it, trace loads BPF where it can)"
	}
	o.Snapshot = !c.Bool("no-snapshot") && len(argv) == 0 // what exists already is not the program's
	o.RecordRaw, o.CPUProfile, o.Verbose, o.Owner = c.String("record-raw"), c.String("cpuprofile"), c.Bool("verbose"), outputOwner()
	o.Netlink = trace.NetlinkOptions{Poll: defaultNetlinkPoll, Follow: len(c.IntSlice("follow-pid")) > 0, NeedsRoot: needsRoot(c.Command.Name)}
	if c.IsSet("poll") {
		o.Netlink.Poll = c.Duration("poll")
	}
	return t, nil
}

// splitCommand parts trace's arguments at the first "--": filter words
// before it, the program to run after it.
func splitCommand(args []string) (words, argv []string) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:]
		}
	}
	return args, nil
}

// eventOutput is where trace's events go: the screen in Format (shown as
// View says), the recording of -w (rotated past FileSizeMB, FileCount kept;
// "-": stdout), with Print both, and an OTLP collector, with the node's
// identity records as Node when Identity (live runs: a recording's QPs are
// not this node's).
type eventOutput struct {
	Format     formats.Format
	View       formats.EventView
	Write      string
	FileSizeMB int
	FileCount  int
	Print      bool
	OTLP       string
	Node       string
	Identity   bool
}

func eventOutputOptions(c *cli.Context) (o eventOutput, err error) {
	if o.Format, err = streamOptions(c, formats.FormatText, formats.FormatJSON, formats.FormatNDJSON); err != nil {
		return o, err
	}
	if o.View.Stamp, err = formats.ParseStamp(c.String("timestamp")); err != nil {
		return o, usagef("--timestamp: %w", err)
	}
	switch o.View.Threads = c.Bool("details") || c.Bool("verbose"); {
	case c.Bool("snapshot") && c.Bool("no-snapshot"):
		return o, usagef("--snapshot lists what --no-snapshot leaves out: give one")
	case c.Bool("snapshot"):
		o.View.Snapshot = formats.SnapshotList
	case c.Bool("no-snapshot"):
		o.View.Snapshot = formats.SnapshotHide
	}
	o.Write, o.FileSizeMB, o.FileCount, o.Print, o.OTLP = c.String("write"), c.Int("file-size"), c.Int("file-count"), c.Bool("print"), c.String("otlp")
	o.Node, o.Identity = c.String("node"), c.String("read") == ""
	switch w := o.Write; {
	case o.FileSizeMB < 0 || o.FileCount < 1:
		return o, usagef("-C and -W take a positive number")
	case w == "" && (c.IsSet("file-size") || c.IsSet("file-count") || o.Print):
		return o, usagef("-C, -W and --print go with -w FILE")
	case c.IsSet("file-count") && !c.IsSet("file-size"):
		return o, usagef("-W N keeps N files of -C MB: give -C too")
	case w == "-" && (o.Print || c.IsSet("file-size")):
		return o, usagef("-w - writes the recording to stdout: no --print or -C there")
	}
	return o, nil
}

// open makes trace's sink: the screen, -w - and --otlp; openRecording
// adds -w FILE.
func (o eventOutput) open() (*formats.EventTee, error) {
	sink := &formats.EventTee{}
	if o.Write == "" || o.Print {
		sink.Print = formats.NewEventSink(os.Stdout, o.Format, o.View)
	}
	if o.Write == "-" {
		sink.Record = formats.NewEventWriter(os.Stdout, true)
	}
	if o.OTLP != "" {
		n, err := startOTLP(o.OTLP, o.Node, o.Identity)
		if err != nil {
			return nil, err
		}
		sink.Also = n.Write
		sink.Closers = append(sink.Closers, func() error { n.Close(); return nil })
	}
	return sink, nil
}

// openRecording starts -w FILE, once the tracer is attached: a run that
// fails before leaves an earlier recording as it was.
func (o eventOutput) openRecording(sink *formats.EventTee) error {
	if o.Write == "" || o.Write == "-" {
		return nil
	}
	rw, err := rotate.Create(o.Write, int64(o.FileSizeMB)*1_000_000, o.FileCount, outputOwner())
	if err != nil {
		return exitWith(1, fmt.Errorf("-w: %s", formats.Sanitize(err.Error())))
	}
	sink.Record = formats.NewEventWriter(rw, true)
	sink.Closers = append(sink.Closers, rw.Close)
	return nil
}

// otlpFlag sends events to an OpenTelemetry collector (trace, exporter).
var otlpFlag = &cli.StringFlag{Name: "otlp", Usage: "also send each event as an OTLP log record to the collector at `URL` (OTLP/HTTP, e.g. http://127.0.0.1:4318; OTEL_EXPORTER_OTLP_HEADERS and the other OTEL_EXPORTER_OTLP_* variables apply)"}

// nodeFlag names the node in --otlp's records (trace, exporter).
var nodeFlag = &cli.StringFlag{Name: "node", Usage: "with --otlp: the node's `NAME` in its records (host.name; default: the host name; the Kubernetes node's name in a DaemonSet), which `rdmatrace peer` finds it by"}

// startOTLP starts --otlp (otlp.StartNode): the events, and with identity
// the node's identity records; a collector's address it cannot use is a
// usage error.
func startOTLP(endpoint, node string, identity bool) (*otlp.Node, error) {
	n, err := otlp.StartNode(endpoint, node, identity)
	if err != nil {
		return nil, usagef("%w", err)
	}
	return n, nil
}
