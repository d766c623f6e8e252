package top

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/lifecycle"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/nlpoll"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// A View shows a top's frames: a full screen, or tables one after the
// other (internal/view/topview).
type View interface {
	Show(*Frame) error
	// Close ends the view: a full screen gives the terminal back.
	Close() error
}

// Options are a top's choices, as its command's flags say.
type Options struct {
	By        By
	MaxOwners int // 0: DefaultMaxOwners
	// Delay is the time between two frames; Iterations ends the run
	// after that many (0: until stopped, q or a signal).
	Delay      time.Duration
	Iterations int
	// Session is the tracer's; NoBPF says why not to try it ("": where
	// the kernel allows), and then RDMA netlink's dumps stand in.
	Session tracer.SessionOptions
	NoBPF   string
	// MinPoll is the shortest time between two netlink dumps.
	MinPoll time.Duration
	// FullScreen: the view holds the terminal while it runs, so the
	// source's lines go into the frames' notes, and, once the terminal is
	// given back, to stderr.
	FullScreen bool
	// Open opens the view once the source runs: stop ends the run (the
	// view's quit key).
	Open func(stop func()) (View, error)
	// Stderr gets the run's lines (os.Stderr when nil).
	Stderr io.Writer
	// Keep selects the objects counted (nil: all): --job, --pod.
	Keep func(*rdma.Event) bool
}

// keep is o.Keep, or one that keeps everything.
func (o Options) keep() func(*rdma.Event) bool {
	if o.Keep == nil {
		return func(*rdma.Event) bool { return true }
	}
	return o.Keep
}

// Run is `rdmatrace top`: the tracer's events where BPF can run, else
// RDMA netlink's dumps compared every Delay; each Delay a frame to the
// view, until Iterations, a stop of the view's, or a signal.
func Run(o Options) error {
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if f, ok := o.Stderr.(*os.File); ok {
		proc.WarnPIDNamespace(f) // before a full screen takes the terminal
	}
	out := &noteWriter{to: o.Stderr}
	o.Stderr = out
	x := enrich.New(enrich.Options{})
	reason := o.NoBPF
	if reason == "" {
		reason = tracer.NoBPF(o.Session.Tracer.BTF)
	}
	if reason != "" {
		return runNetlink(o, out, x, reason)
	}
	o.Session.Tracer.Enrich = x
	o.Session.Stderr = out
	o.Session.Keep = o.Keep
	s, err := tracer.NewSession(o.Session)
	if tracer.BPFDenied(err) {
		return runNetlink(o, out, x, "the kernel refused to load BPF programs (seccomp, an LSM or kernel.unprivileged_bpf_disabled may forbid them to this process)")
	}
	if err != nil {
		return err
	}
	defer s.Close()
	a := New(o.By, o.MaxOwners, 0)
	stopped, err := lifecycle.Interruptible(func(ctx context.Context) error {
		_, err := nldev.ExistsEvents(ctx, x, nldev.ExistsOptions{Keep: func(e *rdma.Event) bool {
			if o.keep()(e) {
				a.Add(e)
			}
			return true
		}})
		return err
	})
	switch {
	case stopped:
		fmt.Fprintln(out, "rdmatrace: stopped while listing the objects that exist now")
		return nil
	case err != nil:
		fmt.Fprintf(out, "rdmatrace: the objects that exist now could not all be listed (their destroys are counted, their live counts are not): %v\n", err)
	}
	src := Source{BPF: true, Hooks: s.Tracer().Attached()}
	fr, err := newFramer(o, out, a, src, s.Stop)
	if err != nil {
		return err
	}
	fr.drops = func() (uint64, bool) {
		n, err := s.Tracer().Drops()
		return n, err == nil
	}
	err = s.Run(tracer.Loop{Consumer: tracer.Consumer{
		Event: func(e *rdma.Event) error { a.Add(e); return nil },
		Tick:  fr.tick, Every: o.Delay,
	}})
	return errors.Join(err, fr.close())
}

// runNetlink is top without BPF: reason says why (a line on stderr with
// what is not seen); RDMA netlink's dumps every Delay stand in.
func runNetlink(o Options, out *noteWriter, x *enrich.Enricher, reason string) error {
	poll := max(o.Delay, o.MinPoll)
	nl, err := nlpoll.Dial()
	if err != nil {
		return &lifecycle.ExitError{Code: 1, Err: fmt.Errorf("%s; RDMA netlink cannot stand in: %v", reason, err)}
	}
	defer nl.Close()
	fmt.Fprintf(out, "rdmatrace: no BPF: %s. Counting through RDMA netlink instead, its resources compared every %v: rdma_cm events (connects, their failures) and what lives between two dumps are not seen\n", reason, poll)
	a := New(o.By, o.MaxOwners, 0)
	run, err := lifecycle.Start(context.Background(), lifecycle.Options{Duration: o.Session.Duration, ReadyFile: o.Session.ReadyFile, Stderr: out})
	if err != nil {
		return err
	}
	fr, err := newFramer(o, out, a, Source{Poll: poll, Monitor: nl.Monitor != nil, Why: reason}, run.Stop)
	if err != nil {
		_ = run.End()
		return err
	}
	fr.ports = nl.Client
	p := nl.Poller(nlpoll.Options{Interval: poll, Owner: x.Process, Keep: o.Keep,
		Write: func(e *rdma.Event) error { a.Add(e); return nil },
		// A dump's differences come in one batch, then Flush: a frame
		// when one is due.
		Flush: func() error {
			if time.Since(fr.lastAt) >= o.Delay-o.Delay/10 {
				fr.tick()
			}
			return nil
		},
		Warn: func(err error) { fmt.Fprintf(out, "rdmatrace: %v\n", err) },
	}, x)
	p.Start(true)
	err = p.Run(run.Context().Done())
	return errors.Join(err, fr.close(), run.End())
}

// framer takes a frame every Delay and shows it, with the ports' state,
// the drops and the source's lines.
type framer struct {
	o      Options
	a      *Aggregator
	src    Source
	view   View
	out    *noteWriter
	ports  *nldev.Client // nil: dialled at the first frame
	drops  func() (uint64, bool)
	stop   func()
	shown  int
	lastAt time.Time
}

func newFramer(o Options, out *noteWriter, a *Aggregator, src Source, stop func()) (*framer, error) {
	v, err := o.Open(stop)
	if err != nil {
		return nil, err
	}
	if o.FullScreen {
		out.hold()
	}
	f := &framer{o: o, a: a, src: src, view: v, out: out, stop: stop, lastAt: time.Now()}
	a.Start(f.lastAt)
	return f, nil
}

// tick shows a frame; after Iterations it stops the run.
func (f *framer) tick() {
	if f.o.Iterations > 0 && f.shown >= f.o.Iterations {
		return
	}
	now := time.Now()
	fr := f.a.Frame(now)
	f.lastAt = now
	fr.Source, fr.MaxOwners = f.src, f.a.maxOwners
	if f.drops != nil {
		fr.Drops, fr.DropsKnown = f.drops()
	}
	fr.Ports, fr.PortsErr = f.listPorts()
	fr.Notes = f.out.take()
	if err := f.view.Show(fr); err != nil {
		fmt.Fprintf(f.out, "rdmatrace: %v\n", err)
		f.stop()
	}
	if f.shown++; f.o.Iterations > 0 && f.shown >= f.o.Iterations {
		f.stop()
	}
}

// listPorts lists the ports and their state now.
func (f *framer) listPorts() ([]rdma.Port, string) {
	if f.ports == nil {
		c, err := nldev.Dial()
		if err != nil {
			return nil, err.Error()
		}
		f.ports = c
	}
	devs, err := f.ports.Devices()
	if err != nil {
		return nil, err.Error()
	}
	ps, err := f.ports.Ports(devs)
	if err != nil {
		return ps, err.Error()
	}
	return ps, ""
}

// close ends the view, then says on stderr what the source said while
// the view held the terminal.
func (f *framer) close() error {
	err := f.view.Close()
	f.out.release()
	if f.ports != nil && f.src.BPF {
		_ = f.ports.Close()
	}
	return err
}

// noteWriter passes the run's lines to stderr, or, while a full screen
// holds the terminal, keeps them: for the frames' notes, and for stderr
// once the terminal is back (at most maxHeld lines; the rest counted).
type noteWriter struct {
	to io.Writer

	mu      sync.Mutex
	held    bool
	partial []byte
	lines   []string // since the last frame
	kept    []string // since hold
	dropped int
}

const maxHeld = 1000

func (w *noteWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.held {
		return w.to.Write(p)
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
		if line == "" {
			continue
		}
		w.lines = append(w.lines, line)
		if len(w.kept) < maxHeld {
			w.kept = append(w.kept, line)
		} else {
			w.dropped++
		}
	}
	return len(p), nil
}

func (w *noteWriter) hold() {
	w.mu.Lock()
	w.held = true
	w.mu.Unlock()
}

// take returns the lines since the last call.
func (w *noteWriter) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.lines
	w.lines = nil
	return l
}

// release writes the kept lines to stderr, and passes the next ones on.
func (w *noteWriter) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.held {
		return
	}
	w.held = false
	for _, l := range w.kept {
		fmt.Fprintln(w.to, l)
	}
	if w.dropped > 0 {
		fmt.Fprintf(w.to, "rdmatrace: and %d more lines\n", w.dropped)
	}
	if len(w.partial) > 0 {
		_, _ = w.to.Write(w.partial)
	}
	w.kept, w.partial, w.dropped = nil, nil, 0
}
