package main

import (
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/doctor"
)

func init() {
	commands = append(commands, doctorCommand())
}

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check whether a process or container can use RDMA where it runs, and say how to fix what cannot",
		ArgsUsage: "[--pid PID | --container ID | -- CMD [ARG...]]\n\n" +
			"   Checks, for the process (rdmatrace itself when none is named): RDMA modules loaded;\n" +
			"   devices visible in its network namespace; a port ACTIVE; /dev/infiniband/rdma_cm and\n" +
			"   uverbsN present where it sees files and read-write for its uid or groups; device\n" +
			"   cgroup programs on its cgroup; RLIMIT_MEMLOCK against what its MRs hold; a RoCE GID\n" +
			"   for an address of its namespace; with --port, that port is free for rdma_cm (and, on\n" +
			"   iWARP, in the host's TCP port space); its live QPs' transport settings and which\n" +
			"   are risky (min_rnr_timer 0, rnr_retry 7, timeout 0, a link-local or RoCE v1 GID, a\n" +
			"   path MTU the netdev cannot carry), from the recording --qp-trace names. With -- CMD,\n" +
			"   CMD is started as the user who ran sudo (--user to choose) and checked once it has\n" +
			"   run for --after (or, when it ended sooner, our context with its user's credentials);\n" +
			"   a CMD that runs on (a server) is waited for, and rdmatrace says so (Ctrl-C ends both).",
		Description: "EXAMPLES:\n" +
			"   rdmatrace doctor --pid 1234\n" +
			"   rdmatrace doctor --container 4f3c2b1a0e9d\n" +
			"   rdmatrace doctor --port 7174          # why does rdma_listen say Address already in use?\n" +
			"   rdmatrace doctor --pid 1234 --qp-trace trace.ndjson   # its QPs' timeouts and retries\n" +
			"   rdmatrace doctor -j -- ib_write_lat -d rxe0\n\n" +
			"EXIT STATUS:\n" + exitStatus("a check failed, or the process could not be read", ""),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "pid", Aliases: []string{"p"}, Usage: "the process to check"},
			&cli.StringFlag{Name: "container", Usage: "check a process of the container whose id starts with `ID` (its first, by pid)"},
			&cli.UintFlag{Name: "port", Usage: "also check the rdma_cm TCP `PORT` it uses or will use (rping -p, perftest -p): held by another process's rdma_cm ID, or, on iWARP, by a TCP socket of its network namespace"},
			&cli.UintFlag{Name: "qpn", Usage: "check the transport settings of the live QP `LQPN` only (whoever owns it, unless --pid, --container or -- CMD names the owner)"},
			&cli.StringFlag{Name: "qp-trace", Usage: "a recording of rdmatrace trace -w (`FILE`) with the modifies that set its QPs' timeouts, retries, path MTU and GID: the netlink dump has none of them"},
			&cli.DurationFlag{Name: "after", Value: 2 * time.Second, Usage: "with -- CMD: check it once it has run this long"},
			userFlag,
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "JSON array: check, status, detail, fix (same as -o json)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: outText, Usage: "output format: text, json, ndjson"},
		},
		Action: runDoctor,
	}
}

func runDoctor(c *cli.Context) error {
	o, format, err := doctorOptions(c)
	if err != nil {
		return err
	}
	r, err := doctor.Run(o)
	if err != nil {
		r.Wait()
		return exitWith(1, err)
	}
	err = formats.WriteDoctor(os.Stdout, format, &r)
	r.Wait() // a program that runs on, after its report
	if err != nil {
		return err
	}
	if r.Failed() {
		return exitWith(1, nil)
	}
	return nil
}

func doctorOptions(c *cli.Context) (o doctor.Options, f formats.Format, err error) {
	words, argv := splitCommand(c.Args().Slice())
	if len(words) > 0 {
		return o, f, usagef("unexpected %q: the program goes after --", words[0])
	}
	if (c.IsSet("pid") && c.IsSet("container")) || (c.IsSet("pid") || c.IsSet("container")) && len(argv) > 0 {
		return o, f, usagef("name one of --pid, --container and -- CMD")
	}
	o = doctor.Options{PID: c.Int("pid"), Container: c.String("container"), Argv: argv, After: c.Duration("after"),
		Port: uint16(c.Uint("port")), QPN: uint32(c.Uint("qpn")), QPTrace: c.String("qp-trace"),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Log: func(s string) { logf("%s", s) }}
	switch p, q := c.Uint("port"), c.Uint("qpn"); {
	case c.IsSet("pid") && o.PID <= 0:
		return o, f, usagef("--pid %d: expected a process ID", o.PID)
	case o.After < 0:
		return o, f, usagef("--after %v: expected a positive duration such as 2s", o.After)
	case c.IsSet(userFlag.Name) && len(argv) == 0:
		return o, f, usagef("--user chooses who runs -- CMD: no CMD given")
	case c.IsSet("container") && len(o.Container) < 4:
		return o, f, usagef("--container wants at least 4 characters of the id")
	case p > 65535 || c.IsSet("port") && p == 0:
		return o, f, usagef("--port %d: a port is 1 to 65535", p)
	case q > 1<<24-1 || c.IsSet("qpn") && q == 0:
		return o, f, usagef("--qpn %d: a QP number is 1 to 16777215", q)
	}
	if f, err = formats.ParseFormat(c.String("output"), c.Bool("json"), formats.FormatJSON, formats.FormatText, formats.FormatJSON, formats.FormatNDJSON); err != nil {
		return o, f, usagef("%w", err)
	}
	if len(argv) > 0 {
		o.User, err = programUser(c.String(userFlag.Name))
	}
	return o, f, err
}
