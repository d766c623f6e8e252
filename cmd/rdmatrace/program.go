package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/host/launch"
)

// stopGrace is how long a program stopped by --duration has between
// SIGTERM and SIGKILL.
const stopGrace = 5 * time.Second

// userFlag chooses who runs -- CMD, for every command that runs one.
var userFlag = &cli.StringFlag{Name: "user", Usage: "with -- CMD: run CMD as `USER` (name or uid; default: the user who ran sudo, or doas, else rdmatrace's own)"}

// programFlags are leaks' flags for -- CMD.
func programFlags() []cli.Flag {
	return []cli.Flag{
		userFlag,
		&cli.StringFlag{Name: "output", Usage: "write the report to `FILE` instead of stdout (which stays the program's)"},
	}
}

// programUser is who runs -- CMD: --user, else the user who invoked
// rdmatrace (launch.ChooseUser).
func programUser(c *cli.Context) (*launch.Identity, error) {
	id, err := launch.ChooseUser(c.String(userFlag.Name), os.Getenv, os.Geteuid(), launch.SystemUsers{})
	if err != nil {
		return nil, exitWith(2, err)
	}
	return id, nil
}

// announceUser says on stderr who runs argv0 when it is not rdmatrace's
// own user.
func announceUser(argv0 string, id *launch.Identity) {
	if !id.Keep {
		fmt.Fprintf(os.Stderr, "rdmatrace: running %s as %s\n", formats.Sanitize(argv0), formats.Sanitize(id.String()))
	}
}

// startProgram runs leaks' CMD: in a cgroup of its own, whose id decides
// at each event whether a resource is the program's, as the invoking user.
// Until endProgram, a second stop signal that exits rdmatrace at once
// kills the cgroup and removes it.
func startProgram(c *cli.Context, argv []string) (*launch.Program, error) {
	id, err := programUser(c)
	if err != nil {
		return nil, err
	}
	p, err := launch.Start(launch.Options{Argv: argv, User: id, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		return nil, exitWith(2, fmt.Errorf("start %s: %w", formats.Sanitize(argv[0]), err))
	}
	setAtOnce(func() { abandonProgram(p) })
	announceUser(argv[0], id)
	if p.Cgroup == nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: WARNING: no cgroup for the program (%s): its children are told by /proc after each event, "+
			"so one that exits within %v of creating a resource is missed, and a PID reused meanwhile is misattributed\n",
			formats.Sanitize(p.CgroupErr.Error()), time.Duration(reorderWindow))
	}
	return p, nil
}

// programCgroup is the id leaks compares each event's owner cgroup with;
// 0 when the program has no cgroup.
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
func abandonProgram(p *launch.Program) {
	p.Kill()
	if p.Cgroup != nil {
		p.Cgroup.Empty(time.Now().Add(time.Second))
	}
	if _, err := p.Cleanup(); err != nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: %s\n", formats.Sanitize(err.Error()))
	}
}

// endProgram removes the program's cgroup, saying what it left running:
// processes that outlive a program that exited by itself (a daemon it
// started) keep running, outside its cgroup; --duration stops them with
// it.
func endProgram(p *launch.Program) {
	setAtOnce(nil)
	left, err := p.Cleanup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: %s\n", formats.Sanitize(err.Error()))
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: the program exited and left running, now outside its cgroup and untraced: %s (--duration stops these with the program)\n",
			processNames(left))
	}
}

// processNames names processes as comm[pid], the first five.
func processNames(pids []int) string {
	var names []string
	for i, pid := range pids {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(pids)-i))
			break
		}
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		names = append(names, fmt.Sprintf("%s[%d]", formats.Sanitize(strings.TrimSpace(string(comm))), pid))
	}
	return strings.Join(names, ", ")
}

// reportOutput is where leaks writes its report: --output, or stdout.
func reportOutput(c *cli.Context) (*os.File, error) {
	name := c.String("output")
	if name == "" || name == "-" {
		return os.Stdout, nil
	}
	f, err := safefile.Create(name, outputOwner())
	if err != nil {
		return nil, exitWith(2, fmt.Errorf("--output: %s", formats.Sanitize(err.Error())))
	}
	return f, nil
}
