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
)

// commands is filled by each command's file in init, so commands stay in
// files of their own.
var commands []*cli.Command

// exitError carries a process exit status through cli's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// exitWith returns an error that makes rdmatrace exit with code; err may be
// nil when the message was already printed.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	return &cli.App{
		Name:                 "rdmatrace",
		Usage:                "see who holds which RDMA connection, queue pair and port, since when, and what happened to it",
		Commands:             commands,
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		ExitErrHandler:       func(*cli.Context, error) {}, // main decides the status
	}
}

func main() {
	app := newApp()
	err := app.Run(hoistFlags(os.Args, app.Commands))
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	printError(os.Stderr, err)
	os.Exit(code)
}

// printError writes err to w, one line per joined error, each escaped:
// errors carry file names and input text.
func printError(w io.Writer, err error) {
	for _, line := range formats.ErrorLines(err) {
		fmt.Fprintf(w, "rdmatrace: %s\n", line)
	}
}
