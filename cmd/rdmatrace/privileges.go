package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/tracer"
)

// needsRoot is what a command that loads the tracer says to a user
// without the privileges: the command's name, what it needs them for, and
// how to get them. The tracer's own wording (tracer.ErrPrivileges) names
// trace alone.
func needsRoot(c *cli.Context) string {
	const caps = "needs root: loading its BPF programs needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), " +
		"and CAP_SYS_RESOURCE on kernels that charge BPF memory to RLIMIT_MEMLOCK; "
	name := c.Command.Name
	if name == "exporter" {
		return name + ": " + caps + "run it with sudo, or with --no-trace for the resource counts alone"
	}
	return name + ": " + caps + "run it with sudo"
}

// privilegeProblem is the command's own words for the preflight's
// privileges problem, and msg unchanged for any other.
func privilegeProblem(c *cli.Context, msg string) string {
	if msg == tracer.ErrPrivileges.Error() {
		return needsRoot(c)
	}
	return msg
}

// privilegeError puts the command's own words on a tracer.ErrPrivileges
// from loading the tracer.
func privilegeError(c *cli.Context, err error) error {
	if errors.Is(err, tracer.ErrPrivileges) {
		return exitWith(1, errors.New(needsRoot(c)))
	}
	return err
}
