package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/lifecycle"
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

// netlinkOptions are trace's without BPF: the interval between two dumps,
// whether --follow-pid was asked (it needs BPF), the command's words for
// missing privileges.
type netlinkOptions struct {
	Poll      time.Duration
	Follow    bool
	NeedsRoot string
}

// traceNetlink is trace without BPF: reason says why (one line on stderr
// with what is lost and what to do); then the first dump as "exists"
// events, the monitor group's device events as they come, and the
// differences between dumps every --poll as polled events, until a
// signal, --duration or --count (the run's lifecycle).
func traceNetlink(o traceRun, sink *formats.EventTee, x *enrich.Enricher, reason string) error {
	problem := func(msg string) string {
		if msg == tracer.ErrPrivileges.Error() {
			return o.Netlink.NeedsRoot
		}
		return msg
	}
	switch n := o.Netlink; {
	case o.NoFallback:
		return exitWith(1, fmt.Errorf("%s (--bpf: no fallback to RDMA netlink)", problem(reason)))
	case len(o.Argv) > 0 || n.Follow || o.RecordRaw != "":
		return exitWith(1, fmt.Errorf("no BPF (%s): -- CMD, --follow-pid and --record-raw need it", reason))
	case n.Poll < minNetlinkPoll:
		return usagef("--poll without BPF: at least %v (each poll dumps every resource)", minNetlinkPoll)
	}
	proc.WarnPIDNamespace(os.Stderr)
	nl, err := nlpoll.Dial()
	if err != nil {
		// Neither way works: the BPF problem first, in the command's words.
		return exitWith(1, fmt.Errorf("%s; RDMA netlink cannot stand in: %v", problem(reason), err))
	}
	defer nl.Close()
	for _, line := range nlpoll.Mode(nl.MonitorErr, o.Netlink.Poll, reason, o.Verbose) {
		logf("%s", line)
	}
	if err := o.Out.openRecording(sink); err != nil {
		return err
	}
	p := nl.Poller(nlpoll.Options{Interval: o.Netlink.Poll, Keep: o.Filter.Match, Count: o.Count,
		Write: sink.Write, Flush: sink.Flush, Owner: x.Process,
		Warn: func(err error) { logf("%s", formats.Sanitize(err.Error())) },
	}, x)
	p.Start(o.Snapshot)
	run, err := lifecycle.Start(context.Background(), lifecycle.Options{Duration: o.Session.Duration, ReadyFile: o.Session.ReadyFile})
	if err != nil {
		return err
	}
	err = p.Run(run.Context().Done())
	err = errors.Join(err, run.End(), sink.Flush())
	logf("%d dumps every %v, %d events shown", p.Dumps(), o.Netlink.Poll, p.Shown())
	return err
}

// bpfFlag refuses the fallback: a caller that needs what only BPF sees
// (rdmabench's spans and off-CPU spells) gets the BPF problem as an error.
var bpfFlag = &cli.BoolFlag{Name: "bpf", Usage: "trace with BPF or fail, saying why: no fallback to RDMA netlink"}
