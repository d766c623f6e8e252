package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/doctor"
	"github.com/rdmatrace/rdmatrace/internal/host/launch"
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
	_, argv := splitCommand(c.Args().Slice())
	if words, _ := splitCommand(c.Args().Slice()); len(words) > 0 {
		return usage(c, "unexpected %q: the program goes after --", words[0])
	}
	targets := 0
	for _, set := range []bool{c.IsSet("pid"), c.IsSet("container"), len(argv) > 0} {
		if set {
			targets++
		}
	}
	if targets > 1 {
		return usage(c, "name one of --pid, --container and -- CMD")
	}
	after := c.Duration("after")
	if after < 0 {
		return usage(c, "--after %v: expected a positive duration such as 2s", after)
	}
	if c.IsSet(userFlag.Name) && len(argv) == 0 {
		return usage(c, "--user chooses who runs -- CMD: no CMD given")
	}
	format := c.String("output")
	if c.Bool("json") {
		format = outJSON
	}
	if format != outText && format != outJSON && format != outNDJSON {
		return usage(c, "unknown output format %q: valid formats are text, json, ndjson", format)
	}
	pid, note := os.Getpid(), ""
	var prog *launch.Program
	var as *launch.Identity // who ran CMD, when it ended before the check
	switch {
	case c.IsSet("pid"):
		pid = c.Int("pid")
	case c.IsSet("container"):
		id := c.String("container")
		if len(id) < 4 {
			return usage(c, "--container wants at least 4 characters of the id")
		}
		p, err := doctor.ContainerPID(id)
		if err != nil {
			return exitWith(1, err)
		}
		pid = p
	case len(argv) > 0:
		id, err := programUser(c)
		if err != nil {
			return err
		}
		prog, err = launch.Start(launch.Options{Argv: argv, User: id, NoCgroup: true, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
		if err != nil {
			return exitWith(1, fmt.Errorf("start %s: %w", formats.Sanitize(argv[0]), err))
		}
		announceUser(argv[0], id)
		done := make(chan error, 1)
		go func() { done <- prog.Wait() }()
		select {
		case err := <-done:
			// Its context is ours but for its credentials.
			prog, as = nil, id
			ctx := "which is ours"
			if !id.Keep {
				ctx = "ours as " + id.String()
			}
			note = fmt.Sprintf("%s ended (%s) before %v: its context, %s, was checked", argv[0], exitText(err), after, ctx)
		case <-time.After(after):
			pid = prog.Cmd.Process.Pid
			// Checked, it runs on (a server): rdmatrace waits for it, as
			// a shell waits for its foreground program, and says so.
			defer func() {
				fmt.Fprintf(os.Stderr, "rdmatrace: doctor: %s (pid %d) runs on after the check: waiting for it to exit (Ctrl-C, or kill %d, ends it)\n",
					formats.Sanitize(argv[0]), pid, pid)
				<-done
			}()
		}
	}
	t, err := doctor.ReadTarget("", pid)
	if err != nil {
		return exitWith(1, err)
	}
	if as != nil && !as.Keep {
		t = t.As(as.UID, append([]uint32{as.GID}, as.Groups...))
	}
	if p := c.Uint("port"); p > 65535 || c.IsSet("port") && p == 0 {
		return usage(c, "--port %d: a port is 1 to 65535", p)
	}
	t.Port = uint16(c.Uint("port"))
	if q := c.Uint("qpn"); q > 1<<24-1 || c.IsSet("qpn") && q == 0 {
		return usage(c, "--qpn %d: a QP number is 1 to 16777215", q)
	}
	t.QPN, t.QPAnyOwner, t.QPTrace = uint32(c.Uint("qpn")), c.IsSet("qpn") && targets == 0, c.String("qp-trace")
	v := doctor.Gather(t)
	if err := doctor.ReadQPTrace(t, &v); err != nil {
		if v.QPSettings == nil {
			return exitWith(1, fmt.Errorf("--qp-trace: %s", formats.Sanitize(err.Error())))
		}
		fmt.Fprintf(os.Stderr, "rdmatrace: --qp-trace: %s\n", formats.Sanitize(err.Error()))
	}
	fs := doctor.Check(t, v)
	objs := make([]formats.Object, 0, len(fs))
	failed := false
	for _, f := range fs {
		failed = failed || f.Status == doctor.Fail
		objs = append(objs, findingObject(f))
	}
	if format == outText {
		fmt.Printf("%s[%d]:\n", formats.Sanitize(t.Comm), t.PID)
		if note != "" {
			fmt.Println("  " + formats.Sanitize(note))
		}
		for _, f := range fs {
			fmt.Printf("  %-4s %-14s%s\n", f.Status, f.Check, formats.Sanitize(f.Detail))
			if f.Fix != "" && f.Status != doctor.Pass {
				fmt.Printf("       %-14sfix: %s\n", "", formats.Sanitize(f.Fix))
			}
		}
	} else if err := writeObjects(os.Stdout, format, false, objs, nil, nil); err != nil {
		return err
	}
	if failed {
		return exitWith(1, nil)
	}
	return nil
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func findingObject(f doctor.Finding) formats.Object {
	o := formats.Object{
		{Key: "check", Kind: formats.Str, Str: f.Check},
		{Key: "status", Kind: formats.Str, Str: strings.ToLower(f.Status.String())},
		{Key: "detail", Kind: formats.Str, Str: f.Detail},
	}
	if f.Fix != "" && f.Status != doctor.Pass {
		o = append(o, formats.Field{Key: "fix", Kind: formats.Str, Str: f.Fix})
	}
	return o
}
