package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/source/nlpoll"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// netlinkFlag makes trace use no BPF at all.
var netlinkFlag = &cli.BoolFlag{Name: "netlink", Usage: "trace without BPF, through RDMA netlink alone (what trace does by itself where BPF cannot be used): device events from the kernel's monitor group, resources compared every --poll (1s unless given)"}

// Without BPF: the default interval between two dumps, and the shortest
// allowed (each dump lists every resource of every device).
const (
	defaultNetlinkPoll = time.Second
	minNetlinkPoll     = 100 * time.Millisecond
)

// netlinkNotSeen is what trace without BPF cannot see.
const netlinkNotSeen = "rdma_cm events, spans, off-CPU spells, port conflicts, SMC events, and objects created and destroyed (or changed and changed back) between two dumps are not seen"

// traceNetlink is trace without BPF: reason says why (one line on stderr
// with what is lost and what to do); then the first dump as "exists"
// events, the monitor group's device events as they come, and the
// differences between dumps every --poll as polled events, until a
// signal, --duration or --count.
func traceNetlink(c *cli.Context, f *filter.Events, sink *eventSink, argv []string, reason string) error {
	if c.Bool("bpf") {
		return exitWith(1, fmt.Errorf("%s (--bpf: no fallback to RDMA netlink)", privilegeProblem(c, reason)))
	}
	if len(argv) > 0 || len(c.IntSlice("follow-pid")) > 0 || c.String("record-raw") != "" {
		return exitWith(1, fmt.Errorf("no BPF (%s): -- CMD, --follow-pid and --record-raw need it", reason))
	}
	interval := defaultNetlinkPoll
	if c.IsSet("poll") {
		interval = c.Duration("poll")
	}
	if interval < minNetlinkPoll {
		return usage(c, "--poll without BPF: at least %v (each poll dumps every resource)", minNetlinkPoll)
	}
	proc.WarnPIDNamespace(os.Stderr)
	nl, err := nlpoll.Dial()
	if err != nil {
		// Neither way works: the BPF problem first, in the command's words.
		return exitWith(1, fmt.Errorf("%s; RDMA netlink cannot stand in: %v", privilegeProblem(c, reason), err))
	}
	defer nl.Close()
	what := fmt.Sprintf("device events from the kernel's monitor group as they come, resources compared every %v", interval)
	if nl.MonitorErr != nil {
		what = fmt.Sprintf("devices and resources compared every %v (the kernel's monitor group of device events came with Linux 6.12)", interval)
	}
	fmt.Fprintf(os.Stderr, "rdmatrace: no BPF: %s. Tracing through RDMA netlink instead: %s, events marked polled and timed by the dump that found them; %s\n",
		reason, what, netlinkNotSeen)
	if c.Bool("verbose") {
		fmt.Fprintf(os.Stderr, "rdmatrace: mode: netlink (monitor group: %s; a dump every %v)\n", monitorState(nl.MonitorErr), interval)
	}
	s, err := tracer.NewSession(tracer.SessionOptions{NoTrace: true, Duration: c.Duration("duration"), ReadyFile: c.String("ready-file")})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := sink.openRecording(c); err != nil {
		return err
	}
	en := enrich.New(enrich.Options{})
	p := nl.Poller(nlpoll.Options{Interval: interval, Keep: f.Match, Count: uint64(c.Int("count")),
		Write: sink.write, Flush: sink.flush, Owner: en.Process,
		Warn: func(err error) { fmt.Fprintln(os.Stderr, "rdmatrace: "+formats.Sanitize(err.Error())) },
	}, en)
	p.Start(!c.Bool("no-snapshot"))
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- p.Run(stop); s.Stop() }()
	err = s.Run(tracer.Loop{
		End:   func() error { close(stop); return <-done },
		Flush: sink.flush,
	})
	fmt.Fprintf(os.Stderr, "rdmatrace: %d dumps every %v, %d events shown\n", p.Dumps(), interval, p.Shown())
	return err
}

// monitorState says whether trace reads the monitor group, or why not.
func monitorState(err error) string {
	if err == nil {
		return "joined"
	}
	return "not used: " + err.Error()
}

// bpfFlag refuses the fallback: a caller that needs what only BPF sees
// (rdmabench's spans and off-CPU spells) gets the BPF problem as an error.
var bpfFlag = &cli.BoolFlag{Name: "bpf", Usage: "trace with BPF or fail, saying why: no fallback to RDMA netlink"}

// noBPFReason says why trace goes without BPF, or "" to try it: --netlink,
// or what the preflight finds missing that netlink can stand in for.
func noBPFReason(c *cli.Context, given *tracer.KernelBTF) string {
	if c.Bool("netlink") {
		return "--netlink asked for none (without it, trace loads BPF where it can)"
	}
	return tracer.NoBPF(given)
}
