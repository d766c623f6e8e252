// Package trace is rdmatrace trace's use case: the tracer's events, or,
// where BPF cannot be used, RDMA netlink's, or a recording read back, each
// through the filter to the command's sink.
package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"

	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/onport"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/lifecycle"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// Options are what a trace does, as its flags say.
type Options struct {
	Filter     *filter.Events
	Argv       []string // -- CMD
	Read       string   // -r FILE: a recording instead of tracing
	MaxInput   int64
	Count      uint64
	Session    tracer.SessionOptions // the tracer's
	NoBPF      string                // why not to try BPF ("": where the kernel allows)
	NoFallback bool                  // --bpf
	Netlink    NetlinkOptions        // without BPF
	Snapshot   bool                  // what exists at start, as "exists" events
	RecordRaw  string                // --record-raw's file
	CPUProfile string
	Verbose    bool
	// Owner is who the files made for the user belong to (nil: root,
	// when not run through sudo).
	Owner *safefile.Owner
	// Attached opens what waits for the tracer (or the netlink poller) to
	// start: -w FILE, so that a run that fails before leaves an earlier
	// recording as it was.
	Attached func() error
}

// Sink is where a trace's events go.
type Sink interface {
	Write(*rdma.Event) error
	Flush() error
}

// UsageError is a choice of the command line found wrong only once the
// run has begun (--poll too short for netlink once BPF is out): the
// command says it as its usage error.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// BPFDenied is why trace goes on through netlink when the kernel refused
// its programs.
const BPFDenied = "the kernel refused to load BPF programs (seccomp, an LSM or kernel.unprivileged_bpf_disabled may forbid them to this process): run rdmatrace as root outside such a confinement"

// Run is the use case: a recording read back (-r), or the tracer's
// events, or, where BPF cannot be used, RDMA netlink's; each through the
// filter to the sink.
func Run(o Options, sink Sink) error {
	if o.Read != "" {
		return Read(o.Read, o.MaxInput, o.Count, o.Filter, sink)
	}
	// One enricher for the run: the start snapshot's owners, the
	// tracer's (or the polls') and the port lookups' are named by it.
	x := enrich.New(enrich.Options{SMCOwners: true})
	if reason := o.noBPF(); reason != "" {
		return runNetlink(o, sink, x, reason)
	}
	o.Session.Tracer.Enrich = enrichment(x)
	s, err := tracer.NewSession(o.Session)
	if tracer.BPFDenied(err) {
		return runNetlink(o, sink, x, BPFDenied)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	if o.Verbose {
		slog.Info("mode: BPF")
	}
	if err := o.attached(); err != nil {
		return err
	}
	defer startProfile(o.CPUProfile, o.Owner)()
	if o.Snapshot && !existingTo(x, o.Filter, sink) {
		return nil
	}
	raw, closeRaw, err := openRaw(o.RecordRaw, o.Owner, s.Clock())
	if err != nil {
		return err
	}
	defer closeRaw()
	return s.Run(tracer.Loop{
		// Tick flushes too: the human view holds an rdma_cm handler's line
		// for its done a moment, and shows it alone past that moment.
		Consumer: tracer.Consumer{Event: sink.Write, Idle: func() { _ = sink.Flush() }, Tick: func() { _ = sink.Flush() }, Raw: raw},
		Flush:    sink.Flush,
	})
}

func (o Options) attached() error {
	if o.Attached == nil {
		return nil
	}
	return o.Attached()
}

// noBPF says why trace goes without BPF, or "" to try it: --netlink, or
// what the preflight finds missing that netlink can stand in for.
func (o Options) noBPF() string {
	if o.NoBPF != "" {
		return o.NoBPF
	}
	return tracer.NoBPF(o.Session.Tracer.BTF)
}

// enrichment is the run's enrichment of the tracer's events: the owner,
// then a port-busy event's holders and what lives on a port whose state
// changed, named as the event arrives, before they let go; the port's
// objects' owners are named by the same enricher.
func enrichment(x *enrich.Enricher) enrich.Events {
	onPort := onport.NewLookup()
	onPort.Owners = x
	return x.Then(enrich.PortHolders(ports.NewHolderLookup().Names), enrich.PortObjects(onPort.Names))
}

// maxSnapshotShown bounds trace's start snapshot: past it, a line says
// how many objects the kernel lists (rdmatrace res and ps list them all).
const maxSnapshotShown = 10000

// existingTo writes the resources that exist now, as f keeps them, at
// most maxSnapshotShown. A SIGINT or SIGTERM stops it, and the run
// (false): the run's lifecycle catches signals only once it starts.
func existingTo(x *enrich.Enricher, f *filter.Events, sink Sink) bool {
	proc.WarnPIDNamespace(os.Stderr)
	var sum nldev.ExistsSummary
	stopped, err := lifecycle.Interruptible(func(ctx context.Context) (err error) {
		sum, err = nldev.ExistsEvents(ctx, x, nldev.ExistsOptions{Max: maxSnapshotShown,
			Keep: func(e *rdma.Event) bool { return f.Match(e) && sink.Write(e) == nil }})
		return err
	})
	_ = sink.Flush()
	switch {
	case stopped:
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
func startProfile(path string, owner *safefile.Owner) func() {
	if path == "" {
		return func() {}
	}
	pf, err := safefile.Create(path, owner)
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
func openRaw(path string, owner *safefile.Owner, clock tracer.Clock) (*tracer.RawWriter, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	// The records hold kernel addresses: for root's eyes only, so not a
	// file for the user who ran sudo, nor one root makes where that user
	// asks.
	if owner != nil {
		return nil, nil, &tracer.ExitError{Code: 1, Err: errors.New("--record-raw: the raw records hold kernel addresses and are root's alone: run rdmatrace as root itself, not through sudo (SUDO_UID is set)")}
	}
	rf, err := safefile.Create(path, nil)
	if err != nil {
		return nil, nil, err
	}
	raw := tracer.NewRawWriter(rf, clock)
	return raw, func() { raw.Flush(); rf.Close() }, nil
}

// logf says a sentence on stderr, through slog's handler (the command's:
// "rdmatrace: " and escapes).
func logf(format string, a ...any) { slog.Info(fmt.Sprintf(format, a...)) }
