package leaks

import (
	"errors"
	"fmt"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// ExitLeaked is the exit status of a run that reported a leak.
const ExitLeaked = 3

// Options are a live leak watch's choices (leaks without --log).
type Options struct {
	// MaxTable is how many resources are tracked at once; the rest are
	// counted as untracked, and said.
	MaxTable int
	// Interval and MaxBlocked are the Watcher's.
	Interval, MaxBlocked time.Duration
	// Keep selects the resources the report names (the filters); nil
	// keeps all.
	Keep func(*rdma.Event) bool
	// Window is how long events are held, in their monotonic
	// nanoseconds, to put those of several CPUs in time order.
	Window uint64
	// Program says a program runs (leaks -- CMD): its exit ends the
	// report, which names what it left; else the report ends with what is
	// alive.
	Program bool
}

// Report is where a live watch's report goes.
type Report interface {
	// Finding takes one finding.
	Finding(*rdma.Finding)
	// NoLeaks ends the report of a program that left nothing behind.
	NoLeaks(now time.Time, created, destroyed int)
	// Flush writes out what is buffered.
	Flush() error
}

// Live is leaks over a tracer's stream: the live table (a snapshot, then
// the events), the Watcher that reports on it, and the reorder window
// that puts events from several CPUs in time order before either sees
// them. Its problems, which may make the report wrong, go to warn.
type Live struct {
	w       *Watcher
	table   *restable.Table
	reorder *restable.Reorder
	o       Options
	report  Report
	warn    func(string)
	warned  uint64 // untracked resources warned of
}

// NewLive starts a watch reporting to r.
func NewLive(o Options, r Report, warn func(string)) *Live {
	l := &Live{table: restable.New(o.MaxTable), reorder: restable.NewReorder(o.Window), o: o, report: r, warn: warn}
	l.w = New(l.table, r.Finding)
	if o.Keep != nil {
		l.w.Keep = o.Keep
	}
	if o.Interval > 0 {
		l.w.Interval = o.Interval
	}
	if o.MaxBlocked > 0 {
		l.w.MaxBlocked = o.MaxBlocked
	}
	return l
}

// Snapshot takes a resource that existed before the trace began.
func (l *Live) Snapshot(e *rdma.Event) { l.w.Handle(e) }

// Push takes the next event as the tracer read it.
func (l *Live) Push(e *rdma.Event) error {
	l.reorder.Push(e, l.w.Handle)
	return nil
}

// Program follows the program the run started (see Watcher.Program).
func (l *Live) Program(pid uint32, cgroup uint64) { l.w.Program(pid, cgroup) }

// Tick does what is due at a moment without events, and under a flood
// every tick all the same: the events past the window (mono is the
// monotonic clock's now, at wall) go to the watcher, a blocked
// unregistration's waiting lines are written, a full table is said.
func (l *Live) Tick(mono uint64, wall time.Time) {
	if mono > l.o.Window {
		l.reorder.FlushUntil(mono-l.o.Window, l.w.Handle)
	}
	l.tick(wall)
}

func (l *Live) tick(wall time.Time) {
	l.w.Tick(wall)
	if n := l.table.Untracked(); n > l.warned {
		l.warn(fmt.Sprintf("WARNING: table full (--max-table %d), %d resources untracked", l.o.MaxTable, n))
		l.warned = n
	}
	_ = l.report.Flush()
}

// End ends the report at now: what the window holds is handled, then,
// with a program, what it left (or that it left nothing), else what is
// still alive.
func (l *Live) End(now time.Time) error {
	l.reorder.Flush(l.w.Handle)
	l.tick(now)
	if l.o.Program {
		l.w.ProgramExited(now)
		if l.w.Leaked() == 0 {
			made, destroyed := l.w.ProgramCounts()
			l.report.NoLeaks(now, made, destroyed)
		}
	} else {
		l.w.End(now)
	}
	return l.report.Flush()
}

// Notes says, after the run, what may make the report wrong.
func (l *Live) Notes() {
	if n := l.reorder.Overflowed(); n > 0 {
		l.warn(fmt.Sprintf("%d events left the reorder window early (more than %d within %v): their order may be wrong", n, restable.DefaultMaxHeld, time.Duration(l.o.Window)))
	}
	if n := l.table.Replaced(); n > 0 {
		l.warn(fmt.Sprintf("%d resource ids were reused without a traced destroy", n))
	}
}

// Leaked is the number of leaks reported (Watcher.Leaked).
func (l *Live) Leaked() int { return l.w.Leaked() }

// Leaks says whether the run, which ended with runErr, exits with
// ExitLeaked: a leak was reported, and the run ended as it should or with
// its program's own status (the leak comes first); an error of the run's
// own stands.
func (l *Live) Leaks(runErr error) bool {
	var status *tracer.ExitError
	return l.w.Leaked() > 0 && (runErr == nil || errors.As(runErr, &status))
}
