package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/onport"
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
			&cli.StringFlag{Name: "record-raw", Hidden: true, Usage: "also append every raw ring buffer record to `FILE` (test fixtures)"},
			&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a Go CPU profile of the run to `FILE`"},
			listFlag,
		),
		Action: runTrace,
	}
}

// traceFilterKeys are trace's filter keys: all of filter.EventKeys.
var traceFilterKeys = []string{"pid", "comm", "dev", "res", "event", "cgroup", "container", "pod"}

func runTrace(c *cli.Context) error {
	if c.Bool("list") {
		return runTraceList(c)
	}
	if err := checkTraceFlags(c); err != nil {
		return err
	}
	words, argv := splitCommand(c.Args().Slice())
	f, err := parseEvents(c, words, traceFilterKeys...)
	if err != nil {
		return usage(c, "%w", err)
	}
	sink, err := newEventSink(c)
	if err != nil {
		return err
	}
	defer sink.close()
	if path := c.String("read"); path != "" {
		return readRecording(c, path, argv, f, sink)
	}
	o, err := sessionOptions(c, argv)
	if err != nil {
		return err
	}
	if reason := noBPFReason(c, o.Tracer.BTF); reason != "" {
		return traceNetlink(c, f, sink, argv, reason)
	}
	traceOptions(c, &o, f)
	s, err := tracer.NewSession(o)
	if tracer.BPFDenied(err) {
		return traceNetlink(c, f, sink, argv, bpfDenied)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	if c.Bool("verbose") {
		fmt.Fprintln(os.Stderr, "rdmatrace: mode: BPF")
	}
	if err := sink.openRecording(c); err != nil {
		return err
	}
	defer startProfile(c.String("cpuprofile"))()
	// With a program, what exists already is not its: no snapshot.
	if !c.Bool("no-snapshot") && len(argv) == 0 {
		snapshotTo(f, sink)
	}
	loop, closeRaw, err := traceLoop(c.String("record-raw"), s.Clock(), sink)
	if err != nil {
		return err
	}
	defer closeRaw()
	return s.Run(loop)
}

// checkTraceFlags checks the tracer's flags and --count.
func checkTraceFlags(c *cli.Context) error {
	if err := checkTracerFlags(c); err != nil {
		return err
	}
	return atLeast(c, "count", 0, "0 (no limit) or more")
}

// traceLoop hands each event to sink, and each raw record to
// --record-raw's file (rawPath) when asked; its closer flushes that file.
func traceLoop(rawPath string, clock tracer.Clock, sink *eventSink) (tracer.Loop, func(), error) {
	raw, closeRaw, err := openRaw(rawPath, clock)
	if err != nil {
		return tracer.Loop{}, nil, err
	}
	return tracer.Loop{
		Consumer: tracer.Consumer{Event: sink.write, Idle: func() { _ = sink.flush() }, Raw: raw},
		Flush:    sink.flush,
	}, closeRaw, nil
}

// bpfDenied is why trace goes on through netlink when the kernel refused
// its programs.
const bpfDenied = "the kernel refused to load BPF programs (seccomp, an LSM or kernel.unprivileged_bpf_disabled may forbid them to this process): run rdmatrace as root outside such a confinement"

// traceOptions completes trace's session: the user-space and kernel
// filters, the owners named as events arrive, and a denial of BPF left to
// the caller (which falls back to netlink, saying why).
func traceOptions(c *cli.Context, o *tracer.SessionOptions, f *filter.Events) {
	o.Tracer.Stacks = c.Bool(stacksFlag.Name)
	o.Keep, o.OnlyProgram, o.ReadyClock, o.DropHint = f.Match, true, true, "raise --ring-size or filter"
	o.NeedsRoot = ""
	// A port-busy event's holders and an SMC fallback's process are named
	// as the event arrives, before the holder lets go; so are the objects
	// on a port whose state changed.
	onPort := onport.NewLookup()
	x := enrich.New(enrich.Options{Holders: portHolders, SMCOwners: true, PortObjects: onPort.Names})
	onPort.Owners = x
	o.Tracer.Enrich = x
	if !c.Bool("no-kernel-filter") {
		o.Kernel = f
	}
}

// eventSink writes events to the screen (NDJSON or human lines), to a
// recording (-w) and to an OpenTelemetry collector (--otlp), any of which
// may be absent.
type eventSink struct {
	print, record formats.Sink[*rdma.Event]
	otlp          *otlp.Sink
	closers       []func() error
}

func (s *eventSink) write(e *rdma.Event) error {
	if s.otlp != nil {
		s.otlp.Write(e)
	}
	if s.print != nil {
		if err := s.print.Write(e); err != nil {
			return err
		}
	}
	if s.record != nil {
		if err := s.record.Write(e); err != nil {
			return fmt.Errorf("-w: %w", err)
		}
	}
	return nil
}

func (s *eventSink) flush() error {
	var errs []error
	if s.print != nil {
		errs = append(errs, s.print.Flush())
	}
	if s.record != nil {
		if err := s.record.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("-w: %w", err))
		}
	}
	return errors.Join(errs...)
}

// close ends the printed events (a JSON array's "]"), closes the OTLP
// sink, then the recording.
func (s *eventSink) close() error {
	var errs []error
	if s.print != nil {
		errs = append(errs, s.print.Close())
	}
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
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

// newEventSink makes trace's sink from -j/-o, --timestamp, -w -, --print
// and --otlp; openRecording adds -w FILE.
func newEventSink(c *cli.Context) (*eventSink, error) {
	format, err := streamFormat(c, formats.FormatText, formats.FormatJSON, formats.FormatNDJSON)
	if err != nil {
		return nil, err
	}
	stamp, err := formats.ParseStamp(c.String("timestamp"))
	if err != nil {
		return nil, usage(c, "--timestamp: %w", err)
	}
	sink := &eventSink{}
	w := c.String("write")
	switch {
	case c.Int("file-size") < 0 || c.Int("file-count") < 1:
		return nil, usage(c, "-C and -W take a positive number")
	case w == "" && (c.IsSet("file-size") || c.IsSet("file-count") || c.Bool("print")):
		return nil, usage(c, "-C, -W and --print go with -w FILE")
	case c.IsSet("file-count") && !c.IsSet("file-size"):
		return nil, usage(c, "-W N keeps N files of -C MB: give -C too")
	case w == "-" && (c.Bool("print") || c.IsSet("file-size")):
		return nil, usage(c, "-w - writes the recording to stdout: no --print or -C there")
	}
	if w == "" || c.Bool("print") {
		sink.print = formats.NewEventSink(os.Stdout, format, stamp)
	}
	if w == "-" {
		sink.record = formats.NewEventWriter(os.Stdout, true)
	}
	if ep := c.String("otlp"); ep != "" {
		o, closeOTLP, err := openOTLP(c, ep)
		if err != nil {
			return nil, err
		}
		sink.otlp = o
		sink.closers = append(sink.closers, func() error { closeOTLP(); return nil })
	}
	return sink, nil
}

// openRecording starts -w FILE, once the tracer is attached: a run that
// fails before leaves an earlier recording as it was.
func (s *eventSink) openRecording(c *cli.Context) error {
	w := c.String("write")
	if w == "" || w == "-" {
		return nil
	}
	rw, err := createRecording(w, c.Int("file-size"), c.Int("file-count"))
	if err != nil {
		return err
	}
	s.record = formats.NewEventWriter(rw, true)
	s.closers = append(s.closers, rw.Close)
	return nil
}

// createRecording is -w FILE -C MB -W N's writer.
func createRecording(path string, sizeMB, count int) (*rotate.Writer, error) {
	rw, err := rotate.Create(path, int64(sizeMB)*1_000_000, count, outputOwner())
	if err != nil {
		return nil, exitWith(1, fmt.Errorf("-w: %s", formats.Sanitize(err.Error())))
	}
	return rw, nil
}

// snapshotTo writes the resources that exist now, as f keeps them.
func snapshotTo(f *filter.Events, sink *eventSink) {
	if err := snapshotEvents(func(e *rdma.Event) {
		if f.Match(e) {
			_ = sink.write(e)
		}
	}); err != nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: snapshot of existing resources: %v\n", err)
	}
	_ = sink.flush()
}

// startProfile starts --cpuprofile's Go CPU profile, when asked; its
// result stops it.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	pf, err := safefile.Create(path, outputOwner())
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: --cpuprofile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		fmt.Fprintf(os.Stderr, "rdmatrace: --cpuprofile: %v\n", err)
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

// openOTLP starts the --otlp sink; its closer sends what is queued (10 s
// at most) and says on stderr what became of every event.
func openOTLP(c *cli.Context, endpoint string) (*otlp.Sink, func(), error) {
	o, err := otlp.New(context.Background(), endpoint, otlp.Options{})
	if err != nil {
		return nil, nil, usage(c, "%w", err)
	}
	return o, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fmt.Fprintln(os.Stderr, "rdmatrace: "+formats.Sanitize(o.Close(ctx).Summary(endpoint)))
	}, nil
}

// readRecording is trace -r: a recording through the same filters and
// views as a live trace. A bad line is reported (file, line, what was
// expected) and the rest still read; then the exit status is 1.
func readRecording(c *cli.Context, path string, argv []string, f *filter.Events, sink *eventSink) error {
	if len(argv) > 0 || c.String("write") != "" {
		return usage(c, "-r reads a recording: no -w, no -- CMD")
	}
	in, done, err := openInput(path, os.Stdin, maxInput(c))
	if err != nil {
		return exitWith(1, err)
	}
	defer done()
	r := replay.NewReader(in, sourceName(path))
	var ev rdma.Event
	bad := 0
	limit, shown := uint64(c.Int("count")), uint64(0)
	for {
		err := r.Next(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		var le *lineerr.Error
		if errors.As(err, &le) {
			bad += le.Lines()
			_ = sink.flush()
			fmt.Fprintf(os.Stderr, "rdmatrace: %v\n", le)
			continue
		}
		if err != nil {
			_ = sink.flush()
			return exitWith(1, readError(sourceName(path), err))
		}
		if !f.Match(&ev) {
			continue
		}
		if err := sink.write(&ev); err != nil {
			return err
		}
		if shown++; shown == limit {
			break
		}
	}
	if err := sink.flush(); err != nil {
		return err
	}
	if bad > 0 {
		return exitWith(1, fmt.Errorf("%s: %d lines were not events (named or counted above)", sourceName(path), bad))
	}
	return nil
}

// snapshotEvents lists the resources that exist now as "exists" events,
// in every network namespace (the tracer sees their events; in exclusive
// netns mode netlink shows them only from there).
func snapshotEvents(emit func(*rdma.Event)) error {
	proc.WarnPIDNamespace(os.Stderr)
	return nldev.ExistsEvents(enrich.New(enrich.Options{}), emit)
}
