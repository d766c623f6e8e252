package lifecycle

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/host/launch"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
)

// StopGrace is how long a program stopped by --duration has between
// SIGTERM and SIGKILL.
const StopGrace = 5 * time.Second

// childWindow is how soon after an event a program's child is looked up
// in /proc when the program has no cgroup (the tracer's, leaks' reorder
// window): what its warning says.
const childWindow = 50 * time.Millisecond

// startProgram runs -- CMD: in a cgroup of its own, whose id decides at
// each event whether a resource is the program's, as user. Until
// endProgram, a second stop signal that exits rdmatrace at once kills the
// cgroup and removes it.
func startProgram(argv []string, user *launch.Identity, stderr io.Writer) (*launch.Program, error) {
	p, err := launch.Start(launch.Options{Argv: argv, User: user, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("start %s: %w", termsafe.Sanitize(argv[0]), err)}
	}
	setAtOnce(func() { abandonProgram(p, stderr) })
	if !user.Keep {
		fmt.Fprintf(stderr, "rdmatrace: running %s as %s\n", termsafe.Sanitize(argv[0]), termsafe.Sanitize(user.String()))
	}
	if p.Cgroup != nil && len(p.Cgroup.Reaped) > 0 {
		fmt.Fprintf(stderr, "rdmatrace: removed %d empty cgroup(s) that killed runs left: %s\n", len(p.Cgroup.Reaped), termsafe.Sanitize(strings.Join(p.Cgroup.Reaped, ", ")))
	}
	if p.Cgroup == nil {
		fmt.Fprintf(stderr, "rdmatrace: WARNING: no cgroup for the program (%s): its children are told by /proc after each event, "+
			"so one that exits within %v of creating a resource is missed, and a PID reused meanwhile is misattributed\n",
			termsafe.Sanitize(p.CgroupErr.Error()), childWindow)
	}
	return p, nil
}

// programCgroup is the id each event's owner cgroup is compared with; 0
// when the program has no cgroup.
func programCgroup(p *launch.Program) uint64 {
	if p.Cgroup == nil {
		return 0
	}
	return p.Cgroup.ID
}

// abandonProgram is endProgram when rdmatrace exits at once: the
// program and everything in its cgroup are killed (the program would die
// with rdmatrace anyway, of its parent-death signal, but not what it
// started), and the cgroup is removed.
func abandonProgram(p *launch.Program, stderr io.Writer) {
	p.Kill()
	if p.Cgroup != nil {
		p.Cgroup.Empty(time.Now().Add(time.Second))
	}
	if _, err := p.Cleanup(); err != nil {
		fmt.Fprintf(stderr, "rdmatrace: %s\n", termsafe.Sanitize(err.Error()))
	}
}

// endProgram removes the program's cgroup, saying what it left running:
// processes that outlive a program that exited by itself (a daemon it
// started) keep running, outside its cgroup; --duration stops them with
// it.
func endProgram(p *launch.Program, stderr io.Writer) {
	setAtOnce(nil)
	left, err := p.Cleanup()
	if err != nil {
		fmt.Fprintf(stderr, "rdmatrace: %s\n", termsafe.Sanitize(err.Error()))
	}
	if len(left) > 0 {
		fmt.Fprintf(stderr, "rdmatrace: the program exited and left running, now outside its cgroup and untraced: %s (--duration stops these with the program)\n",
			processNames(left))
	}
}

// processNames names processes as comm[pid], the first five.
func processNames(pids []int) string {
	var comms proc.CommCache
	var names []string
	for i, pid := range pids {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(pids)-i))
			break
		}
		names = append(names, fmt.Sprintf("%s[%d]", termsafe.Sanitize(comms.Comm(uint32(pid))), pid))
	}
	return strings.Join(names, ", ")
}
