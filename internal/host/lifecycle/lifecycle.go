// Package lifecycle is the one run of a long-running command (trace with
// or without BPF, leaks and why live through the tracer's session, gid -w,
// the exporter): the stop signals, --duration, the ready file, the program of
// -- CMD, and its exit status. What the command does meanwhile is its own:
// it reads Context and stops when it is done, as ptcpdump's
// capture(ctx, stop, opts) does.
//
//	r, err := lifecycle.Start(ctx, opts) // signals caught, ready file written, CMD started
//	... work until r.Context() is done ...
//	r.Wait()                             // CMD's exit, when the work ended well
//	err = r.End()                        // CMD's cgroup removed, its exit status
//
// It is a host package: it runs processes and answers signals, knows no
// RDMA, and the tracer (a source) can sit on it.
package lifecycle

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/host/launch"
)

// Options are a command's choices for its run.
type Options struct {
	// Duration ends the run (stops the program, when there is one); 0: no
	// limit.
	Duration time.Duration
	// ReadyFile is created once the signals are caught, before the
	// program starts: its first line says how to reach this rdmatrace
	// (Ready's first line; the PID when Ready is nil), the others what
	// Ready adds ("key value" lines).
	ReadyFile string
	Ready     func() string
	// ReadyLater leaves the ready file to Run.MarkReady: a command that is
	// ready only later (the exporter: once it serves and has tried the
	// tracer).
	ReadyLater bool
	// Argv is -- CMD; User who runs it (launch.ChooseUser).
	Argv []string
	User *launch.Identity
	// ProgramExited is how long after the program's exit the run stops:
	// what its exit left queued is still read. 0: at once.
	ProgramExited time.Duration
	// Stderr gets the run's lines (os.Stderr when nil).
	Stderr io.Writer
}

// A Run is one run of a command, from Start to End.
type Run struct {
	o       Options
	ctx     context.Context
	stop    context.CancelFunc
	release func()
	prog    atomic.Pointer[launch.Program]
	waited  chan struct{}
	progErr error
	timer   *time.Timer
}

// Start catches SIGINT and SIGTERM (the first stops the run, or is passed
// on to the program, whose exit stops it; another one later exits at once
// with 128+signal), writes the ready file, starts the program, and arms
// Duration. The run stops when parent is done too.
func Start(parent context.Context, o Options) (*Run, error) {
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	r := &Run{o: o}
	r.ctx, r.stop = context.WithCancel(parent)
	r.release = onInterrupt(func(sig os.Signal) {
		if p := r.prog.Load(); p != nil {
			p.Forward(sig)
		} else {
			r.stop()
		}
	})
	if !o.ReadyLater {
		if err := r.MarkReady(); err != nil {
			r.release()
			return nil, err
		}
	}
	end := r.stop
	if len(o.Argv) > 0 {
		p, err := startProgram(o.Argv, o.User, o.Stderr)
		if err != nil {
			r.release()
			return nil, err
		}
		r.prog.Store(p)
		r.waited = make(chan struct{})
		go func() {
			r.progErr = p.Wait()
			// Its exit cleanup ran before the wait returned: read what it
			// left queued, then stop.
			time.AfterFunc(o.ProgramExited, r.stop)
			close(r.waited)
		}()
		end = func() { p.Stop(StopGrace) }
	}
	if o.Duration > 0 {
		r.timer = time.AfterFunc(o.Duration, end)
	}
	return r, nil
}

// Context is done when the run stops: a signal, Duration, the program's
// exit, Stop.
func (r *Run) Context() context.Context { return r.ctx }

// Stop ends the run as a first signal does when there is no program.
func (r *Run) Stop() { r.stop() }

// Program is -- CMD's process, nil without one.
func (r *Run) Program() *launch.Program { return r.prog.Load() }

// ProgramCgroup is the id of the program's cgroup; 0 without a program
// or without a cgroup for it.
func (r *Run) ProgramCgroup() uint64 {
	if p := r.Program(); p != nil {
		return programCgroup(p)
	}
	return 0
}

// Wait waits for the program's exit; at once without a program.
func (r *Run) Wait() {
	if r.waited != nil {
		<-r.waited
	}
}

// End removes the program's cgroup, saying what it left running, and
// stops listening to signals. Its error is the program's exit status, as
// an *ExitError, when it has exited.
func (r *Run) End() error {
	defer r.release()
	if r.timer != nil {
		r.timer.Stop()
	}
	defer r.stop()
	p := r.Program()
	if p == nil {
		return nil
	}
	endProgram(p, r.o.Stderr)
	select {
	case <-r.waited:
	default:
		return nil
	}
	if r.progErr != nil {
		if code := launch.ExitCode(r.progErr); code >= 0 {
			return &ExitError{Code: code}
		}
		return r.progErr
	}
	return nil
}

// MarkReady writes the ready file, when one is asked for: at Start, or
// when the command says so with ReadyLater.
func (r *Run) MarkReady() error {
	if r.o.ReadyFile == "" {
		return nil
	}
	text := strconv.Itoa(os.Getpid()) + "\n"
	if r.o.Ready != nil {
		text = r.o.Ready()
	}
	return WriteReadyFile(r.o.ReadyFile, text)
}

// WriteReadyFile writes path in one step, so that a script polling for it
// finds it whole, as the invoking user's (safefile: no planted link
// followed).
func WriteReadyFile(path, text string) error {
	if err := safefile.WriteFile(path, []byte(text), safefile.Invoker(os.Getenv)); err != nil {
		return &ExitError{Code: 1, Err: fmt.Errorf("--ready-file: %s", termsafe.Sanitize(err.Error()))}
	}
	return nil
}

// ExitError ends a command with an exit status: the program's own, 1 for
// a failure, 2 for a usage problem. Err is nil when it was said already.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return "exit status " + strconv.Itoa(e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }
