package trace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/lifecycle"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/source/nlpoll"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// NetlinkOptions are trace's without BPF: the interval between two dumps,
// whether --follow-pid was asked (it needs BPF), the command's words for
// missing privileges.
type NetlinkOptions struct {
	Poll      time.Duration
	Follow    bool
	NeedsRoot string
}

// runNetlink is trace without BPF: reason says why (one line on stderr
// with what is lost and what to do); then the first dump as "exists"
// events, the monitor group's device events as they come, and the
// differences between dumps every --poll as polled events, until a
// signal, --duration or --count (the run's lifecycle).
func runNetlink(o Options, sink Sink, x *enrich.Enricher, reason string) error {
	problem := func(msg string) string {
		if msg == tracer.ErrPrivileges.Error() {
			return o.Netlink.NeedsRoot
		}
		return msg
	}
	switch n := o.Netlink; {
	case o.NoFallback:
		return &tracer.ExitError{Code: 1, Err: fmt.Errorf("%s (--bpf: no fallback to RDMA netlink)", problem(reason))}
	case len(o.Argv) > 0 || n.Follow || o.RecordRaw != "":
		return &tracer.ExitError{Code: 1, Err: fmt.Errorf("no BPF (%s): -- CMD, --follow-pid and --record-raw need it", reason)}
	case n.Poll < nlpoll.MinInterval:
		return &UsageError{fmt.Errorf("--poll without BPF: at least %v (each poll dumps every resource)", nlpoll.MinInterval)}
	}
	proc.WarnPIDNamespace(os.Stderr)
	nl, err := nlpoll.Dial()
	if err != nil {
		// Neither way works: the BPF problem first, in the command's words.
		return &tracer.ExitError{Code: 1, Err: fmt.Errorf("%s; RDMA netlink cannot stand in: %v", problem(reason), err)}
	}
	defer nl.Close()
	for _, line := range nlpoll.Mode(nl.MonitorErr, o.Netlink.Poll, reason, o.Verbose) {
		logf("%s", line)
	}
	if err := o.attached(); err != nil {
		return err
	}
	p := nl.Poller(nlpoll.Options{Interval: o.Netlink.Poll, Keep: o.Filter.Match, Count: o.Count,
		Write: sink.Write, Flush: sink.Flush, Owner: x.Process,
		Warn: func(err error) { logf("%s", termsafe.Sanitize(err.Error())) },
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
