package main

import (
	"errors"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
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

func runStat(c *cli.Context) error {
	args := c.Args().Slice()
	what := "ports"
	if len(args) > 0 && args[0] == "qp" {
		what, args = "qp", args[1:]
		if len(args) > 0 && args[0] == "mode" {
			what, args = "mode", args[1:]
		}
	}
	if what != "mode" {
		args = dropShow(args)
	}
	link := ""
	switch {
	case len(args) == 2 && args[0] == "link":
		link = args[1]
	case len(args) != 0:
		return usage(c, "unexpected %q: want [qp [mode]] [show] [link DEV[/PORT]]", strings.Join(args, " "))
	}
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	devName, portName, _ := strings.Cut(link, "/")
	return snapshot(c, format, func(cl *nldev.Client) listing {
		ports, lerr, missing := selectPorts(cl, devName, portName)
		if missing != nil {
			return listing{missing: missing}
		}
		var objs []formats.Object
		var serr error
		var table func() *formats.Table
		switch what {
		case "ports":
			var ss []rdma.PortStats
			ss, serr = cl.PortStats(ports)
			for i := range ss {
				objs = append(objs, formats.PortStatsObject(&ss[i]))
			}
			table = func() *formats.Table { return formats.PortStatsTable(ss) }
		case "mode":
			var ms []rdma.QPCounterMode
			ms, serr = cl.QPCounterModes(ports)
			for i := range ms {
				objs = append(objs, formats.QPCounterModeObject(&ms[i]))
			}
		case "qp":
			var qs []rdma.QPCounter
			qs, serr = cl.QPCounters(ports)
			for i := range qs {
				objs = append(objs, formats.QPCounterObject(&qs[i]))
			}
		}
		text := func(tw *formats.TextWriter, i int) error {
			o := objs[i]
			name, _ := o.Get("ifname")
			port, _ := o.Get("port")
			return tw.Object("link "+name.Str+"/"+port.Text(), o, "ifindex", "ifname", "port")
		}
		if table == nil {
			table = func() *formats.Table { return objectTable(objs) }
		}
		return listing{objs: objs, err: errors.Join(lerr, serr), text: text, table: table}
	})
}

// objectTable lays objects with the same keys out as columns.
func objectTable(objs []formats.Object) *formats.Table {
	if len(objs) == 0 {
		return formats.NewTable()
	}
	var head []string
	for _, f := range objs[0] {
		head = append(head, strings.ToUpper(f.Key))
	}
	t := formats.NewTable(head...)
	for _, o := range objs {
		row := make([]string, len(o))
		for i := range o {
			row[i] = o[i].Text()
		}
		t.Append(row...)
	}
	return t
}
