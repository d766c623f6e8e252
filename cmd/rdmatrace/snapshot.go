package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mdlayher/netlink"
	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/filter"
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/nldev"
	"github.com/rdmatrace/rdmatrace/proc"
	"github.com/rdmatrace/rdmatrace/rdma"
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
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: outTable,
			Usage: "output format: " + strings.Join(append([]string{outTable, outText, outJSON, outNDJSON}, extra...), ", ")},
		&cli.StringFlag{Name: "nl-record", Hidden: true, Usage: "write the kernel's raw netlink replies to DIR (test fixtures)"},
	}
}

// detailsFlag is iproute2's -d: keys its default output leaves out.
func detailsFlag(what string) cli.Flag {
	return &cli.BoolFlag{Name: "details", Aliases: []string{"d"}, Usage: "show details, as `rdma -d`: " + what}
}

func outputFormat(c *cli.Context, extra ...string) (string, error) {
	if c.Bool("json") {
		return outJSON, nil
	}
	o := c.String("output")
	for _, v := range append([]string{outTable, outText, outJSON, outNDJSON}, extra...) {
		if o == v {
			return o, nil
		}
	}
	return "", usage(c, "unknown output format %q: valid formats are %s", o,
		strings.Join(append([]string{outTable, outText, outJSON, outNDJSON}, extra...), ", "))
}

// dial opens the netlink client, recording raw replies when asked.
func dial(c *cli.Context) (*nldev.Client, error) {
	cl, err := nldev.Dial()
	if err != nil {
		return nil, err
	}
	if dir := c.String("nl-record"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		seq := 0
		cl.Record = func(cmd uint16, msgs []netlink.Message) {
			seq++
			b, err := nldev.MarshalMessages(msgs)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d-cmd%d.nl", seq, cmd)), b, 0o644)
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

func writeObjects(w io.Writer, format string, objs []formats.Object, text func(*formats.TextWriter, int) error, table func() *formats.Table) error {
	switch format {
	case outJSON:
		jw := formats.NewJSONArrayWriter(w)
		for _, o := range objs {
			if err := jw.Write(o); err != nil {
				return err
			}
		}
		return jw.Close()
	case outNDJSON:
		nw := formats.NewNDJSONWriter(w)
		for _, o := range objs {
			if err := nw.Write(o); err != nil {
				return err
			}
		}
		return nw.Flush()
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
		Name:      "dev",
		Usage:     "list RDMA devices (like `rdma dev`)",
		ArgsUsage: "[DEV]",
		Flags:     append(outputFlags(), detailsFlag("adaptive-moderation, plus the protocol and the number of ports")),
		Action: func(c *cli.Context) error {
			if err := maxArgs(c, 1); err != nil {
				return err
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			cl, err := dial(c)
			if err != nil {
				return err
			}
			defer cl.Close()
			devs, derr := cl.Devices()
			devs = selectDevices(devs, c.Args().First())
			objs := make([]formats.Object, len(devs))
			for i := range devs {
				objs[i] = formats.DeviceObject(&devs[i], c.Bool("details"))
			}
			err = writeObjects(os.Stdout, format, objs,
				func(tw *formats.TextWriter, i int) error { return tw.Device(&devs[i], c.Bool("details")) },
				func() *formats.Table { return formats.DeviceTable(devs) })
			if err != nil {
				return err
			}
			return partial(derr)
		},
	}
}

// selectDevices keeps the named device, or all when name is empty.
func selectDevices(devs []rdma.Device, name string) []rdma.Device {
	if name == "" {
		return devs
	}
	var out []rdma.Device
	for _, d := range devs {
		if d.Name == name {
			out = append(out, d)
		}
	}
	return out
}

func linkCommand() *cli.Command {
	return &cli.Command{
		Name:      "link",
		Usage:     "list RDMA ports with their state and network device (like `rdma link`)",
		ArgsUsage: "[DEV[/PORT]]",
		Flags:     append(outputFlags(), detailsFlag("the netdev's index in text")),
		Action: func(c *cli.Context) error {
			if err := maxArgs(c, 1); err != nil {
				return err
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			cl, err := dial(c)
			if err != nil {
				return err
			}
			defer cl.Close()
			devName, portName, _ := strings.Cut(c.Args().First(), "/")
			devs, derr := cl.Devices()
			ports, perr := cl.Ports(selectDevices(devs, devName))
			if portName != "" {
				var keep []rdma.Port
				for _, p := range ports {
					if fmt.Sprint(p.Port) == portName {
						keep = append(keep, p)
					}
				}
				ports = keep
			}
			objs := make([]formats.Object, len(ports))
			for i := range ports {
				objs[i] = formats.PortObject(&ports[i])
			}
			err = writeObjects(os.Stdout, format, objs,
				func(tw *formats.TextWriter, i int) error { return tw.Port(&ports[i], c.Bool("details")) },
				func() *formats.Table { return formats.PortTable(ports) })
			if err != nil {
				return err
			}
			return partial(errors.Join(derr, perr))
		},
	}
}

func resCommand() *cli.Command {
	return &cli.Command{
		Name:    "res",
		Aliases: []string{"resource"},
		Usage:   "list RDMA resources and their owners (like `rdma res show`)",
		ArgsUsage: "[show] [qp|cm_id|cq|mr|pd|ctx|srq] [FILTER VALUE]...\n\n" +
			"   Without a type: per-device counts. Filters use iproute2's names and\n" +
			"   values, e.g. `rdmatrace res qp type RC state RTS pid 1234`;\n" +
			"   numbers take lists and ranges (lqpn 1-10,20), names take lists (state RTS,RTR).",
		Flags: append(outputFlags(outLegacy),
			&cli.StringFlag{Name: "filter", Aliases: []string{"f"}, Usage: "filter expression, e.g. 'pid 1234 type RC state RTS'"}),
		Action: runRes,
	}
}

func runRes(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) > 0 && (args[0] == "show" || args[0] == "list") {
		args = args[1:]
	}
	format, err := outputFormat(c, outLegacy)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		if c.String("filter") != "" {
			return usage(c, "--filter needs a resource type (qp, cm_id, cq, mr, pd, ctx, srq)")
		}
		if format == outLegacy {
			return usage(c, "-o legacy needs the cm_id type: rdmatrace res cm_id -o legacy")
		}
		return runSummary(c, format)
	}
	t, err := rdma.ParseResType(args[0])
	if err != nil {
		return usage(c, "%w", err)
	}
	if format == outLegacy && t != rdma.ResCMID {
		return usage(c, "-o legacy is the rdma_cm layout: it shows cm_id only, not %s", t)
	}
	words := append(args[1:], strings.Fields(c.String("filter"))...)
	f, err := filter.ParseArgs(t, words)
	if err != nil {
		return usage(c, "%w", err)
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	devs, derr := cl.Devices()
	rs, rerr := cl.Resources(t, devs)
	var comms proc.CommCache
	kept := rs[:0]
	for i := range rs {
		r := &rs[i]
		if !r.Owner.Kernel() {
			r.Owner.Comm = comms.Comm(r.Owner.PID)
		}
		if f.Match(r) {
			kept = append(kept, *r)
		}
	}
	if format == outLegacy {
		err = writeLegacy(os.Stdout, cl, devs, kept)
	} else {
		err = writeResources(os.Stdout, format, t, kept)
	}
	if err != nil {
		return err
	}
	return partial(errors.Join(derr, rerr))
}

func writeResources(w io.Writer, format string, t rdma.ResType, rs []rdma.Resource) error {
	objs := make([]formats.Object, len(rs))
	for i := range rs {
		objs[i] = formats.ResourceObject(&rs[i])
	}
	return writeObjects(w, format, objs,
		func(tw *formats.TextWriter, i int) error { return tw.Resource(&rs[i]) },
		func() *formats.Table { return formats.ResourceTable(t, rs) })
}

func runSummary(c *cli.Context, format string) error {
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	sums, serr := cl.Summaries()
	objs := make([]formats.Object, len(sums))
	for i := range sums {
		objs[i] = formats.SummaryObject(&sums[i])
	}
	err = writeObjects(os.Stdout, format, objs,
		func(tw *formats.TextWriter, i int) error { return tw.Summary(&sums[i]) },
		func() *formats.Table { return formats.SummaryTable(sums) })
	if err != nil {
		return err
	}
	return partial(serr)
}
