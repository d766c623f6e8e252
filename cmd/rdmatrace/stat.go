package main

import (
	"errors"
	"slices"
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

// objectTable lays out objects as columns, one per key: stat's counters,
// and the tables of -d (dev -d, res qp -d), which show every key the JSON
// has. A key only some objects have goes after the key it follows in them
// (rqpn after lqpn, though a GSI QP has none); a key an object lacks is "-".
func objectTable(objs []formats.Object) *formats.Table {
	var keys []string
	for _, o := range objs {
		at := 0 // where the next new key goes: after the last key seen
		for _, f := range o {
			if i := slices.Index(keys, f.Key); i >= 0 {
				at = i + 1
				continue
			}
			keys = slices.Insert(keys, at, f.Key)
			at++
		}
	}
	col := map[string]int{}
	for i, k := range keys {
		col[k] = i
	}
	head := make([]string, len(keys))
	for i, k := range keys {
		head[i] = strings.ToUpper(k)
	}
	t := formats.NewTable(head...)
	for _, o := range objs {
		row := make([]string, len(keys))
		for i := range o {
			row[col[o[i].Key]] = o[i].Text()
		}
		t.Append(row...)
	}
	return t
}
