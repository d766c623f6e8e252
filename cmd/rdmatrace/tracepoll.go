package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/snapdiff"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/nlmon"
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
	cl, err := nldev.Dial()
	if err != nil {
		// Neither way works: the BPF problem first, in the command's words.
		return exitWith(1, fmt.Errorf("%s; RDMA netlink cannot stand in: %v", privilegeProblem(c, reason), err))
	}
	defer cl.Close()
	sys, _ := cl.System()
	mon, monErr := nlmon.Join(sys.Monitor != nil && *sys.Monitor)
	what := fmt.Sprintf("device events from the kernel's monitor group as they come, resources compared every %v", interval)
	if monErr != nil {
		what = fmt.Sprintf("devices and resources compared every %v (the kernel's monitor group of device events came with Linux 6.12)", interval)
	}
	fmt.Fprintf(os.Stderr, "rdmatrace: no BPF: %s. Tracing through RDMA netlink instead: %s, events marked polled and timed by the dump that found them; %s\n",
		reason, what, netlinkNotSeen)
	if c.Bool("verbose") {
		fmt.Fprintf(os.Stderr, "rdmatrace: mode: netlink (monitor group: %s; a dump every %v)\n", monitorState(monErr), interval)
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
	p := &netlinkPoll{cl: cl, f: f, sink: sink, session: s, limit: uint64(c.Int("count")), en: en,
		diff: snapdiff.New(snapdiff.Options{Devices: mon == nil, Owner: en.Process})}
	// Joined first, dumped second: a device between the two is not missed.
	first := p.diff.Next(p.snapshot())
	if !c.Bool("no-snapshot") {
		p.emit(first)
	}
	_ = sink.flush()
	events, stop, done := make(chan rdma.Event, 256), make(chan struct{}), make(chan error, 1)
	if mon != nil {
		go func() {
			bad := func(err error) { fmt.Fprintf(os.Stderr, "rdmatrace: %v\n", err) }
			send := func(e *rdma.Event) {
				select {
				case events <- *e:
				case <-stop:
				}
			}
			if err := mon.Run(send, bad); err != nil {
				bad(err)
			}
		}()
	}
	go func() { done <- p.loop(interval, events, stop) }()
	var loopErr error
	err = s.Run(tracer.Loop{
		End: func() error {
			close(stop)
			loopErr = <-done
			if mon != nil {
				mon.Close()
			}
			return loopErr
		},
		Flush: sink.flush,
	})
	fmt.Fprintf(os.Stderr, "rdmatrace: %d dumps every %v, %d events shown\n", p.dumps, interval, p.shown)
	return err
}

// monitorState says whether trace reads the monitor group, or why not.
func monitorState(err error) string {
	if err == nil {
		return "joined"
	}
	return "not used: " + err.Error()
}

// netlinkPoll is the state of a trace without BPF.
type netlinkPoll struct {
	cl      *nldev.Client
	en      *enrich.Enricher
	diff    *snapdiff.Differ
	f       *filter.Events
	sink    *eventSink
	session *tracer.Session
	// limit is --count (0: none); shown the events written, dumps the
	// snapshots taken.
	limit, shown, dumps uint64
	// lastErr is the last dump's error, said once until it changes.
	lastErr string
	err     error // a write error, which ends the run
}

// loop writes the monitor's events as they come and each dump's
// differences, until stop.
func (p *netlinkPoll) loop(interval time.Duration, events <-chan rdma.Event, stop <-chan struct{}) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for p.err == nil {
		select {
		case <-stop:
			return nil
		case e := <-events:
			p.emit([]rdma.Event{e})
		case <-tick.C:
			p.emit(p.diff.Next(p.snapshot()))
		}
		if err := p.sink.flush(); err != nil && p.err == nil {
			p.err = err
		}
	}
	p.session.Stop()
	if errors.Is(p.err, errCountReached) {
		return nil
	}
	return p.err
}

// snapshot dumps every device and resource, owners named; a dump's error
// is said once, and its type compared no further until it lists again.
func (p *netlinkPoll) snapshot() *snapdiff.Snapshot {
	at := time.Now().UTC()
	inv := p.cl.Inventory(nldev.InventoryOptions{Owners: p.en})
	p.dumps++
	s := &snapdiff.Snapshot{Time: at, Devices: inv.Devices, DevicesOK: inv.DevicesErr == nil,
		Types: rdma.ResourceTypes, Resources: inv.Resources}
	for _, te := range inv.TypeErrs {
		s.Failed = append(s.Failed, te.Type)
	}
	msg := ""
	if err := inv.Partial(); err != nil {
		msg = err.Error()
	}
	if msg != p.lastErr && msg != "" {
		fmt.Fprintf(os.Stderr, "rdmatrace: netlink dump: %s\n", formats.Sanitize(msg))
	}
	p.lastErr = msg
	return s
}

// emit writes the events the filters keep, up to --count (then the
// session stops).
func (p *netlinkPoll) emit(evs []rdma.Event) {
	for i := range evs {
		if p.err != nil || (p.limit > 0 && p.shown >= p.limit) {
			return
		}
		if !p.f.Match(&evs[i]) {
			continue
		}
		if err := p.sink.write(&evs[i]); err != nil {
			p.err = err
			return
		}
		if p.shown++; p.shown == p.limit {
			p.err = errCountReached
		}
	}
}

// errCountReached ends a run at --count; it is no failure.
var errCountReached = errors.New("count reached")

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
