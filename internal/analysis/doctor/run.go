package doctor

import (
	"fmt"
	"os"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/launch"
)

// Options are what `rdmatrace doctor` checks: one process, named by PID,
// by Container (a prefix of its id), or run from Argv as User and checked
// once it has run for After; none: rdmatrace itself.
type Options struct {
	PID       int
	Container string
	Argv      []string
	User      *launch.Identity
	After     time.Duration
	// Port, QPN and QPTrace are Target's.
	Port    uint16
	QPN     uint32
	QPTrace string
	// Stdin, Stdout and Stderr are the program's.
	Stdin, Stdout, Stderr *os.File
	// Log says what a reader should know on the way: who runs the
	// program, a recording that could be read in part.
	Log func(string)
}

// Report is what doctor found.
type Report struct {
	Target Target
	// Note says what was checked instead of the program, when it ended
	// before After.
	Note     string
	Findings []Finding
	// program is -- CMD when it runs on after the check; log says so.
	program *launch.Settled
	name    string
	log     func(string)
}

// Wait waits for a program that runs on after its check (a server), as a
// shell waits for its foreground program, and says so first; at once
// otherwise.
func (r Report) Wait() {
	if r.program == nil || r.program.Program == nil {
		return
	}
	pid := r.program.Program.Cmd.Process.Pid
	r.log(fmt.Sprintf("doctor: %s (pid %d) runs on after the check: waiting for it to exit (Ctrl-C, or kill %d, ends it)",
		termsafe.Sanitize(r.name), pid, pid))
	r.program.Wait()
}

// Failed says whether a check failed (exit status 1).
func (r Report) Failed() bool {
	for _, f := range r.Findings {
		if f.Status == Fail {
			return true
		}
	}
	return false
}

// Run checks the process o names, saying how each check went. A program
// that runs on is in the report, on error too: Wait for it.
func Run(o Options) (Report, error) {
	var r Report
	x := enrich.New(enrich.Options{}) // the run's: every process it names
	pid := os.Getpid()
	var as *launch.Identity // who ran CMD, when it ended before the check
	switch {
	case o.PID != 0:
		pid = o.PID
	case o.Container != "":
		p, err := ContainerPID(o.Container, x)
		if err != nil {
			return r, err
		}
		pid = p
	case len(o.Argv) > 0:
		s, err := launch.StartSettled(launch.Options{Argv: o.Argv, User: o.User, NoCgroup: true, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr}, o.After)
		if err != nil {
			return r, fmt.Errorf("start %s: %w", termsafe.Sanitize(o.Argv[0]), err)
		}
		if !o.User.Keep {
			o.Log(fmt.Sprintf("running %s as %s", termsafe.Sanitize(o.Argv[0]), termsafe.Sanitize(o.User.String())))
		}
		if s.Program != nil {
			pid = s.Program.Cmd.Process.Pid
			r.program, r.name, r.log = s, o.Argv[0], o.Log
		} else {
			// Its context is ours but for its credentials.
			as = o.User
			r.Note = fmt.Sprintf("%s ended (%s) before %v: its context, %s, was checked", o.Argv[0], exitText(s.Exit), o.After, ourContext(o.User))
		}
	}
	t, err := ReadTarget("", pid)
	if err != nil {
		return r, err
	}
	if as != nil && !as.Keep {
		t = t.As(as.UID, append([]uint32{as.GID}, as.Groups...))
	}
	t.Port, t.QPN, t.QPTrace = o.Port, o.QPN, o.QPTrace
	t.QPAnyOwner = o.QPN != 0 && o.PID == 0 && o.Container == "" && len(o.Argv) == 0
	v := Gather(t, x)
	if err := ReadQPTrace(t, &v); err != nil {
		if v.QPSettings == nil {
			return r, fmt.Errorf("--qp-trace: %s", termsafe.Sanitize(err.Error()))
		}
		o.Log("--qp-trace: " + termsafe.Sanitize(err.Error()))
	}
	r.Target, r.Findings = t, Check(t, v)
	return r, nil
}

func ourContext(id *launch.Identity) string {
	if id.Keep {
		return "which is ours"
	}
	return "ours as " + id.String()
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
