// Command rdmabench measures the verbs paths of an RDMA device: data-path
// latency (lat, perftest's method), rdma_cm connection setup (conn, cmtime's
// steps), the control path (ctrl) and the connection burst of a job's
// start (burst). Its timing loops are C (package
// verbs); with tracing (tracing.go) it also says what the kernel did while a
// sample was slow.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/rdmatrace/rdmatrace/internal/base/buildver"
	"github.com/urfave/cli/v2"
)

// version is stamped by the build (-ldflags -X main.version=...); a plain
// go build says what it can from the module's build information.
var version string

func versionString() string { return buildver.Version(version) }

// commands are rdmabench's commands; the man page generator (man.go) adds
// itself when built.
var commands []*cli.Command

// usageError is a command line that could not be parsed: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usage(c *cli.Context, err error, _ bool) error {
	if c.Command != nil && c.Command.Name != "" {
		err = fmt.Errorf("%s: %w", c.Command.Name, err)
	}
	return &usageError{err}
}

// exitStatus is the EXIT STATUS section of a help text: what 1 means for
// the command ("" for every command's).
func exitStatus(one string) string {
	if one == "" {
		one = "an error: no device, port or GID, a bad value (the line says which), a peer that\n" +
			"      stopped answering, a --plot or --perfetto file not written, --trace with no tracer"
	}
	return "   0  success, the results printed\n" +
		"   1  " + one + "\n" +
		"   2  usage error: an unknown command or flag, a flag value that is not a number"
}

const appDescription = "Each command times one path of the verbs stack as the tool it imitates does (perftest's\n" +
	"ib_*_lat, cmtime, a control-path sweep), in C loops with no cgo per iteration. In one process\n" +
	"(the default) rdmabench also traces itself with rdmatrace: lat's headline table is always an\n" +
	"untraced pass, and a traced pass follows with its own table, the tracer's cost and the outliers'\n" +
	"causes. --no-trace measures alone.\n\n" +
	"EXAMPLES:\n" +
	"   rdmabench lat -d rxe0                        # ib_write_lat's 2-byte latency, then traced\n" +
	"   rdmabench lat -d rxe0 -a --no-trace          # every size from 2 to 8M, one table, untraced\n" +
	"   rdmabench lat -d rxe0 --server               # one end on this host ...\n" +
	"   rdmabench lat -d mlx5_0 --client 10.0.0.1    # ... and the other on that one\n" +
	"   rdmabench conn -d rxe0 -n 20 -c 4            # rdma_cm connection setup, step by step\n" +
	"   rdmabench ctrl -d rxe0 --sizes 4K-1G         # PD, CQ, QP, transitions, reg_mr over sizes\n" +
	"   rdmabench burst -d rxe0 -P 4 -n 2500         # a job's start: 4 ranks × 2500 QPs at once, then traced\n\n" +
	"EXIT STATUS:\n%s\n   Each command's --help has its examples."

func newApp() *cli.App {
	cmds := append([]*cli.Command{latCommand(), connCommand(), ctrlCommand(), burstCommand(), burstRankCommand()}, commands...)
	for _, c := range cmds {
		if !c.Hidden {
			c.Flags = append(c.Flags, tracingFlags...)
		}
		c.OnUsageError = usage
	}
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print the version and exit"}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintln(c.App.Writer, "rdmabench", c.App.Version) }
	return &cli.App{
		Name:            "rdmabench",
		Usage:           "verbs microbenchmarks: latency, rdma_cm connection setup, control path, a job's connection burst",
		UsageText:       "rdmabench COMMAND [OPTIONS]",
		Description:     fmt.Sprintf(appDescription, exitStatus("")),
		Version:         versionString(),
		Commands:        cmds,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // main prints the one line
		OnUsageError:    usage,
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(c.App.ErrWriter, "rdmabench: no command %q: lat, conn, ctrl or burst (rdmabench --help)\n", name)
			os.Exit(2)
		},
	}
}

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "rdmabench: %v\n", err)
		if errors.As(err, new(*usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
