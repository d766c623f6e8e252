package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/nldev"
	"github.com/rdmatrace/rdmatrace/rdma"
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
			"   rdmatrace trace --duration 30s --no-snapshot > events.txt\n\n" +
			"EXIT STATUS:\n" + exitStatus("nothing could be attached, or the kernel cannot trace RDMA (the line says why)", "",
			"130  a second Ctrl-C (128 + the signal): exited at once"),
		ArgsUsage: "[TYPE] [FILTER VALUE]...",
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
			verboseFlag,
			&cli.BoolFlag{Name: "no-snapshot", Usage: "do not list the resources that exist at start"},
			&cli.IntSliceFlag{Name: "follow-pid", Usage: "also trace this process's off-CPU spells (sched_switch/sched_wakeup, who ran instead) and its ucma_get_event calls, and every process's time in the kernel functions behind verbs and rdma_cm steps (span events; repeatable)"},
			&cli.StringFlag{Name: "record-raw", Hidden: true, Usage: "also append every raw ring buffer record to `FILE` (test fixtures)"},
			&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a Go CPU profile of the run to `FILE`"},
		),
		Action: runTrace,
	}
}

// traceFilterKeys are trace's filter keys: all of filter.EventKeys.
var traceFilterKeys = []string{"pid", "comm", "dev", "res", "event"}

// eventSink writes events as NDJSON or human lines.
type eventSink struct{ ew *formats.EventWriter }

func (s *eventSink) write(e *rdma.Event) error { return s.ew.Write(e) }
func (s *eventSink) flush() error              { return s.ew.Flush() }

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
	f, err := parseEvents(c, positional(c), traceFilterKeys...)
	if err != nil {
		return usage(c, "%w", err)
	}
	t, err := openTracer(c)
	if err != nil {
		return err
	}
	defer t.Close()
	if p := c.String("cpuprofile"); p != "" {
		pf, err := os.Create(p)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	sink := &eventSink{ew: formats.NewEventWriter(os.Stdout, format == outJSON)}
	var seen, shown uint64
	limit := uint64(c.Int("count"))

	if !c.Bool("no-snapshot") {
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
		rf, err := createPrivate(p)
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
	defer onInterrupt(func(os.Signal) { stop() })()
	if p := c.String("ready-file"); p != "" {
		// The second line is the clock that turns the events' wall times
		// back into CLOCK_MONOTONIC (wall ns - monotonic ns), for programs
		// that join them with their own monotonic timestamps (rdmabench).
		ready := strconv.Itoa(os.Getpid()) + "\nclock-offset " + strconv.FormatInt(t.Clock().Offset(), 10) + "\n"
		if err := os.WriteFile(p, []byte(ready), 0o644); err != nil {
			return err
		}
	}
	if d := c.Duration("duration"); d > 0 {
		defer time.AfterFunc(d, stop).Stop()
	}

	// Losses (drops, skipped or missed runs) are reported as soon as
	// they are seen.
	lw := &lossWatch{dropHint: "raise --ring-size or filter", before: func() { _ = sink.flush() }}
	checkDrops := func() { lw.check(t) }
	err = t.Run(ctx, tracer.Consumer{
		Event: func(ev *rdma.Event) error {
			seen++
			if !f.Match(ev) {
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
	return err
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
		fmt.Fprintf(os.Stderr, "rdmatrace: %s\n", p.Msg)
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
	t, err := tracer.Open(tracer.Options{RingBytes: c.Int("ring-size"), Fallback: c.Bool("fallback"), Follow: follow})
	if err != nil {
		return nil, err
	}
	attached := t.Attached()
	var skipped []string
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
		case r.Variant == "" && c.Bool("verbose"):
			fmt.Fprintf(os.Stderr, "rdmatrace: hook %s not attached: %s\n", r.Hook, r.Reason)
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
	if len(skipped) > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: %d of %d hooks attached%s; skipped: %s%s\n", attached, len(t.Reports), choice, strings.Join(skipped, ", "), why)
	} else {
		fmt.Fprintf(os.Stderr, "rdmatrace: %d of %d hooks attached%s\n", attached, len(t.Reports), choice)
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
	missedSummary(t)
}

// snapshotEvents lists the resources that exist now as "exists" events.
func snapshotEvents(clock tracer.Clock, emit func(*rdma.Event)) error {
	cl, err := nldev.Dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	devs, err := cl.Devices()
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	var errs []error
	for _, typ := range rdma.ResourceTypes {
		rs, err := cl.Resources(typ, devs)
		if err != nil {
			errs = append(errs, err)
		}
		for i := range rs {
			e := tracer.ExistingEvent(&rs[i], now)
			emit(&e)
		}
	}
	return errors.Join(errs...)
}
