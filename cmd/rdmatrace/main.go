// Command rdmatrace shows who holds which RDMA resources and what happens to
// them: netlink snapshots (dev, link, res), live tracing and post-mortem
// parsing of saved RDMA state.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/cliargs"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// commands is filled by each command's file in init, so commands stay in
// files of their own.
var commands []*cli.Command

// exit is os.Exit, replaced in tests.
var exit = os.Exit

// exitWith returns an error that makes rdmatrace exit with code, as a use
// case's do; err may be nil when the message was already printed.
func exitWith(code int, err error) error { return &tracer.ExitError{Code: code, Err: err} }

// usageErr is a usage error of cmd ("" for rdmatrace itself): exit
// status 2 and one line, the command, what is wrong and where the help is
// (cliargs.UsageError). Every command reports bad flags, arguments and
// values this way.
func usageErr(cmd string, flags []cli.Flag, err error) error {
	return exitWith(2, &cliargs.UsageError{Program: "rdmatrace", Cmd: cmd, Err: err, Flags: flags})
}

// usagef makes a usage error of the command that runs (cliargs.NameUsage
// names it).
func usagef(format string, a ...any) error {
	return exitWith(2, cliargs.Usagef("rdmatrace", format, a...))
}

func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	for _, cmd := range commands {
		name, flags := cmd.Name, cmd.Flags
		// Without this, urfave/cli prints "Incorrect Usage" and the whole
		// help on stdout and exits 1.
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageErr(name, flags, err) }
		cmd.Action = cliargs.NameUsage(name, cmd.Action)
		for _, sub := range cmd.Subcommands {
			sub.Action = cliargs.NameUsage(sub.Name, sub.Action)
		}
	}
	help := helpCommand()
	help.Action = cliargs.NameUsage(help.Name, help.Action)
	// -v is --verbose in trace and leaks; -V is the version, as in pwru
	// and ptcpdump.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print the version and exit"}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintln(c.App.Writer, "rdmatrace", c.App.Version) }
	return &cli.App{
		Name:      "rdmatrace",
		Usage:     "see who holds which RDMA connection, queue pair and port, since when, and what happened to it",
		UsageText: "rdmatrace [-j] [-p] [-d] COMMAND [OPTIONS] [ARGS]",
		Description: "The global options -j (JSON), -p (pretty JSON) and -d/-dd (details) go before\n" +
			"the command or after it, as in iproute2's rdma: rdmatrace -j res show qp.\n" +
			"-j is a JSON array for snapshots (dev, link, res) and one object a line (NDJSON)\n" +
			"for streams (trace, leaks, parse). The commands rdma has take its abbreviations\n" +
			"(sys, st, l, r, d: the first in rdma's order). Each command's --help has its examples.\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace -j -p res show qp             # iproute2's rdma, with owners\n" +
			"   rdmatrace trace qp pid 1234             # QP events of process 1234\n" +
			"   rdmatrace leaks -- ./app                # what ./app left behind\n" +
			"   rdmatrace parse /var/log/bundle/        # saved rdma_cm state\n\n" +
			"EXIT STATUS:\n" + exitStatus("", "") + "   Each command's --help tells its own.",
		Version:  versionString(),
		Commands: append(commands, help),
		// urfave/cli adds --help only when it adds its own help command.
		Flags: []cli.Flag{cli.HelpFlag},
		// Not urfave/cli's hidden --generate-bash-completion flag: it made
		// `trace --<TAB>` start a trace. `rdmatrace completion SHELL` instead.
		EnableBashCompletion: false,
		HideHelpCommand:      true,
		ExitErrHandler:       func(*cli.Context, error) {}, // main decides the status
		OnUsageError:         func(_ *cli.Context, err error, _ bool) error { return usageErr("", nil, err) },
		CommandNotFound: func(c *cli.Context, name string) {
			// cli.App takes no error from here: main's rule, applied here.
			fmt.Fprintf(c.App.ErrWriter, "rdmatrace: %v\n", &cliargs.UsageError{Program: "rdmatrace", Err: cliargs.Unknown(name, commands)})
			exit(2)
		},
	}
}

// helpCommand is `rdmatrace help [COMMAND]`: urfave/cli's own is hidden
// with HideHelpCommand and says "No help topic" for a typo.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the help of rdmatrace or of a command",
		ArgsUsage: "[COMMAND]",
		Hidden:    true,
		Action: func(c *cli.Context) error {
			if err := maxArgs(c.Args().Slice(), 1); err != nil {
				return err
			}
			name := c.Args().First()
			if name == "" {
				return cli.ShowAppHelp(c)
			}
			if cliargs.Find(name, commands) == nil {
				return usageErr("", nil, cliargs.Unknown(name, commands))
			}
			// The same text as `rdmatrace NAME --help`, by the same path.
			return c.App.Run([]string{c.App.Name, name, "--help"})
		},
	}
}

func main() {
	app := newApp()
	err := app.Run(hoistFlags(os.Args, app.Commands))
	if err == nil {
		return
	}
	code, err := exitCode(err)
	printError(os.Stderr, err)
	os.Exit(code)
}

// exitCode is the status a command's error exits with, and what is
// left to say of it (nil when it was said already).
func exitCode(err error) (int, error) {
	if se := (*tracer.ExitError)(nil); errors.As(err, &se) {
		return se.Code, se.Err
	}
	return 1, err
}

// printError writes err to w, one line per joined error, each escaped:
// errors carry file names and input text.
func printError(w io.Writer, err error) {
	for _, line := range formats.ErrorLines(err) {
		fmt.Fprintf(w, "rdmatrace: %s\n", line)
	}
}
