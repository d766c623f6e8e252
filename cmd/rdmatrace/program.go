package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/safefile"
	"github.com/rdmatrace/rdmatrace/launch"
)

// stopGrace is how long a program stopped by --duration has between
// SIGTERM and SIGKILL.
const stopGrace = 5 * time.Second

// programFlags are leaks' flags for -- CMD.
func programFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "user", Usage: "with -- CMD: run CMD as `USER` (name or uid; default: the user who ran sudo, or doas, else rdmatrace's own)"},
		&cli.StringFlag{Name: "output", Usage: "write the report to `FILE` instead of stdout (which stays the program's)"},
	}
}

// startProgram runs leaks' CMD: in a cgroup of its own, whose id decides
// at each event whether a resource is the program's, as the invoking user.
func startProgram(c *cli.Context, argv []string) (*launch.Program, error) {
	id, err := launch.ChooseUser(c.String("user"), os.Getenv, os.Geteuid(), launch.SystemUsers{})
	if err != nil {
		return nil, exitWith(2, err)
	}
	p, err := launch.Start(launch.Options{Argv: argv, User: id, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		return nil, exitWith(2, fmt.Errorf("start %s: %w", formats.Sanitize(argv[0]), err))
	}
	if !id.Keep {
		fmt.Fprintf(os.Stderr, "rdmatrace: running %s as %s\n", formats.Sanitize(argv[0]), formats.Sanitize(id.String()))
	}
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

// endProgram removes the program's cgroup, saying what it left running.
func endProgram(p *launch.Program) {
	moved, err := p.Cleanup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmatrace: %s\n", formats.Sanitize(err.Error()))
	}
	if moved > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: the program left %d processes running (moved out of its cgroup, not followed any more)\n", moved)
	}
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
