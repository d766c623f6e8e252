package cliargs

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/base/suggest"
)

// UsageError is a mistake in how a program was called. It reads as the
// one line printed after the program's name: the command, what is wrong,
// and where the help is.
type UsageError struct {
	Program string     // the program, whose --help names the help
	Cmd     string     // the command; empty for the program itself
	Err     error      // what is wrong
	Flags   []cli.Flag // the command's, to name what a bad value should be
	// OfCommand: made by Usagef, for the command that runs (which
	// NameUsage names).
	OfCommand bool
}

// Error is raw: the program prints its errors escaped.
func (e *UsageError) Error() string {
	help, what := e.Program, UsageText(e.Err, e.Flags)
	if e.Cmd != "" {
		help += " " + e.Cmd
		what = e.Cmd + ": " + what
	}
	return what + "; see '" + help + " --help'"
}

func (e *UsageError) Unwrap() error { return e.Err }

// Usagef makes a usage error of the command that runs: what checks the
// options needs no *cli.Context to say which (NameUsage names it).
func Usagef(program, format string, a ...any) *UsageError {
	return &UsageError{Program: program, Err: fmt.Errorf(format, a...), OfCommand: true}
}

// NameUsage makes action's usage errors (Usagef's) name command name.
func NameUsage(name string, action cli.ActionFunc) cli.ActionFunc {
	if action == nil {
		return nil
	}
	return func(c *cli.Context) error {
		err := action(c)
		var ue *UsageError
		if errors.As(err, &ue) && ue.OfCommand && ue.Cmd == "" {
			ue.Cmd = name
		}
		return err
	}
}

// Find is the command of cmds called name (or an alias of it), or nil.
func Find(name string, cmds []*cli.Command) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// Unknown says that name is no command, with the nearest of cmds (those
// not hidden) when one is close.
func Unknown(name string, cmds []*cli.Command) error {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	if s := suggest.Nearest(name, names); s != "" {
		return fmt.Errorf("unknown command %q; did you mean %q", name, s)
	}
	return fmt.Errorf("unknown command %q", name)
}
