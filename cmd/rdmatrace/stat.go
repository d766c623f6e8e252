package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

func init() {
	commands = append(commands, statCommand())
}

func statCommand() *cli.Command {
	return &cli.Command{
		Name:    "stat",
		Aliases: []string{"statistic"},
		Usage:   "show port and QP counters (like `rdma statistic`)",
		ArgsUsage: "[show] [link DEV[/PORT]] | qp [show] [link DEV[/PORT]] | qp mode [link DEV[/PORT]]\n\n" +
			"   show: each port's counters (the device's hardware counters and the kernel's);\n" +
			"   qp show: the counters bound to QPs, with their QPs; qp mode: how each port binds\n" +
			"   QPs to counters (auto per type or pid, or manual).",
		Description: "EXAMPLES:\n" +
			"   rdmatrace stat\n" +
			"   rdmatrace stat show link rxe0/1 -j\n" +
			"   rdmatrace statistic qp mode\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: no RDMA netlink, an unknown device or port, a reply that could not be decoded", ""),
		Flags:  outputFlags(),
		Action: runStat,
	}
}

// statQuery is what stat shows: Ports' counters, the QP counters (QP)
// or the ports' counter modes (Mode), of Dev's Port (every one when "").
type statQuery struct {
	QP, Mode  bool
	Dev, Port string
}

func runStat(c *cli.Context) error {
	o, q, err := statOptions(c)
	if err != nil {
		return err
	}
	switch {
	case q.Mode:
		return showList(o, nldev.OnPorts(q.Dev, q.Port, (*nldev.Client).QPCounterModes), formats.QPCounterModeList)
	case q.QP:
		return showList(o, nldev.OnPorts(q.Dev, q.Port, (*nldev.Client).QPCounters), formats.QPCounterList)
	}
	return showList(o, nldev.OnPorts(q.Dev, q.Port, (*nldev.Client).PortStats), formats.PortStatsList)
}

// statOptions read rdma statistic's words: [qp [mode]] [show] [link
// DEV[/PORT]].
func statOptions(c *cli.Context) (snapOptions, statQuery, error) {
	var q statQuery
	args := c.Args().Slice()
	if len(args) > 0 && args[0] == "qp" {
		q.QP, args = true, args[1:]
		if len(args) > 0 && args[0] == "mode" {
			q.Mode, args = true, args[1:]
		}
	}
	if !q.Mode {
		args = dropShow(args)
	}
	link := ""
	switch {
	case len(args) == 2 && args[0] == "link":
		link = args[1]
	case len(args) != 0:
		return snapOptions{}, q, usagef("unexpected %q: want [qp [mode]] [show] [link DEV[/PORT]]", strings.Join(args, " "))
	}
	q.Dev, q.Port, _ = strings.Cut(link, "/")
	o, err := snapshotOptions(c)
	return o, q, err
}
