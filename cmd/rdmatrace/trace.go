package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/onport"
	"github.com/rdmatrace/rdmatrace/internal/analysis/qplife"
	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/rotate"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/fleet/otlp"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
	"github.com/rdmatrace/rdmatrace/tracer"
)

func init() { commands = append(commands, traceCommand()) }

func traceCommand() *cli.Command {
	return &cli.Command{
		Name:  "trace",
		Usage: "stream RDMA resource, rdma_cm and device events as they happen, with the owning process",
		Description: "Attaches eBPF programs to ib_core's resource tracking, the rdma_cma tracepoints,\n" +
			"QP state changes and device (un)registration, each with the cheapest variant the\n" +
			"kernel allows (fentry/fexit/tp_btf, else kprobe/raw tracepoint). Resources that\n" +
			"exist when tracing starts are listed first as \"exists\" events. Events the kernel\n" +
			"could not queue are counted and reported, live and at the end.\n\n" +
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
			streamDetailsFlag,
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
			&cli.BoolFlag{Name: "no-snapshot", Usage: "do not list the resources that exist at start"},
			&cli.StringFlag{Name: "timestamp", Value: "absolute", Usage: "how the human view times events: absolute (time of day), relative (seconds since the first), date, none"},
			&cli.StringFlag{Name: "read", Aliases: []string{"r"}, Usage: "read a recording back from `FILE` (- for stdin; compressed ones too) instead of tracing"},
			maxInputFlag,
			&cli.StringFlag{Name: "write", Aliases: []string{"w"}, Usage: "write the recording (NDJSON) to `FILE` (- for stdout) instead of printing events"},
			&cli.BoolFlag{Name: "print", Usage: "with -w FILE: print events too"},
			&cli.IntFlag{Name: "file-size", Aliases: []string{"C"}, Usage: "with -w: start a new file past `MB` megabytes (1,000,000 bytes), as tcpdump; FILE is the newest, FILE.1 the one before"},
			&cli.IntFlag{Name: "file-count", Aliases: []string{"W"}, Value: rotate.DefaultCount, Usage: "with -C: keep `N` files, the oldest dropped"},
			&cli.BoolFlag{Name: "no-kernel-filter", Usage: "filter pid, cgroup, container, pod and -- CMD in user space only (by default the kernel discards what they exclude; a container's cgroup is found within a second of its start)"},
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
var traceFilterKeys = []string{"pid", "comm", "dev", "res", "event", "cgroup", "container", "pod"}

// traceRun is what a trace does, as its flags say.
type traceRun struct {
	Filter     *filter.Events
	Argv       []string // -- CMD
	Out        eventOutput
	Read       string // -r FILE: a recording instead of tracing
	MaxInput   int64
	Count      uint64
	Session    tracer.SessionOptions // the tracer's
	NoBPF      string                // why not to try BPF ("": where the kernel allows)
	NoFallback bool                  // --bpf
	Netlink    netlinkOptions        // without BPF
	Snapshot   bool                  // what exists at start, as "exists" events
	RecordRaw  string                // --record-raw's file
	CPUProfile string
	Verbose    bool
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
	return trace(o)
}

// trace is the use case: a recording read back (-r), or the tracer's
// events, or, where BPF cannot be used, RDMA netlink's; each through the
// filter to the sink.
func trace(o traceRun) error {
	sink, err := o.Out.open()
	if err != nil {
		return err
	}
	defer sink.Close()
	if o.Read != "" {
		return readRecording(o.Read, o.MaxInput, o.Count, o.Filter, sink)
	}
	// One enricher for the run: the start snapshot's owners, the
	// tracer's (or the polls') and the port lookups' are named by it.
	x := enrich.New(enrich.Options{SMCOwners: true})
	if reason := o.noBPF(); reason != "" {
		return traceNetlink(o, sink, x, reason)
	}
	o.Session.Tracer.Enrich = traceEnrichment(x)
	s, err := tracer.NewSession(o.Session)
	if tracer.BPFDenied(err) {
		return traceNetlink(o, sink, x, bpfDenied)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	if o.Verbose {
		logf("mode: BPF")
	}
	if err := o.Out.openRecording(sink); err != nil {
		return err
	}
	defer startProfile(o.CPUProfile)()
	if o.Snapshot && !existingTo(x, o.Filter, sink) {
		return nil
	}
	raw, closeRaw, err := openRaw(o.RecordRaw, s.Clock())
	if err != nil {
		return err
	}
	defer closeRaw()
	return s.Run(tracer.Loop{
		Consumer: tracer.Consumer{Event: sink.Write, Idle: func() { _ = sink.Flush() }, Raw: raw},
		Flush:    sink.Flush,
	})
}

// noBPF says why trace goes without BPF, or "" to try it: --netlink, or
// what the preflight finds missing that netlink can stand in for.
func (o traceRun) noBPF() string {
	if o.NoBPF != "" {
		return o.NoBPF
	}
	return tracer.NoBPF(o.Session.Tracer.BTF)
}

// traceEnrichment is the run's enrichment of the tracer's events: the
// owner, then a port-busy event's holders and what lives on a port whose
// state changed, named as the event arrives, before they let go; the
// port's objects' owners are named by the same enricher.
func traceEnrichment(x *enrich.Enricher) enrich.Events {
	onPort := onport.NewLookup()
	onPort.Owners = x
	return x.Then(enrich.PortHolders(holderLookup.Names), enrich.PortObjects(onPort.Names))
}

func traceOptions(c *cli.Context) (o traceRun, err error) {
	if err := checkTracerFlags(c); err != nil {
		return o, err
	}
	if c.Int("count") < 0 {
		return o, usagef("--count %d: expected 0 (no limit) or more", c.Int("count"))
	}
	words, argv := splitCommand(c.Args().Slice())
	if o.Filter, err = eventFilterOptions(c, words, traceFilterKeys...); err != nil {
		return o, usagef("%w", err)
	}
	if o.Out, err = eventOutputOptions(c); err != nil {
		return o, err
	}
	o.Argv, o.Read, o.MaxInput, o.Count = argv, c.String("read"), maxInputOptions(c), uint64(c.Int("count"))
	if o.Read != "" {
		if len(argv) > 0 || o.Out.Write != "" {
			return o, usagef("-r reads a recording: no -w, no -- CMD")
		}
		return o, nil
	}
	if o.Session, err = sessionOptions(c, argv); err != nil {
		return o, err
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
	o.RecordRaw, o.CPUProfile, o.Verbose = c.String("record-raw"), c.String("cpuprofile"), c.Bool("verbose")
	o.Netlink = netlinkOptions{Poll: defaultNetlinkPoll, Follow: len(c.IntSlice("follow-pid")) > 0, NeedsRoot: needsRoot(c.Command.Name)}
	if c.IsSet("poll") {
		o.Netlink.Poll = c.Duration("poll")
	}
	return o, nil
}

// bpfDenied is why trace goes on through netlink when the kernel refused
// its programs.
const bpfDenied = "the kernel refused to load BPF programs (seccomp, an LSM or kernel.unprivileged_bpf_disabled may forbid them to this process): run rdmatrace as root outside such a confinement"

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

// eventOutput is where trace's events go: the screen in Format (timed by
// Stamp), the recording of -w (rotated past FileSizeMB, FileCount kept;
// "-": stdout), with Print both, and an OTLP collector, with the node's
// identity records as Node when Identity (live runs: a recording's QPs are
// not this node's).
type eventOutput struct {
	Format     formats.Format
	Stamp      formats.Stamp
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
	if o.Stamp, err = formats.ParseStamp(c.String("timestamp")); err != nil {
		return o, usagef("--timestamp: %w", err)
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
		sink.Print = formats.NewEventSink(os.Stdout, o.Format, o.Stamp)
	}
	if o.Write == "-" {
		sink.Record = formats.NewEventWriter(os.Stdout, true)
	}
	if o.OTLP != "" {
		s, closeOTLP, err := startOTLP(o.OTLP, o.Node)
		if err != nil {
			return nil, err
		}
		sink.Also = s.Write
		closeIDs := func() {}
		if o.Identity {
			var ids *qplife.Runner
			ids, closeIDs = startIdentity(s)
			sink.Also = func(e *rdma.Event) { s.Write(e); ids.Event(e) }
		}
		sink.Closers = append(sink.Closers, func() error { closeIDs(); closeOTLP(); return nil })
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

// maxSnapshotShown bounds trace's start snapshot: past it, a line says
// how many objects the kernel lists (rdmatrace res and ps list them all).
const maxSnapshotShown = 10000

// existingTo writes the resources that exist now, as f keeps them, at
// most maxSnapshotShown. A SIGINT or SIGTERM stops it, and the run
// (false): the run's lifecycle catches signals only once it starts.
func existingTo(x *enrich.Enricher, f *filter.Events, sink *formats.EventTee) bool {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	proc.WarnPIDNamespace(os.Stderr)
	sum, err := nldev.ExistsEvents(ctx, x, nldev.ExistsOptions{Max: maxSnapshotShown,
		Keep: func(e *rdma.Event) bool { return f.Match(e) && sink.Write(e) == nil }})
	_ = sink.Flush()
	switch {
	case ctx.Err() != nil:
		logf("stopped during the snapshot of existing resources, %d shown", sum.Kept)
		return false
	case err != nil:
		logf("snapshot of existing resources: %v", err)
	}
	if sum.Cut {
		logf("the snapshot of existing resources shows the first %d; the kernel lists %d objects in all (rdmatrace res, rdmatrace ps)", sum.Kept, sum.Listed)
	}
	return true
}

// startProfile starts --cpuprofile's Go CPU profile, when asked; its
// result stops it.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	pf, err := safefile.Create(path, outputOwner())
	if err != nil {
		logf("--cpuprofile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		logf("--cpuprofile: %v", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }
}

// openRaw opens --record-raw's file of raw ring buffer records.
func openRaw(path string, clock tracer.Clock) (*tracer.RawWriter, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	// The records hold kernel addresses: for root's eyes only, so not a
	// file for the user who ran sudo, nor one root makes where that user
	// asks.
	if outputOwner() != nil {
		return nil, nil, exitWith(1, errors.New("--record-raw: the raw records hold kernel addresses and are root's alone: run rdmatrace as root itself, not through sudo (SUDO_UID is set)"))
	}
	rf, err := safefile.Create(path, nil)
	if err != nil {
		return nil, nil, err
	}
	raw := tracer.NewRawWriter(rf, clock)
	return raw, func() { raw.Flush(); rf.Close() }, nil
}

// otlpFlag sends events to an OpenTelemetry collector (trace, exporter).
var otlpFlag = &cli.StringFlag{Name: "otlp", Usage: "also send each event as an OTLP log record to the collector at `URL` (OTLP/HTTP, e.g. http://127.0.0.1:4318; OTEL_EXPORTER_OTLP_HEADERS and the other OTEL_EXPORTER_OTLP_* variables apply)"}

// startOTLP starts the --otlp sink; its closer sends what is queued (10 s
// at most) and says on stderr what became of every event.
func startOTLP(endpoint, node string) (*otlp.Sink, func(), error) {
	o, err := otlp.New(context.Background(), endpoint, otlp.Options{Node: node})
	if err != nil {
		return nil, nil, usagef("%w", err)
	}
	return o, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		logf("%s", formats.Sanitize(o.Close(ctx).Summary(endpoint)))
	}, nil
}

// readRecording is trace -r: a recording through the same filters and
// views as a live trace, up to limit events (0: all). A bad line is
// reported (file, line, what was expected) and the rest still read; then
// the exit status is 1.
func readRecording(path string, maxInput int64, limit uint64, f *filter.Events, sink formats.Sink[*rdma.Event]) error {
	in, done, err := openInput(path, os.Stdin, maxInput)
	if err != nil {
		return exitWith(1, err)
	}
	defer done()
	var werr error // the sink's: returned as it is, not as the file's
	bad, err := replay.NewReader(in, sourceName(path)).Play(replay.PlayOptions{Keep: f.Match, Count: limit,
		Write: func(e *rdma.Event) error { werr = sink.Write(e); return werr },
		Flush: func() error {
			if ferr := sink.Flush(); ferr != nil {
				werr = ferr
				return ferr
			}
			return nil
		},
		Bad: func(le *lineerr.Error) { logf("%v", le) }})
	switch {
	case err != nil && err == werr:
		return err
	case err != nil:
		return exitWith(1, err)
	case bad > 0:
		return exitWith(1, fmt.Errorf("%s: %d lines were not events (named or counted above)", sourceName(path), bad))
	}
	return nil
}

// existing lists the resources that exist now as "exists" events, in
// every network namespace (the tracer sees their events; in exclusive
// netns mode netlink shows them only from there), owners named by the
// run's enricher.
func existing(x *enrich.Enricher, emit func(*rdma.Event)) error {
	proc.WarnPIDNamespace(os.Stderr)
	_, err := nldev.ExistsEvents(context.Background(), x, nldev.ExistsOptions{Keep: func(e *rdma.Event) bool { emit(e); return true }})
	return err
}
