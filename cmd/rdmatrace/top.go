package main

import (
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/analysis/top"
	"github.com/rdmatrace/rdmatrace/internal/source/nlpoll"
	"github.com/rdmatrace/rdmatrace/internal/view/topview"
)

func init() { commands = append(commands, topCommand()) }

func topCommand() *cli.Command {
	return &cli.Command{
		Name:  "top",
		Usage: "a live view of RDMA per process (or pod, job, container) and per device: objects, QP states, creates, connects and failures per second",
		Description: "Counts the tracer's events as they come (thousands a second at a job's start) and\n" +
			"refreshes the screen every -d: per owner and per device, the live objects by type,\n" +
			"the QPs by state, creates, destroys, connections and failures per second and the last\n" +
			"failure in words; above them the node's totals, the events lost and the ports' state.\n" +
			"Keys: q quits, s changes the sort (c creates, l live, p QPs, f failures, e connects,\n" +
			"n name), the arrows scroll. With -b, or when the output is no terminal, it writes a\n" +
			"plain table every -d instead, as top -b does.\n\n" +
			"Where BPF cannot be used (or with --netlink) it says so and counts through RDMA\n" +
			"netlink: the resources compared every -d; no rdma_cm events (connects), nor what\n" +
			"lives between two dumps.\n\n" +
			"EXAMPLES:\n" +
			"   sudo rdmatrace top                         # full screen, by process\n" +
			"   sudo rdmatrace top --by pod                # one row per Kubernetes pod\n" +
			"   sudo rdmatrace top --job 4242              # only Slurm job 4242's processes\n" +
			"   sudo rdmatrace top -b -n 3 -d 1 > top.txt  # three tables a second apart\n" +
			"   rdmatrace top --netlink -d 2               # no BPF: netlink's dumps\n\n" +
			"EXIT STATUS:\n" + exitStatus("nothing could be counted: neither BPF nor RDMA netlink (the line says why)", ""),
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "batch", Aliases: []string{"b"}, Usage: "write plain tables one after the other, as top -b (the default when the output is no terminal)"},
			&cli.IntFlag{Name: "iterations", Aliases: []string{"n"}, Usage: "stop after `N` refreshes (0: until q or Ctrl-C)"},
			&cli.StringFlag{Name: "delay", Aliases: []string{"d"}, Value: "1", Usage: "refresh every `SECONDS` (as top's -d: 1, 0.5; or a duration: 500ms)"},
			&cli.StringFlag{Name: "by", Value: "process", Usage: "one row per `OWNER`: process, pod, job (Slurm) or container"},
			&cli.StringFlag{Name: "sort", Value: "creates", Usage: "sort the owners by `KEY` first: " + strings.Join(top.SortKeys(), ", ")},
			&cli.IntFlag{Name: "max-owners", Value: top.DefaultMaxOwners, Usage: "at most `N` owner rows; the others are counted in one row, other"},
			readyFileFlag("once counting has begun"), netlinkFlag, ringSizeFlag, fallbackFlag, btfFlag, verboseFlag,
		}, filterFlags(false, topFilterKeys...)...),
		Action: runTop,
	}
}

// topFilterKeys select the owners top counts (and --pid).
var topFilterKeys = []string{"pod", "job"}

func runTop(c *cli.Context) error {
	o, err := topOptions(c)
	if err != nil {
		return err
	}
	return top.Run(o)
}

func topOptions(c *cli.Context) (o top.Options, err error) {
	if err := checkTracerFlags(c); err != nil {
		return o, err
	}
	if c.NArg() > 0 {
		return o, usagef("top takes no arguments: %q", c.Args().First())
	}
	if o.By, err = top.ParseBy(c.String("by")); err != nil {
		return o, usagef("--by: %w", err)
	}
	key, err := top.ParseSortKey(c.String("sort"))
	if err != nil {
		return o, usagef("--sort: %w", err)
	}
	if o.Delay, err = top.ParseDelay(c.String("delay")); err != nil {
		return o, usagef("-d: %w", err)
	}
	o.Iterations, o.MaxOwners, o.MinPoll = c.Int("iterations"), c.Int("max-owners"), nlpoll.MinInterval
	switch {
	case o.Iterations < 0:
		return o, usagef("-n %d: expected 0 (no limit) or more", o.Iterations)
	case o.MaxOwners < 1:
		return o, usagef("--max-owners %d: expected 1 or more", o.MaxOwners)
	}
	if o.Session, err = sessionOptions(c, nil); err != nil {
		return o, err
	}
	if c.Bool("netlink") {
		o.NoBPF = "--netlink asked for none"
	}
	if f, err := eventFilterOptions(c, nil, topFilterKeys...); err != nil {
		return o, usagef("%w", err)
	} else if f.HasPlace() || c.IsSet("pid") {
		o.Keep = f.Match
	}
	o.FullScreen = !c.Bool("batch") && isTerminal(os.Stdout)
	if o.FullScreen {
		o.Open = func(stop func()) (top.View, error) { return topview.OpenScreen(key, stop) }
	} else {
		o.Open = func(func()) (top.View, error) { return topview.NewBatch(os.Stdout, key), nil }
	}
	return o, nil
}
