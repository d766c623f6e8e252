package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Options are an exporter's run: where it serves, what it reads, and the
// tracer it keeps running. The command fills them from its flags.
type Options struct {
	// Listen is the metrics' address: HOST:PORT, or unix:PATH (Listen).
	Listen string
	// ProbeListen, when set, serves /healthz and /readyz alone there too
	// (ServeProbes), out of reach of a flood of Listen.
	ProbeListen string
	// Top is how many owners per device and type have series of their own.
	Top int
	// Serve bounds the HTTP server (Log, Ready and Gather are set by Run).
	Serve ServeOptions
	// Ready is told, once the exporter serves and has tried the tracer
	// once, the address it serves on (HOST:PORT, unix:PATH): the run's
	// ready file (lifecycle's Run.MarkReady). Its error ends the run.
	Ready func(addr string) error
	// Version and Revision label rdmatrace_build_info.
	Version, Revision string
	// Source reads the kernel's state at each scrape.
	Source Source
	// Tracer, when set, is started, retried while it cannot start, and
	// fed to the counters; nil serves what Source reads alone.
	Tracer *TracerPart
	// UIDOf finds a failing owner's uid (rdma_failures_total's uid
	// label); nil: not known.
	UIDOf func(pid uint32) (uint32, bool)
	// Also gets each traced event, and each of the start snapshot's, after
	// the counters (--otlp: its identity records begin with the QPs that
	// exist).
	Also func(*rdma.Event)
	// Collectors are served beside the exporter's metrics (--otlp's
	// delivery counts).
	Collectors []prometheus.Collector
	// Stderr gets the exporter's lines (os.Stderr when nil).
	Stderr io.Writer
}

// TracerPart is how Run starts the tracer: the command's, in the tracer's
// and netlink's terms.
type TracerPart struct {
	// Start loads and attaches the tracer; its error says why it cannot
	// start, in the preflight's and the loader's words.
	Start func() (Tracer, error)
	// Snapshot gives emit an event for each object that exists now (the
	// owners the live table names when a device's unregistration blocks;
	// Options.Also gets them too),
	// at most LiveTableSize (the table keeps no more), until ctx ends.
	Snapshot func(ctx context.Context, emit func(*rdma.Event)) error
	// Probe is a cheap look at what Start depends on (Retry.Probe).
	Probe func() string
}

// Tracer is a started tracer as Run uses it.
type Tracer interface {
	// Run hands each event to consume until Stop.
	Run(consume func(*rdma.Event) error) error
	Stop()
	Close() error
	// Health is what rdmatrace_hooks and the loss counters serve.
	Health() (attached, failed int, counts TracerCounts)
}

// Run serves the metrics until ctx ends (SIGTERM, SIGINT), keeping the
// tracer running beside them when there is one. Every step of its start
// (the tracer's load, the snapshot of what exists) gives way to ctx.
func Run(ctx context.Context, o Options) error {
	stderr := o.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	logs := ratelog.New(stderr, 10*time.Second)
	say := func(msg string) { fmt.Fprintln(stderr, "rdmatrace: "+termsafe.Sanitize(msg)) }
	x := New(o.Source, o.Top)
	x.LogTo(logs)
	x.SetUIDs(o.UIDOf)
	tm := NewTracerMetrics()
	var parts []string
	if o.Tracer != nil {
		parts = append(parts, PartTracer)
	}
	health := NewHealth(o.Version, o.Revision, parts...)
	x.SetHealth(health)
	reg := prometheus.NewRegistry()
	if err := x.Register(reg); err != nil {
		return err
	}
	for _, c := range append([]prometheus.Collector{tm}, o.Collectors...) {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	ln, err := Listen(o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (--listen sets another address)", o.Listen, err)
	}
	defer ln.Close()
	var pln net.Listener
	if o.ProbeListen != "" {
		if pln, err = Listen(o.ProbeListen); err != nil {
			return fmt.Errorf("listen on %s: %w (--web.probe-listen sets another address)", o.ProbeListen, err)
		}
		defer pln.Close()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := &readiness{tell: o.Ready, addr: served(ln), cancel: cancel}
	so := o.Serve
	so.Log, so.Ready, so.Gather = logs, ready.check, x.Gatherer(reg)
	srv := NewServer(reg, so)
	ended := make(chan error, 2)
	go func() { ended <- srv.Serve(ln); cancel() }()
	if pln != nil {
		go func() { ended <- srv.ServeProbes(pln); cancel() }()
		say("serving /healthz and /readyz on " + served(pln) + " too")
	}
	if o.Serve.WebConfigFile != "" {
		say(fmt.Sprintf("serving metrics on %s/metrics as %s says (TLS, basic auth)", served(ln), o.Serve.WebConfigFile))
	} else {
		say("serving metrics on http://" + served(ln) + "/metrics")
	}
	if o.Tracer != nil {
		feed := func(e *rdma.Event) error {
			x.Event(e)
			if o.Also != nil {
				o.Also(e)
			}
			return nil
		}
		(&Retry{
			Part:   PartTracer,
			Health: health,
			Start: func(ctx context.Context) (func() error, func(), error) {
				return startTracer(ctx, o.Tracer, x, tm, feed, say)
			},
			Probe:     o.Tracer.Probe,
			Log:       say,
			Attempted: ready.mark,
		}).Run(ctx)
	} else {
		ready.mark()
		<-ctx.Done()
	}
	select {
	case err := <-ended: // a server ended by itself
		return errors.Join(ready.err, err)
	default:
	}
	shut, cancelShut := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelShut()
	return errors.Join(ready.err, srv.Shutdown(shut))
}

// served is how the exporter's address is said: HOST:PORT, or
// unix:PATH.
func served(ln net.Listener) string {
	if ln.Addr().Network() == "unix" {
		return "unix:" + ln.Addr().String()
	}
	return ln.Addr().String()
}

// startTracer starts the tracer, serves its health, and feeds the live
// table the snapshot of what exists; its run feeds the events until
// stopped. A ctx that ends during the snapshot stops the start.
func startTracer(ctx context.Context, p *TracerPart, x *Exporter, tm *TracerMetrics, feed func(*rdma.Event) error, say func(string)) (run func() error, stop func(), err error) {
	t, err := p.Start()
	if err != nil {
		return nil, nil, err
	}
	attached, failed, counts := t.Health()
	tm.Attach(attached, failed, counts)
	// Owners come placed in their containers: the snapshot and the
	// tracer place them.
	if p.Snapshot != nil {
		if err := p.Snapshot(ctx, func(e *rdma.Event) { _ = feed(e) }); err != nil {
			if ctx.Err() != nil {
				tm.Detach()
				return nil, nil, errors.Join(ctx.Err(), t.Close())
			}
			say("snapshot of existing resources: " + err.Error())
		}
	}
	return func() error {
		err := t.Run(feed)
		tm.Detach() // before the close: no scrape reads a closed tracer
		return errors.Join(err, t.Close())
	}, t.Stop, nil
}

// readiness is /readyz's answer and the ready file's moment: ready once
// the tracer was tried (or is not to be); the file's first line is the
// address served on, which scripts read whole.
type readiness struct {
	ready  atomic.Bool
	tell   func(addr string) error
	addr   string
	cancel func() // ends the run when the file cannot be written
	err    error
}

func (r *readiness) check() error {
	if !r.ready.Load() {
		return errors.New("the tracer's first start is under way")
	}
	return nil
}

func (r *readiness) mark() {
	r.ready.Store(true)
	if r.tell == nil {
		return
	}
	if err := r.tell(r.addr); err != nil {
		r.err = err
		r.cancel()
	}
}
