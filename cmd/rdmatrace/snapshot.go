package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

func init() {
	commands = append(commands, devCommand(), linkCommand(), resCommand())
}

// Output formats of the snapshot commands.
const (
	outTable  = "table"
	outText   = "text"
	outJSON   = "json"
	outNDJSON = "ndjson"
	outLegacy = "legacy"
)

func outputFlags(extra ...string) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "JSON array with iproute2's keys (same as -o json)"},
		&cli.BoolFlag{Name: "pretty", Aliases: []string{"p"}, Usage: "indent the JSON, as rdma -p -j does"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: outTable,
			Usage: "output format: " + strings.Join(append([]string{outTable, outText, outJSON, outNDJSON}, extra...), ", ")},
		netnsFlag,
		&cli.StringFlag{Name: "nl-record", Hidden: true, Usage: "write the kernel's raw netlink replies to DIR (test fixtures)"},
	}
}

// detailsFlag is iproute2's -d: keys its default output leaves out.
func detailsFlag(what string) cli.Flag {
	// No backquotes in Usage: urfave/cli takes them for a value's name.
	return &cli.BoolFlag{Name: "details", Aliases: []string{"d"}, Usage: "show details, as rdma -d does (-dd is the same): " + what}
}

// outputFormat is a snapshot's -o and -j (a JSON array), through the one
// -o parser: table, text, json, ndjson and extra.
func outputFormat(c *cli.Context, extra ...string) (string, error) {
	valid := []formats.Format{formats.FormatTable, formats.FormatText, formats.FormatJSON, formats.FormatNDJSON}
	for _, e := range extra {
		valid = append(valid, formats.Format(e))
	}
	f, err := formats.ParseFormat(c.String("output"), c.Bool("json"), formats.FormatJSON, valid...)
	if err != nil {
		return "", usage(c, "%w", err)
	}
	return string(f), nil
}

// dial opens the netlink client, recording raw replies when asked.
func dial(c *cli.Context) (*nldev.Client, error) {
	cl, err := nldev.Dial()
	if err != nil {
		return nil, err
	}
	if dir := c.String("nl-record"); dir != "" {
		if err := safefile.MkdirAll(dir, outputOwner()); err != nil {
			return nil, fmt.Errorf("--nl-record: %s", formats.Sanitize(err.Error()))
		}
		seq := 0
		cl.Record = func(cmd uint16, b []byte, err error) {
			seq++
			if err == nil {
				err = safefile.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d-cmd%d.nl", seq, cmd)), b, outputOwner())
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "rdmatrace: recording netlink replies: %v\n", err)
			}
		}
	}
	return cl, nil
}

// partial reports decode problems on stderr after the good data was shown,
// and turns them into exit status 1.
func partial(err error) error {
	if err == nil {
		return nil
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(os.Stderr, "rdmatrace: %s\n", formats.Sanitize(line))
	}
	return exitWith(1, nil)
}

// writeObjects writes a snapshot's objects in format: JSON (an array,
// indented when pretty) and NDJSON by formats' object sinks, text by
// text (each object's lines), the table by table.
func writeObjects(w io.Writer, format string, pretty bool, objs []formats.Object, text func(*formats.TextWriter, int) error, table func() *formats.Table) error {
	switch format {
	case outJSON, outNDJSON:
		s := formats.NewObjectSink(w, formats.Format(format), pretty, formats.Objects)
		for _, o := range objs {
			if err := s.Write(o); err != nil {
				return err
			}
		}
		return s.Close()
	case outText:
		tw := formats.NewTextWriter(w)
		for i := range objs {
			if err := text(tw, i); err != nil {
				return err
			}
		}
		return tw.Flush()
	}
	t := table()
	if t.Len() == 0 {
		return nil
	}
	return t.Render(w)
}

func devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "list RDMA devices (like `rdma dev`)",
		Description: "EXAMPLES:\n" +
			"   rdmatrace dev\n" +
			"   rdmatrace dev show mlx5_0 -d\n" +
			"   rdmatrace -j -p dev\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: no RDMA netlink, an unknown device, a reply that could not be decoded", ""),
		ArgsUsage: "[show] [DEV]",
		Flags:     append(outputFlags(), detailsFlag("adaptive-moderation and the capabilities (caps), plus the protocol and the number of ports; the table gets a column for each")),
		Action: func(c *cli.Context) error {
			arg, format, err := showArgs(c)
			if err != nil {
				return err
			}
			details := c.Bool("details")
			return snapshot(c, format, func(cl *nldev.Client) listing {
				devs, derr := cl.Devices()
				devs, missing := selectDevices(devs, arg)
				objs := make([]formats.Object, len(devs))
				for i := range devs {
					objs[i] = formats.DeviceObject(&devs[i], details)
				}
				table := func() *formats.Table { return formats.DeviceTable(devs) }
				if details {
					table = func() *formats.Table { return objectTable(objs) }
				}
				return listing{objs: objs, err: derr, missing: missing,
					text:  func(tw *formats.TextWriter, i int) error { return tw.Device(&devs[i], details) },
					table: table}
			})
		},
	}
}

// selectDevices keeps the named device, or all when name is empty; a name
// that is not there is an error that lists the devices that are.
func selectDevices(devs []rdma.Device, name string) ([]rdma.Device, error) {
	if name == "" {
		return devs, nil
	}
	var names []string
	for _, d := range devs {
		if d.Name == name {
			return []rdma.Device{d}, nil
		}
		names = append(names, formats.Sanitize(d.Name))
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("unknown device %q: there is no RDMA device", name)
	}
	return nil, fmt.Errorf("unknown device %q: the devices are %s", name, strings.Join(names, ", "))
}

// selectPorts lists the ports of device devName (all when ""), of
// portName only when that is not "". err is a decode problem; missing
// says the device or port is not there.
func selectPorts(cl *nldev.Client, devName, portName string) (ports []rdma.Port, err, missing error) {
	devs, derr := cl.Devices()
	devs, missing = selectDevices(devs, devName)
	if missing != nil {
		return nil, derr, missing
	}
	ports, perr := cl.Ports(devs)
	if portName != "" {
		var keep []rdma.Port
		var have []string
		for _, p := range ports {
			if fmt.Sprint(p.Port) == portName {
				keep = append(keep, p)
			}
			have = append(have, fmt.Sprint(p.Port))
		}
		if len(keep) == 0 && perr == nil {
			return nil, derr, fmt.Errorf("device %s has no port %q (it has %s)", formats.Sanitize(devName), portName, strings.Join(have, ", "))
		}
		ports = keep
	}
	return ports, errors.Join(derr, perr), nil
}

// dropShow drops iproute2's verb before the object: show, or any
// abbreviation of it (s, sh, sho), or list.
func dropShow(args []string) []string {
	if len(args) > 0 && (args[0] != "" && strings.HasPrefix("show", args[0]) || args[0] == "list") {
		return args[1:]
	}
	return args
}

// showArgs reads `dev`'s and `link`'s arguments (`[show] [NAME]`) and
// output flags.
func showArgs(c *cli.Context) (name, format string, err error) {
	args := dropShow(c.Args().Slice())
	if len(args) > 1 {
		return "", "", usage(c, "unexpected argument %q", args[1])
	}
	format, err = outputFormat(c)
	return first(args), format, err
}

func linkCommand() *cli.Command {
	return &cli.Command{
		Name:  "link",
		Usage: "list RDMA ports with their state and network device (like `rdma link`)",
		Description: "EXAMPLES:\n" +
			"   rdmatrace link\n" +
			"   rdmatrace link show rxe0/1 -d\n" +
			"   rdmatrace link -j\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: no RDMA netlink, an unknown device or port, a reply that could not be decoded", ""),
		ArgsUsage: "[show] [DEV[/PORT]]",
		Flags:     append(outputFlags(), detailsFlag("the netdev's index in text")),
		Action: func(c *cli.Context) error {
			arg, format, err := showArgs(c)
			if err != nil {
				return err
			}
			details := c.Bool("details")
			devName, portName, _ := strings.Cut(arg, "/")
			return snapshot(c, format, func(cl *nldev.Client) listing {
				ports, err, missing := selectPorts(cl, devName, portName)
				if missing != nil {
					return listing{missing: missing}
				}
				objs := make([]formats.Object, len(ports))
				for i := range ports {
					objs[i] = formats.PortObject(&ports[i])
				}
				return listing{objs: objs, err: err,
					text:  func(tw *formats.TextWriter, i int) error { return tw.Port(&ports[i], details) },
					table: func() *formats.Table { return formats.PortTable(ports) }}
			})
		},
	}
}

// resFilterFlagKeys are the --filter-KEY flags of res and ps: the keys
// every resource type has; the others are iproute2 words only.
var resFilterFlagKeys = []string{"pid", "comm", "dev", "cgroup", "container", "pod"}

func resCommand() *cli.Command {
	return &cli.Command{
		Name:    "res",
		Aliases: []string{"resource"},
		Usage:   "list RDMA resources and their owners (like `rdma res show`)",
		ArgsUsage: "[show] [DEV | qp|cm_id|cq|mr|pd|ctx|srq [FILTER VALUE]...]\n\n" +
			"   Without a type: per-device counts (of DEV only, when named). Filters use\n" +
			"   iproute2's names and values, e.g. `rdmatrace res qp type RC state RTS pid 1234`;\n" +
			"   numbers take lists and ranges (lqpn 1-10,20), names take lists (state RTS,RTR).\n" +
			"   pid, comm and dev are also --filter-pid, --filter-comm, --filter-dev.",
		Description: "EXAMPLES:\n" +
			"   rdmatrace res                                  # counts per device\n" +
			"   rdmatrace res show rxe0                        # counts of one device\n" +
			"   rdmatrace res s qp type RC state RTS pid 1234  # iproute2's words and abbreviations\n" +
			"   rdmatrace -j -p res qp --filter-comm rping     # pretty JSON, ptcpdump-style filter\n" +
			"   rdmatrace res cm_id -o legacy                  # the old rdma_cm debugfs layout\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: no RDMA netlink, a reply that could not be decoded (what could be is shown)", ""),
		Flags: append(append(outputFlags(outLegacy),
			&cli.StringFlag{Name: "filter", Aliases: []string{"f"}, Usage: "filter expression, e.g. 'pid 1234 type RC state RTS'"},
			detailsFlag("the table gets a column for every key of -j (rq-psn, sq-psn, iova, ...); -dd is -d")),
			filterFlags(false, resFilterFlagKeys...)...),
		Action: runRes,
	}
}

func runRes(c *cli.Context) error {
	words := positional(c)
	args := dropShow(words)
	// After show, iproute2's `rdma res show DEV`: a word that is no type
	// names a device, said unknown with the devices there are.
	afterShow := len(args) < len(words)
	format, err := outputFormat(c, outLegacy)
	if err != nil {
		return err
	}
	extra := filterWords(c, strings.Fields(c.String("filter")), resFilterFlagKeys...)
	if len(args) == 0 || len(args) == 1 && (isDevice(args[0]) || afterShow && !isResType(args[0])) {
		if len(extra) > 0 {
			return usage(c, "filters need a resource type (qp, cm_id, cq, mr, pd, ctx, srq)")
		}
		if format == outLegacy {
			return usage(c, "-o legacy needs the cm_id type: rdmatrace res cm_id -o legacy")
		}
		return runSummary(c, format, first(args))
	}
	t, err := rdma.ParseResType(args[0])
	if err != nil {
		return usage(c, "%w", err)
	}
	if format == outLegacy && t != rdma.ResCMID {
		return usage(c, "-o legacy is the rdma_cm layout: it shows cm_id only, not %s", t)
	}
	f, err := filter.ParseArgs(t, append(args[1:], extra...))
	if err != nil {
		return usage(c, "%w", err)
	}
	f.SelectProcesses(enrich.New(enrich.Options{})) // pid PID: the process, every thread of it
	if format == outLegacy {
		if c.String("netns") != "" {
			return usage(c, "-o legacy shows one namespace: leave out --netns")
		}
		cl, err := dial(c)
		if err != nil {
			return err
		}
		defer cl.Close()
		inv := cl.Inventory(resInventory(t, f))
		if err := writeLegacy(os.Stdout, cl, inv.Devices, inv.Resources); err != nil {
			return err
		}
		return partial(inv.Err())
	}
	return snapshot(c, format, func(cl *nldev.Client) listing {
		inv := cl.Inventory(resInventory(t, f))
		rs := inv.Resources
		objs := make([]formats.Object, len(rs))
		for i := range rs {
			objs[i] = formats.ResourceObject(&rs[i])
		}
		table := func() *formats.Table { return formats.ResourceTable(t, rs) }
		if c.Bool("details") {
			table = func() *formats.Table { return objectTable(objs) }
		}
		return listing{objs: objs, err: inv.Err(),
			text:  func(tw *formats.TextWriter, i int) error { return tw.Resource(&rs[i]) },
			table: table}
	})
}

// resInventory asks for the resources of type t that f keeps, each owner
// named and placed before f sees it (cgroup, container and pod filter on
// the place).
func resInventory(t rdma.ResType, f *filter.Filter) nldev.InventoryOptions {
	return nldev.InventoryOptions{Types: []rdma.ResType{t}, Owners: enrich.New(enrich.Options{}), Keep: f.Match}
}

// sysClassInfiniband is where the kernel lists RDMA devices by name.
var sysClassInfiniband = "/sys/class/infiniband"

// isDevice tells `res show DEV` from `res show TYPE`: a word that is no
// resource type and names a device. Sysfs answers without netlink, so a
// typo of a type stays a usage error on any machine.
func isDevice(name string) bool {
	if _, err := rdma.ParseResType(name); err == nil || strings.Contains(name, "/") || name == "." || name == ".." {
		return false
	}
	_, err := os.Stat(filepath.Join(sysClassInfiniband, name))
	return err == nil
}

// runSummary shows the per-device counts, of dev only when not "".
func runSummary(c *cli.Context, format, dev string) error {
	return snapshot(c, format, func(cl *nldev.Client) listing {
		sums, serr := cl.Summaries()
		if dev != "" {
			var keep []rdma.Summary
			for _, s := range sums {
				if s.DevName == dev {
					keep = append(keep, s)
				}
			}
			sums = keep
			if len(sums) == 0 {
				// As dev show says it: the devices there are; and the
				// types, for a type mistyped.
				devs, _ := cl.Devices()
				if _, missing := selectDevices(devs, dev); missing != nil {
					return listing{missing: fmt.Errorf("%w (nor is it a resource type: %s)", missing, resTypeNames())}
				}
			}
		}
		objs := make([]formats.Object, len(sums))
		for i := range sums {
			objs[i] = formats.SummaryObject(&sums[i])
		}
		return listing{objs: objs, err: serr,
			text:  func(tw *formats.TextWriter, i int) error { return tw.Summary(&sums[i]) },
			table: func() *formats.Table { return formats.SummaryTable(sums) }}
	})
}

// isResType says whether name is a resource type (or its abbreviation).
func isResType(name string) bool {
	_, err := rdma.ParseResType(name)
	return err == nil
}

// resTypeNames lists the resource types, for messages.
func resTypeNames() string {
	names := make([]string, len(rdma.ResourceTypes))
	for i, t := range rdma.ResourceTypes {
		names[i] = t.String()
	}
	return strings.Join(names, ", ")
}

func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
