package launch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Program is a started program.
type Program struct {
	Cmd *exec.Cmd
	// Cgroup is the program's own cgroup; nil when it could not have one
	// (then the caller must tell membership some other way).
	Cgroup *Cgroup
	// CgroupErr says why there is no Cgroup.
	CgroupErr error

	mu       sync.Mutex
	killer   *time.Timer
	stopped  bool
	deadline time.Time // of the grace Stop gave
	exited   bool
}

// Options say how to start a program.
type Options struct {
	Argv []string
	User *Identity
	// NoCgroup starts it without a cgroup of its own.
	NoCgroup              bool
	Stdin, Stdout, Stderr *os.File
}

// Start starts the program in a new cgroup (clone3 with CLONE_INTO_CGROUP,
// so that it is in the cgroup before it runs a single instruction, and so
// is every process it starts), as opts.User, with SIGKILL as its parent
// death signal, so that it does not outlive rdmatrace. When the cgroup
// cannot be made or entered (no cgroup v2, a kernel before 5.7, a seccomp
// filter that refuses clone3), the program starts without one and
// CgroupErr says why. RLIMIT_MEMLOCK is first put back as rdmatrace found
// it (RestoreMemlock): call Start after the tracer is loaded.
func Start(opts Options) (*Program, error) {
	if len(opts.Argv) == 0 {
		return nil, errors.New("no program to run")
	}
	if err := RestoreMemlock(); err != nil {
		return nil, fmt.Errorf("restore RLIMIT_MEMLOCK: %w", err)
	}
	p := &Program{}
	if !opts.NoCgroup {
		p.Cgroup, p.CgroupErr = NewCgroup()
	} else {
		p.CgroupErr = errors.New("not asked for")
	}
	p.Cmd = p.command(opts)
	err := p.Cmd.Start()
	if err != nil && p.Cgroup != nil {
		// Entering the cgroup may be what failed: try without.
		p.CgroupErr = fmt.Errorf("start %s in cgroup %s: %w", opts.Argv[0], p.Cgroup.Path, err)
		p.Cgroup.Remove()
		p.Cgroup = nil
		p.Cmd = p.command(opts)
		err = p.Cmd.Start()
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Program) command(opts Options) *exec.Cmd {
	cmd := exec.Command(opts.Argv[0], opts.Argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opts.Stdin, opts.Stdout, opts.Stderr
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if opts.User != nil {
		// Go sets the death signal after the change of credentials,
		// which would otherwise clear it.
		attr.Credential = opts.User.Credential()
		cmd.Env = opts.User.Env(os.Environ())
	}
	if p.Cgroup != nil {
		attr.UseCgroupFD, attr.CgroupFD = true, p.Cgroup.FD()
	}
	cmd.SysProcAttr = attr
	return cmd
}

// Forward passes a SIGINT or SIGTERM that rdmatrace received on to the
// program. A Ctrl-C at the terminal went to the whole foreground process
// group, the program included, when rdmatrace is in it: that one is not
// sent a second time (a second SIGINT makes some programs skip their
// cleanup).
func (p *Program) Forward(sig os.Signal) {
	if sig == syscall.SIGINT && foreground() {
		return
	}
	_ = p.Cmd.Process.Signal(sig)
}

// foreground tells whether rdmatrace's process group is its terminal's
// foreground group, and so the program's too (it inherits the group).
func foreground() bool {
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	defer tty.Close()
	pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// Stop asks the program to end with SIGTERM and kills it with SIGKILL if
// it is still running after grace. It returns at once. With a cgroup, it
// stops the whole cgroup, as systemd stops a service: SIGTERM goes to
// every process in it, and SIGKILL, after grace, to every one left
// (cgroup.kill); Wait then returns once the cgroup is empty, so that
// nothing the program started outlives it.
func (p *Program) Stop(grace time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.exited {
		return
	}
	p.stopped = true
	p.deadline = time.Now().Add(grace)
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	if p.Cgroup != nil {
		// Once each: a second SIGTERM makes some programs (rdmatrace
		// among them) skip their cleanup.
		p.Cgroup.Signal(unix.SIGTERM, p.Cmd.Process.Pid)
	}
	p.killer = time.AfterFunc(grace, p.Kill)
}

// Kill kills the program with SIGKILL at once, and with a cgroup every
// process in it.
func (p *Program) Kill() {
	_ = p.Cmd.Process.Kill()
	if p.Cgroup != nil {
		_ = p.Cgroup.Kill()
	}
}

// Wait waits for the program to exit, and cancels a pending SIGKILL. When
// Stop stopped the program and it has a cgroup, Wait returns once the
// cgroup is empty: what is left at the end of the grace is killed.
func (p *Program) Wait() error {
	err := p.Cmd.Wait()
	p.mu.Lock()
	p.exited = true
	stopped, deadline := p.stopped, p.deadline
	if p.killer != nil {
		p.killer.Stop()
	}
	p.mu.Unlock()
	if stopped && p.Cgroup != nil && !p.Cgroup.Empty(deadline) {
		_ = p.Cgroup.Kill()
		p.Cgroup.Empty(time.Now().Add(2 * time.Second))
	}
	return err
}

// ExitCode is the program's exit status as a shell reports it (128+N
// when signal N killed it); -1 when err is not an exit status.
func ExitCode(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1
	}
	if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		return 128 + int(st.Signal())
	}
	return ee.ExitCode()
}

// Cleanup removes the program's cgroup once it has exited; it says what
// it could not do, and which processes the program left running (moved
// to the parent cgroup, where they keep running).
func (p *Program) Cleanup() (left []int, err error) {
	if p.Cgroup == nil {
		return nil, nil
	}
	return p.Cgroup.Remove()
}

// Settled is a program started and given time to settle (doctor -- CMD
// checks it once it has run for a while).
type Settled struct {
	// Program is the program, still running; nil when it ended sooner.
	Program *Program
	// Exit is how it ended, when it did (nil: status 0).
	Exit error
	done chan error
}

// StartSettled starts a program and waits up to after for it.
func StartSettled(o Options, after time.Duration) (*Settled, error) {
	p, err := Start(o)
	if err != nil {
		return nil, err
	}
	s := &Settled{done: make(chan error, 1)}
	go func() { s.done <- p.Wait() }()
	select {
	case s.Exit = <-s.done:
	case <-time.After(after):
		s.Program = p
	}
	return s, nil
}

// Wait waits for a program still running to exit.
func (s *Settled) Wait() {
	if s.Program != nil {
		<-s.done
	}
}
