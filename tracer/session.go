package tracer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/host/launch"
	"github.com/rdmatrace/rdmatrace/internal/host/lifecycle"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// A Session is one run of the tracer as a command makes it (trace, leaks,
// the exporter): the preflight, the load and the attach report, the
// signals, the ready file, the program of -- CMD, the kernel filters,
// --duration and --count, the loop over the ring buffer and the report of
// what was seen and lost. The command gives it a Loop and gets back an
// exit status.
//
//	s, err := tracer.NewSession(opts) // checks, loads, attaches, says what did not
//	defer s.Close()
//	... the snapshot of what exists, with s.Clock() ...
//	err = s.Run(loop)                 // until a signal, --duration, --count or the program's exit
type Session struct {
	o      SessionOptions
	t      *Tracer
	ctx    context.Context
	stop   context.CancelFunc
	stderr io.Writer
	// seen and shown are the events read and the events Keep kept.
	seen, shown  uint64
	kernelFilter bool
}

// SessionOptions are a command's choices for its session.
type SessionOptions struct {
	// NeedsRoot is the command's own words, by its name, for a user who
	// lacks the privileges (ErrPrivileges).
	NeedsRoot string
	// Tracer are the tracer's options.
	Tracer Options
	// Verbose says how each hook was attached or why not, and tries to
	// load even when the preflight finds a fatal problem.
	Verbose bool

	// Argv is -- CMD; User who runs it (launch.ChooseUser).
	Argv []string
	User *launch.Identity
	// OnlyProgram keeps only the events of the program's objects (trace);
	// without it every event goes to the Loop (leaks decides by
	// Loop.Program).
	OnlyProgram bool

	// Duration ends the run (stops the program, when there is one);
	// Count ends it after that many events kept (0: no limit).
	Duration time.Duration
	Count    uint64

	// ReadyFile is created once every available hook is attached and the
	// signals are caught. Its one format: a first line that says how to
	// reach this rdmatrace (Handle; its PID when empty), then a
	// "key value" line per fact: "clock-offset NS" (wall minus
	// CLOCK_MONOTONIC ns, to join the events' times with a program's
	// monotonic ones) when ReadyClock is set and a tracer is loaded.
	ReadyFile  string
	Handle     string
	ReadyClock bool

	// Keep is the user-space filter (nil keeps every event); Kernel, when
	// set, is pushed to the kernel as far as it can be (pids, cgroups).
	Keep   func(*rdma.Event) bool
	Kernel KernelFilter
	// DropHint says what to do about a full ring buffer in the live
	// warnings; without one, losses are said at the end only.
	DropHint string
	// Stderr gets the session's lines (os.Stderr when nil).
	Stderr io.Writer
}

// Loop is what a command does with a session's events.
type Loop struct {
	// Consumer gets each kept event; its Tick and Idle as Run says, Bad
	// (a line on stderr when nil) each record that does not decode.
	Consumer
	// Flush writes out what the command buffered: before a loss warning
	// and at the end.
	Flush func() error
	// End runs once the events are read and the program has exited,
	// before the summary: the moment for a final report.
	End func() error
	// Program, when set, is told the program's pid and cgroup id (0: none)
	// once it runs.
	Program func(pid uint32, cgroup uint64)
}

// ExitError ends a command with an exit status (lifecycle.ExitError).
type ExitError = lifecycle.ExitError

// errCount ends a run at Count events.
var errCount = errors.New("count reached")

// NewSession checks the system, loads and attaches the tracer, and tells
// on stderr, in a line, how many hooks attached (each hook's report with
// Verbose).
func NewSession(o SessionOptions) (*Session, error) {
	s := &Session{o: o, stderr: o.Stderr}
	if s.stderr == nil {
		s.stderr = os.Stderr
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	fatal := false
	for _, p := range Preflight(o.Tracer.BTF) {
		msg := p.Msg
		if msg == ErrPrivileges.Error() && o.NeedsRoot != "" {
			msg = o.NeedsRoot
		}
		fmt.Fprintf(s.stderr, "rdmatrace: %s\n", msg)
		fatal = fatal || p.Fatal
	}
	// -v tries all the same, and shows each hook's reason: a way out if
	// the check is wrong about some kernel.
	if fatal && !o.Verbose {
		return nil, &ExitError{Code: 1}
	}
	// One goroutine reads one ring buffer: more Ps only add scheduler work
	// at each wakeup (measured: a quarter less CPU under TCG with 1).
	runtime.GOMAXPROCS(1)
	t, err := Open(o.Tracer)
	if errors.Is(err, ErrPrivileges) && o.NeedsRoot != "" {
		return nil, &ExitError{Code: 1, Err: errors.New(o.NeedsRoot)}
	}
	if err != nil {
		return nil, err
	}
	if err := attachReport(t, o.Verbose, s.stderr); err != nil {
		t.Close()
		if errors.Is(err, ErrPrivileges) && o.NeedsRoot != "" {
			return nil, &ExitError{Code: 1, Err: errors.New(o.NeedsRoot)}
		}
		return nil, err
	}
	stacksAttached(t, o.Verbose, s.stderr)
	s.t = t
	return s, nil
}

// Tracer is the session's tracer.
func (s *Session) Tracer() *Tracer { return s.t }

// Clock turns the tracer's times into wall times.
func (s *Session) Clock() Clock { return s.t.Clock() }

// Stop ends Run as a first signal does.
func (s *Session) Stop() { s.stop() }

// Close unloads the tracer.
func (s *Session) Close() error {
	s.stop()
	if s.t == nil {
		return nil
	}
	return s.t.Close()
}

// Run catches the stop signals, writes the ready file, starts the program,
// and hands l the events until a signal, Duration, Count, the program's
// exit or an error of l's (the run's lifecycle); then it says what was
// seen and lost. Its error is l's, else the program's exit status as an
// *ExitError.
func (s *Session) Run(l Loop) error {
	run, err := lifecycle.Start(s.ctx, lifecycle.Options{
		Duration: s.o.Duration, ReadyFile: s.o.ReadyFile, Ready: s.readyText,
		Argv: s.o.Argv, User: s.o.User, Stderr: s.stderr,
		// Read what the program's exit left queued (and a reorder
		// window's worth more), then stop.
		ProgramExited: 200 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	owns := func(*rdma.Event) bool { return true }
	p := run.Program()
	if p != nil {
		if s.o.OnlyProgram {
			owns = programOwns(p)
		}
		s.followStacks(programCgroup(p), p.Cmd.Path, s.stderr)
		if l.Program != nil {
			l.Program(uint32(p.Cmd.Process.Pid), programCgroup(p))
		}
	}
	err = s.loop(run.Context(), l, owns, p)
	if err == nil {
		run.Wait()
	}
	if l.End != nil {
		if eerr := l.End(); err == nil {
			err = eerr
		}
	}
	if l.Flush != nil {
		if ferr := l.Flush(); err == nil {
			err = ferr
		}
	}
	s.report()
	if perr := run.End(); err == nil {
		err = perr
	}
	return err
}

// loop reads the ring buffer until the run stops.
func (s *Session) loop(ctx context.Context, l Loop, owns func(*rdma.Event) bool, p *launch.Program) error {
	refresh := func() {}
	if s.o.Kernel != nil {
		var err error
		if refresh, s.kernelFilter, err = pushFilters(s.t, s.o.Kernel, p, s.stderr); err != nil {
			return err
		}
	}
	keep := s.o.Keep
	if keep == nil {
		keep = func(*rdma.Event) bool { return true }
	}
	var lw *lossWatch
	if s.o.DropHint != "" {
		lw = &lossWatch{dropHint: s.o.DropHint, out: s.stderr}
		if l.Flush != nil {
			lw.before = func() { _ = l.Flush() }
		}
	}
	c := l.Consumer
	c.Event = func(ev *rdma.Event) error {
		s.seen++
		if !keep(ev) || !owns(ev) {
			return nil
		}
		if err := l.Event(ev); err != nil {
			return err
		}
		if s.shown++; s.shown == s.o.Count {
			return errCount
		}
		return nil
	}
	tick := l.Tick
	c.Tick = func() {
		if tick != nil {
			tick()
		}
		if lw != nil {
			lw.check(s.t)
		}
		refresh()
	}
	if c.Every == 0 {
		c.Every = time.Second
	}
	if c.Bad == nil {
		c.Bad = func(err error) { fmt.Fprintf(s.stderr, "rdmatrace: %v\n", err) }
	}
	err := s.t.Run(ctx, c)
	if lw != nil {
		lw.check(s.t)
	}
	if errors.Is(err, errCount) || errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// report tells, on stderr, what was attached, seen and lost.
func (s *Session) report() {
	if s.t == nil {
		return
	}
	drops, _ := s.t.Drops()
	summary(s.t, s.seen, s.shown, drops, s.o.Verbose, s.stderr)
	stacksSummary(s.t, s.stderr)
	if n := s.t.Unread(); n > 0 {
		fmt.Fprintf(s.stderr, "rdmatrace: WARNING: %d events left unread in the ring buffer: the stop reads for at most %v\n", n, StopDrain)
	}
	if s.kernelFilter {
		n, _ := s.t.Filtered()
		fmt.Fprintf(s.stderr, "rdmatrace: the kernel discarded %d events the filters exclude\n", n)
	}
}

// readyText is the ready file's: how to reach this rdmatrace (Handle,
// else its PID), and the clock offset with ReadyClock.
func (s *Session) readyText() string {
	text := s.o.Handle
	if text == "" {
		text = strconv.Itoa(os.Getpid())
	}
	text += "\n"
	if s.o.ReadyClock && s.t != nil {
		text += "clock-offset " + strconv.FormatInt(s.t.Clock().Offset(), 10) + "\n"
	}
	return text
}

// StartSession is NewSession for a caller that retries the start (the
// exporter): what the session says while it starts is kept, and when it
// cannot start, its error carries those lines, escaped and joined by "; ",
// for the caller to say once per reason rather than at every try. Once
// started, the kept lines go to o.Stderr (os.Stderr when nil), and every
// later line of the session's with them.
func StartSession(o SessionOptions) (*Session, error) {
	out := &startWriter{}
	to := o.Stderr
	if to == nil {
		to = os.Stderr
	}
	o.Stderr = out
	s, err := NewSession(o)
	if err != nil {
		msgs := out.lines()
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Err != nil {
			msgs = append(msgs, err.Error())
		}
		return nil, errors.New(termsafe.Sanitize(strings.Join(msgs, "; ")))
	}
	out.started(to) // what it could not attach, and from now on its own lines
	return s, nil
}

// HooksFailed counts the hooks that could not attach, not those skipped
// because their module is absent.
func (s *Session) HooksFailed() int {
	if s.t == nil {
		return 0
	}
	failed := 0
	for _, r := range s.t.Reports {
		if r.Variant == "" && !r.Skipped {
			failed++
		}
	}
	return failed
}

// PreflightText is what a session's start depends on, cheaply: the
// preflight's problems (privileges, BTF, the RDMA modules), a line each.
// A caller that retries compares it: a change is worth a new start.
// given is the BTF of --btf, if any.
func PreflightText(given *KernelBTF) string {
	var b strings.Builder
	for _, p := range Preflight(given) {
		b.WriteString(p.Msg)
		b.WriteByte('\n')
	}
	return b.String()
}

// startWriter keeps a session's lines while it starts; once it has
// started, it passes them on.
type startWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	to  io.Writer
}

func (w *startWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.to != nil {
		return w.to.Write(p)
	}
	return w.buf.Write(p)
}

// lines are the kept lines without their "rdmatrace: ".
func (w *startWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ls []string
	for l := range strings.Lines(w.buf.String()) {
		if l = strings.TrimSpace(strings.TrimPrefix(l, "rdmatrace: ")); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

// started writes the kept lines to to, and every line after them.
func (w *startWriter) started(to io.Writer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = to.Write(w.buf.Bytes())
	w.buf.Reset()
	w.to = to
}
