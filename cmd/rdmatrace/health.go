package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/analysis/health"
	"github.com/rdmatrace/rdmatrace/internal/view/healthview"
	"github.com/rdmatrace/rdmatrace/tracer"
)

func init() { commands = append(commands, healthCommand()) }

func healthCommand() *cli.Command {
	return &cli.Command{
		Name:  "health",
		Usage: "say whether this node's RDMA is fit to take work now (exit 0 healthy, 1 not, 2 could not tell)",
		ArgsUsage: "[--since DUR] [--speed GBPS] [-d DEV] [-j]\n\n" +
			"   Checks: every port ACTIVE (and at --speed); with --since, nothing wrong for that\n" +
			"   long: no DEVICE_FATAL or device removed, no port that went down, fewer than\n" +
			"   --qp-errors QP errors and --failed-creates failed creates on a device (a QP's move\n" +
			"   to ERR that its disconnect or destroy follows is no error), from the tracer's events\n" +
			"   where BPF runs, else from the ports' states polled and the QPs RDMA netlink lists in\n" +
			"   ERR (fatal events and failed creates are then not seen; the output says which);\n" +
			"   on a RoCE port, a RoCE v2 GID for each address of its netdev; every rdma cgroup\n" +
			"   limit (rdma.max) with --headroom of it free. One line a problem; what could not be\n" +
			"   checked here is said. As node-problem-detector's custom plugins and Slurm's prolog\n" +
			"   or NHC read it.",
		Description: "EXAMPLES:\n" +
			"   rdmatrace health\n" +
			"   rdmatrace health --since 10s --speed 100\n" +
			"   rdmatrace health -j\n\n" +
			"EXIT STATUS:\n" +
			"   0  healthy (by every check that could tell)\n" +
			"   1  not healthy: a line a problem\n" +
			"   2  could not tell (no check could read what it needs), or a usage error",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "since", Usage: "also watch the node for `DUR` (the tracer's events, or polling without BPF) and judge what happens in that time (0: the node's state only)"},
			&cli.Float64Flag{Name: "speed", Usage: "the speed every port must run at, in `GBPS` (sysfs rate; 0: any)"},
			&cli.StringFlag{Name: "dev", Aliases: []string{"d"}, Usage: "only the device `DEV`"},
			&cli.IntFlag{Name: "qp-errors", Value: health.DefaultQPErrors, Usage: "this many QP errors on a device within --since is a storm"},
			&cli.IntFlag{Name: "failed-creates", Value: health.DefaultFailedCreates, Usage: "this many failed creates on a device within --since is a storm"},
			&cli.Float64Flag{Name: "headroom", Value: health.DefaultHeadroom, Usage: "the share of an rdma cgroup limit that must stay free (0.1: 10%)"},
			&cli.BoolFlag{Name: "no-bpf", Usage: "watch --since by polling sysfs and RDMA netlink, without the tracer"},
			readyFileFlag("once --since's watch has begun (the tracer's hooks attached, or the first poll read)"),
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "JSON array: the verdict (check node), then a finding an object: check, status, detail"},
		},
		Action: runHealth,
	}
}

func runHealth(c *cli.Context) error {
	o := health.RunOptions{Options: health.Options{Since: c.Duration("since"), Gbps: c.Float64("speed"), Dev: c.String("dev"),
		QPErrors: c.Int("qp-errors"), FailedCreates: c.Int("failed-creates"), Headroom: c.Float64("headroom")},
		Session: tracer.SessionOptions{NeedsRoot: needsRoot("health")}, ReadyFile: c.String("ready-file")}
	if err := o.Validate(); err != nil {
		return usagef("%w", err)
	}
	if c.Bool("no-bpf") {
		o.NoBPF = "--no-bpf"
	}
	r := health.Run(o)
	write := healthview.WriteText
	if c.Bool("json") {
		write = healthview.WriteJSON
	}
	if err := write(os.Stdout, &r); err != nil {
		return err
	}
	if r.Err != nil {
		return exitWith(2, r.Err) // who waited for the file never saw the window begin
	}
	if code := health.ExitCode(r.Verdict); code != 0 {
		return exitWith(code, nil)
	}
	return nil
}
