package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/rotate"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/fleet/otlp"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/launch"
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
			"   rdmatrace trace --otlp http://127.0.0.1:4318 > /dev/null   # to an OpenTelemetry collector\n\n" +
			"EXIT STATUS:\n" + exitStatus("nothing could be attached, or the kernel cannot trace RDMA (the line says why)", "",
			"130  a second Ctrl-C (128 + the signal): exited at once"),
		ArgsUsage: "[TYPE] [FILTER VALUE]... [-- CMD [ARG...]]\n\n" +
			"   With -- CMD: runs CMD (as the user who ran sudo, in a cgroup of its own) and shows\n" +
			"   only the objects it and its children hold; ends when it exits, with its exit status.\n" +
			"   -w FILE writes the recording (trace -j's lines) instead of printing (--print: both);\n" +
			"   -r FILE reads one back through the same filters and views, without BPF or root.",
		Flags: append(append(streamOutputFlags("one JSON object per event (NDJSON, as a stream is)"),
			filterFlags(true, traceFilterKeys...)...),
			&cli.BoolFlag{Name: "kernel-only", Usage: "only objects owned by kernel modules"},
			&cli.BoolFlag{Name: "user-only", Usage: "only objects owned by processes"},
			streamDetailsFlag,
			&cli.DurationFlag{Name: "duration", Usage: "stop after this long (-d is --details, as in iproute2)"},
			&cli.IntFlag{Name: "count", Aliases: []string{"c"}, Usage: "stop after this many events"},
			&cli.StringFlag{Name: "ready-file", Usage: "create `PATH` once every available hook is attached"},
			&cli.IntFlag{Name: "ring-size", Value: 4 << 20, Usage: "ring buffer size in bytes (a power of two)"},
			&cli.BoolFlag{Name: "fallback", Usage: "use kprobes and raw tracepoints instead of fentry/fexit/tp_btf"},
			&cli.DurationFlag{Name: "poll", Value: 20 * time.Millisecond, Usage: "while events flow, read them every `DURATION` (a quarter-full ring wakes the reader sooner): longer costs less CPU and shows events later"},
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
		),
		Action: runTrace,
	}
}

// traceFilterKeys are trace's filter keys: all of filter.EventKeys.
var traceFilterKeys = []string{"pid", "comm", "dev", "res", "event", "cgroup", "container", "pod"}

// eventSink writes events to the screen (NDJSON or human lines), to a
// recording (-w) and to an OpenTelemetry collector (--otlp), any of which
// may be absent.
type eventSink struct {
	print, record *formats.EventWriter
	otlp          *otlp.Sink
	live          bool
}

func (s *eventSink) write(e *rdma.Event) error {
	if s.live && e.Kind == rdma.EvPortBusy && e.Holders == nil {
		e.Holders = portHolders(e)
	}
	if s.live && e.Kind == rdma.EvSMCFallback && e.Inode != 0 && !e.Has(rdma.EvHasOwner) {
		smcOwner(e)
	}
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

// newEventSink makes trace's sink from -j/-o, --timestamp, -w - and
// --print; closeRec closes the OTLP sink and, once openRecording opened
// it, the recording.
func newEventSink(c *cli.Context, format string, stamp formats.Stamp) (sink *eventSink, closeRec func() error, err error) {
	sink, closeRec = &eventSink{}, func() error { return nil }
	w := c.String("write")
	switch {
	case c.Int("file-size") < 0 || c.Int("file-count") < 1:
		return nil, nil, usage(c, "-C and -W take a positive number")
	case w == "" && (c.IsSet("file-size") || c.IsSet("file-count") || c.Bool("print")):
		return nil, nil, usage(c, "-C, -W and --print go with -w FILE")
	case c.IsSet("file-count") && !c.IsSet("file-size"):
		return nil, nil, usage(c, "-W N keeps N files of -C MB: give -C too")
	case w == "-" && (c.Bool("print") || c.IsSet("file-size")):
		return nil, nil, usage(c, "-w - writes the recording to stdout: no --print or -C there")
	}
	if w == "" || c.Bool("print") {
		sink.print = formats.NewEventWriter(os.Stdout, format == outJSON)
		sink.print.Stamp = stamp
	}
	if w == "-" {
		sink.record = formats.NewEventWriter(os.Stdout, true)
	}
	if ep := c.String("otlp"); ep != "" {
		o, closeOTLP, err := openOTLP(c, ep)
		if err != nil {
			return nil, nil, err
		}
		closeFile := closeRec
		sink.otlp, closeRec = o, func() error { closeOTLP(); return closeFile() }
	}
	return sink, closeRec, nil
}

// openRecording starts -w FILE, once the tracer is attached: a run that
// fails before leaves an earlier recording as it was. The recording's
// closer runs after closeRec's.
func openRecording(c *cli.Context, sink *eventSink, closeRec *func() error) error {
	w := c.String("write")
	if w == "" || w == "-" {
		return nil
	}
	rw, err := createRecording(w, c.Int("file-size"), c.Int("file-count"))
	if err != nil {
		return err
	}
	sink.record = formats.NewEventWriter(rw, true)
	closeOther := *closeRec
	*closeRec = func() error { return errors.Join(closeOther(), rw.Close()) }
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
func readRecording(c *cli.Context, path string, f *filter.Events, sink *eventSink) error {
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

func runTrace(c *cli.Context) error {
	format, err := streamFormat(c)
	if err != nil {
		return err
	}
	if err := checkTracerFlags(c); err != nil {
		return err
	}
	if err := atLeast(c, "count", 0, "0 (no limit) or more"); err != nil {
		return err
	}
	stamp, err := formats.ParseStamp(c.String("timestamp"))
	if err != nil {
		return usage(c, "--timestamp: %w", err)
	}
	words, argv := splitCommand(c.Args().Slice())
	f, err := parseEvents(c, words, traceFilterKeys...)
	if err != nil {
		return usage(c, "%w", err)
	}
	sink, closeRec, err := newEventSink(c, format, stamp)
	if err != nil {
		return err
	}
	defer func() { closeRec() }() // openRecording adds the recording's close
	if path := c.String("read"); path != "" {
		if len(argv) > 0 || c.String("write") != "" {
			return usage(c, "-r reads a recording: no -w, no -- CMD")
		}
		return readRecording(c, path, f, sink)
	}
	sink.live = true // a port-busy event's holders are looked up as it arrives
	t, err := openTracer(c)
	if err != nil {
		return err
	}
	defer t.Close()
	if err := openRecording(c, sink, &closeRec); err != nil {
		return err
	}
	if p := c.String("cpuprofile"); p != "" {
		pf, err := safefile.Create(p, outputOwner())
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	var seen, shown uint64
	limit := uint64(c.Int("count"))

	// With a program, what exists already is not its: no snapshot.
	if !c.Bool("no-snapshot") && len(argv) == 0 {
		if err := snapshotEvents(t.Clock(), func(e *rdma.Event) {
			if f.Match(e) {
				_ = sink.write(e)
			}
		}); err != nil {
			fmt.Fprintf(os.Stderr, "rdmatrace: snapshot of existing resources: %v\n", err)
		}
		_ = sink.flush()
	}
	var raw *tracer.RawWriter
	if p := c.String("record-raw"); p != "" {
		// The records hold kernel addresses: for root's eyes only.
		rf, err := safefile.Create(p, nil)
		if err != nil {
			return err
		}
		defer rf.Close()
		raw = tracer.NewRawWriter(rf, t.Clock())
		defer raw.Flush()
	}
	// A signal or the end of --duration stops the tracer: it delivers
	// what is queued at that moment, then Run returns. Signals are caught
	// before the ready file tells a script it may send them.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var prog atomic.Pointer[launch.Program]
	defer onInterrupt(func(sig os.Signal) {
		if p := prog.Load(); p != nil {
			p.Forward(sig) // the program decides; its exit ends the trace
		} else {
			stop()
		}
	})()
	// The second line is the clock that turns the events' wall times back
	// into CLOCK_MONOTONIC (wall ns - monotonic ns), for programs that join
	// them with their own monotonic timestamps (rdmabench).
	if err := writeReadyFile(c, strconv.Itoa(os.Getpid())+"\nclock-offset "+strconv.FormatInt(t.Clock().Offset(), 10)+"\n"); err != nil {
		return err
	}
	var cmd *launch.Program
	var cmdErr error
	waited := make(chan struct{})
	owns := func(*rdma.Event) bool { return true }
	if len(argv) > 0 {
		if cmd, err = startProgram(c, argv); err != nil {
			return err
		}
		defer endProgram(cmd)
		prog.Store(cmd)
		owns = programOwns(cmd)
		go func() {
			cmdErr = cmd.Wait()
			// Its exit cleanup ran before the wait returned: read what is
			// queued, then stop.
			time.AfterFunc(200*time.Millisecond, stop)
			close(waited)
		}()
	}
	refreshFilter, kernelFilter := func() {}, false
	if !c.Bool("no-kernel-filter") {
		if refreshFilter, kernelFilter, err = pushFilters(t, f, cmd); err != nil {
			return err
		}
	}
	if d := c.Duration("duration"); d > 0 {
		end := stop
		if cmd != nil {
			end = func() { cmd.Stop(stopGrace) }
		}
		defer time.AfterFunc(d, end).Stop()
	}

	// Losses (drops, skipped or missed runs) are reported as soon as
	// they are seen.
	lw := &lossWatch{dropHint: "raise --ring-size or filter", before: func() { _ = sink.flush() }}
	checkDrops := func() { lw.check(t); refreshFilter() }
	err = t.Run(ctx, tracer.Consumer{
		Event: func(ev *rdma.Event) error {
			seen++
			if !f.Match(ev) || !owns(ev) {
				return nil
			}
			if err := sink.write(ev); err != nil {
				return err
			}
			if shown++; shown == limit {
				return errCountReached
			}
			return nil
		},
		Idle:  func() { _ = sink.flush() }, // about to wait: show what we have
		Tick:  checkDrops,
		Every: time.Second,
		Bad:   func(err error) { fmt.Fprintf(os.Stderr, "rdmatrace: %v\n", err) },
		Raw:   raw,
	})
	if errors.Is(err, errCountReached) {
		err = nil
	}
	if ferr := sink.flush(); err == nil {
		err = ferr
	}
	checkDrops()
	drops, _ := t.Drops()
	summary(t, seen, shown, drops)
	if n := t.Unread(); n > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: WARNING: %d events left unread in the ring buffer: the stop reads for at most %v\n", n, tracer.StopDrain)
	}
	if kernelFilter {
		n, _ := t.Filtered()
		fmt.Fprintf(os.Stderr, "rdmatrace: the kernel discarded %d events the filters exclude\n", n)
	}
	if err == nil && cmd != nil {
		<-waited
		if cmdErr != nil {
			if code := launch.ExitCode(cmdErr); code >= 0 {
				return exitWith(code, nil)
			}
			return cmdErr
		}
	}
	return err
}

// pushFilters hands the tracer the filters the kernel can check: a set of
// pids, the program's cgroup, the cgroups the cgroup, container and pod
// filters select (found again at each refresh: containers start). What
// they exclude then never reaches user space; user space still applies
// every filter.
func pushFilters(t *tracer.Tracer, f *filter.Events, prog *launch.Program) (refresh func(), on bool, err error) {
	refresh = func() {}
	if pids, ok := f.PIDs(4096); ok {
		if err := t.OnlyPIDs(pids); err != nil {
			return nil, false, err
		}
		on = true
	}
	switch {
	case prog != nil && programCgroup(prog) != 0:
		// The program's cgroup holds it and its children; a place filter
		// as well is left to user space.
		if err := t.OnlyCgroups([]uint64{programCgroup(prog)}); err != nil {
			return nil, false, err
		}
		on = true
	case f.HasPlace():
		selected, err := enrich.New(enrich.Options{}).CgroupSelector(f.MatchPlace)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rdmatrace: the cgroup, container and pod filters act in user space: %v\n", err)
			return refresh, on, nil
		}
		if err := t.OnlyCgroups(selected()); err != nil {
			// More cgroups than the map holds: user space filters alone.
			fmt.Fprintf(os.Stderr, "rdmatrace: the cgroup, container and pod filters act in user space: %v\n", err)
			return refresh, on, nil
		}
		warned := false
		refresh = func() {
			if err := t.OnlyCgroups(selected()); err != nil && !warned {
				warned = true
				fmt.Fprintf(os.Stderr, "rdmatrace: the kernel's cgroup filter is no longer updated (%v): events of new cgroups may be missed; --no-kernel-filter avoids it\n", err)
			}
		}
		on = true
	}
	return refresh, on, nil
}

// programOwns says whether an event's object is the program's or its
// children's: its owner was in the program's cgroup when it happened, or,
// without a cgroup, descends from the program now (from /proc).
func programOwns(p *launch.Program) func(*rdma.Event) bool {
	root := uint32(p.Cmd.Process.Pid)
	if cg := programCgroup(p); cg != 0 {
		return func(e *rdma.Event) bool { return e.Has(rdma.EvHasOwner) && e.OwnerCgroup == cg }
	}
	var procs proc.CommCache
	return func(e *rdma.Event) bool {
		for q, depth := e.Owner.PID, 0; e.Has(rdma.EvHasOwner) && q > 1 && depth < 32; q, depth = procs.ParentPID(q), depth+1 {
			if q == root {
				return true
			}
		}
		return false
	}
}

// errCountReached ends a trace at --count events.
var errCountReached = errors.New("--count reached")

// verboseFlag asks for each hook's attach report.
var verboseFlag = &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say how each hook was attached, or why it was not"}

// openTracer checks the system, loads and attaches the tracer as the flags
// say, and tells on stderr, in a line or two, what it could not attach
// (each hook's reason with -v).
func openTracer(c *cli.Context) (*tracer.Tracer, error) {
	fatal := false
	for _, p := range tracer.Preflight() {
		fmt.Fprintf(os.Stderr, "rdmatrace: %s\n", privilegeProblem(c, p.Msg))
		fatal = fatal || p.Fatal
	}
	// -v tries all the same, and shows each hook's reason: a way out if
	// the check is wrong about some kernel.
	if fatal && !c.Bool("verbose") {
		return nil, exitWith(1, nil)
	}
	// One goroutine reads one ring buffer: more Ps only add scheduler work
	// at each wakeup (measured: a quarter less CPU under TCG with 1).
	runtime.GOMAXPROCS(1)
	var follow []uint32
	for _, p := range c.IntSlice("follow-pid") {
		if p <= 0 {
			return nil, exitWith(2, fmt.Errorf("--follow-pid %d: expected a process ID", p))
		}
		follow = append(follow, uint32(p))
	}
	t, err := tracer.Open(tracer.Options{RingBytes: c.Int("ring-size"), Fallback: c.Bool("fallback"), Follow: follow, Poll: c.Duration("poll")})
	if err != nil {
		return nil, privilegeError(c, err)
	}
	attached := t.Attached()
	var skipped, absent []string
	noTracefs := false
	if k := t.Kprobes; !k.First && k.Why != "" && (c.Bool("verbose") || t.Preemption.Preemptible()) {
		fmt.Fprintf(os.Stderr, "rdmatrace: %s\n", k.Why)
	}
	for _, r := range t.Reports {
		switch {
		case r.Variant != "" && r.Preferred != "" && c.Bool("verbose"):
			fmt.Fprintf(os.Stderr, "rdmatrace: hook %s attached (%s; %s)\n", r.Hook, r.Variant, r.Preferred)
		case r.Variant != "" && c.Bool("verbose"):
			fmt.Fprintf(os.Stderr, "rdmatrace: hook %s attached (%s)\n", r.Hook, r.Variant)
		case r.Skipped && c.Bool("verbose"):
			fmt.Fprintf(os.Stderr, "rdmatrace: hook %s skipped: %s\n", r.Hook, r.Reason)
		case r.Variant == "" && c.Bool("verbose"):
			fmt.Fprintf(os.Stderr, "rdmatrace: hook %s not attached: %s\n", r.Hook, r.Reason)
		}
		if r.Skipped {
			absent = append(absent, r.Hook)
			continue
		}
		if r.Variant == "" {
			skipped = append(skipped, r.Hook)
			noTracefs = noTracefs || strings.Contains(r.Reason, "nor tracefs")
		}
	}
	if noTracefs {
		fmt.Fprintln(os.Stderr, "rdmatrace: tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing): hooks that fall back to kprobes need it")
	}
	why := ""
	if len(skipped) > 0 && !c.Bool("verbose") {
		why = " (-v says why)"
	}
	if attached == 0 {
		t.Close()
		return nil, fmt.Errorf("no hook could be attached%s", why)
	}
	choice := kprobeChoice(t)
	// Hooks in a module that is not loaded (smc) are not counted: there is
	// nothing of theirs to trace, and they are named at the end.
	if len(absent) > 0 {
		choice += "; not traced, module not loaded: " + strings.Join(absent, ", ")
	}
	total := len(t.Reports) - len(absent)
	if len(skipped) > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: %d of %d hooks attached%s; skipped: %s%s\n", attached, total, choice, strings.Join(skipped, ", "), why)
	} else {
		fmt.Fprintf(os.Stderr, "rdmatrace: %d of %d hooks attached%s\n", attached, total, choice)
	}
	return t, nil
}

// kprobeChoice tells, for the attach summary, which hooks use kprobes
// rather than their usual fentry/fexit, and why: "; kprobes for restrack
// and _ib_modify_qp hooks: preemptible kernel (lazy)".
func kprobeChoice(t *tracer.Tracer) string {
	var names []string
	for _, r := range t.Reports {
		if r.Preferred == "" {
			continue
		}
		n := r.Hook
		if strings.HasPrefix(n, "rdma_restrack_") {
			n = "restrack"
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	list := strings.Join(names, ", ")
	if i := strings.LastIndex(list, ", "); i >= 0 {
		list = list[:i] + " and " + list[i+2:]
	}
	return "; kprobes for " + list + " hooks: " + t.Kprobes.Why
}

// summary tells, on stderr, what was attached and what was seen.
func summary(t *tracer.Tracer, seen, shown, drops uint64) {
	var on, off []string
	for _, r := range t.Reports {
		if r.Variant != "" && r.Reason != "" {
			on = append(on, r.Hook+" ("+r.Variant+", as "+r.Reason+")")
		} else if r.Variant != "" {
			on = append(on, r.Hook+" ("+r.Variant+")")
		} else {
			off = append(off, r.Hook+": "+r.Reason)
		}
	}
	fmt.Fprintf(os.Stderr, "rdmatrace: hooks attached: %d: %s\n", len(on), strings.Join(on, ", "))
	if len(off) > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: hooks skipped: %d: %s\n", len(off), strings.Join(off, "; "))
	}
	fmt.Fprintf(os.Stderr, "rdmatrace: events: %d seen, %d shown, %d dropped\n", seen, shown, drops)
	busySummary(t, os.Stderr)
	missedSummary(t)
}

// snapshotEvents lists the resources that exist now as "exists" events:
// ours, and in exclusive netns mode those of the devices in every other
// network namespace too (the tracer sees their events; netlink shows them
// only from there).
func snapshotEvents(clock tracer.Clock, emit func(*rdma.Event)) error {
	proc.WarnPIDNamespace(os.Stderr)
	en := enrich.New(enrich.Options{})
	inv, err := nldev.TakeInventory(nldev.InventoryOptions{Owners: en, AllNetNS: true})
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	for i := range inv.Resources {
		e := tracer.ExistingEvent(&inv.Resources[i], now, en)
		emit(&e)
	}
	return inv.Err()
}
