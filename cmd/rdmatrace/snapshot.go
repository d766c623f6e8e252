package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/debugfs"
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/netns"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
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

// netnsFlag is --netns for the snapshot commands.
var netnsFlag = &cli.StringFlag{Name: "netns", Usage: "list from network namespace `NAME|PATH|all` (a name under /run/netns, a file such as /proc/PID/ns/net, or every named namespace and every one a process is in); needs CAP_SYS_ADMIN to enter"}

// detailsFlag is iproute2's -d: keys its default output leaves out.
func detailsFlag(what string) cli.Flag {
	// No backquotes in Usage: urfave/cli takes them for a value's name.
	return &cli.BoolFlag{Name: "details", Aliases: []string{"d"}, Usage: "show details, as rdma -d does (-dd is the same): " + what}
}

// output is how a listing is written: -o and -j, through the one -o
// parser, and -p.
type output struct {
	Format formats.Format
	Pretty bool
}

// outputOptions are a snapshot's -o (table, text, json, ndjson and
// extra), -j (a JSON array) and -p.
func outputOptions(c *cli.Context, extra ...formats.Format) (output, error) {
	valid := append([]formats.Format{formats.FormatTable, formats.FormatText, formats.FormatJSON, formats.FormatNDJSON}, extra...)
	f, err := formats.ParseFormat(c.String("output"), c.Bool("json"), formats.FormatJSON, valid...)
	if err != nil {
		return output{}, usagef("%w", err)
	}
	return output{Format: f, Pretty: c.Bool("pretty")}, nil
}

// write writes a listing as o says.
func (o output) write(l formats.Listing) error { return l.Write(os.Stdout, o.Format, o.Pretty) }

// snapOptions are a netlink listing's: how it is written, the namespaces
// it asks (--netns), and where the raw replies go (--nl-record).
type snapOptions struct {
	Out      output
	NetNS    string
	NLRecord string
}

func snapshotOptions(c *cli.Context, extra ...formats.Format) (snapOptions, error) {
	out, err := outputOptions(c, extra...)
	return snapOptions{Out: out, NetNS: c.String("netns"), NLRecord: c.String("nl-record")}, err
}

// showList is the use case of dev, link, res and stat: list in our
// namespace, or in each --netns names, and write what was found (a JSON
// array whose objects say their namespace, or a section per namespace in
// the human views); decode problems after it, exit status 1.
func showList[T any](o snapOptions, list func(*nldev.Client) ([]T, error), view formats.List[T]) error {
	record, err := recordReplies(o.NLRecord)
	if err != nil {
		return err
	}
	where := nldev.Where{NetNS: o.NetNS, Record: record, Note: func(s string) { logf("%s", s) }}
	secs, err := nldev.List(where, list)
	if err != nil {
		return exitWith(1, err)
	}
	var names []string
	var ls []formats.Listing
	var errs []error
	for _, s := range secs {
		names, ls, errs = append(names, s.NetNS), append(ls, view.Of(s.Rows)), append(errs, s.Err)
	}
	if o.NetNS == "" {
		if note := nldev.HiddenNote(netns.Roots{}); note != "" {
			logf("%s", note)
		}
		proc.WarnPIDNamespace(os.Stderr)
		err = o.Out.write(ls[0])
	} else {
		err = formats.WriteSections(os.Stdout, o.Out.Format, o.Out.Pretty, names, ls)
	}
	if err != nil {
		return err
	}
	return partial(errors.Join(errs...))
}

// recordReplies writes each raw netlink reply to a file of dir, made now
// as the invoking user's, when asked (test fixtures); nil when dir is "".
func recordReplies(dir string) (func(cmd uint16, b []byte, err error), error) {
	rec, err := nldev.RecordDir(dir, outputOwner(), func(err error) { logf("recording netlink replies: %v", err) })
	if err != nil {
		return nil, fmt.Errorf("--nl-record: %s", formats.Sanitize(err.Error()))
	}
	return rec, nil
}

// dial opens the netlink client, recording raw replies in dir when asked.
func dial(dir string) (*nldev.Client, error) {
	record, err := recordReplies(dir)
	if err != nil {
		return nil, err
	}
	cl, err := nldev.Dial()
	if err == nil {
		cl.Record = record
	}
	return cl, err
}

// partial reports decode problems on stderr after the good data was shown,
// and turns them into exit status 1.
func partial(err error) error {
	if err == nil {
		return nil
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		logf("%s", line)
	}
	return exitWith(1, nil)
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
			o, name, err := showOptions(c)
			if err != nil {
				return err
			}
			list := func(cl *nldev.Client) ([]rdma.Device, error) { return cl.DevicesNamed(name) }
			return showList(o, list, formats.DeviceList(c.Bool("details")))
		},
	}
}

// dropShow drops iproute2's verb before the object: show, or any
// abbreviation of it (s, sh, sho), or list.
func dropShow(args []string) []string {
	if len(args) > 0 && (args[0] != "" && strings.HasPrefix("show", args[0]) || args[0] == "list") {
		return args[1:]
	}
	return args
}

// showOptions are dev's and link's: [show] [NAME], and the output.
func showOptions(c *cli.Context) (o snapOptions, name string, err error) {
	args := dropShow(c.Args().Slice())
	if len(args) > 1 {
		return o, "", usagef("unexpected argument %q", args[1])
	}
	o, err = snapshotOptions(c)
	return o, first(args), err
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
			o, name, err := showOptions(c)
			if err != nil {
				return err
			}
			dev, port, _ := strings.Cut(name, "/")
			list := func(cl *nldev.Client) ([]rdma.Port, error) { return cl.PortsNamed(dev, port) }
			return showList(o, list, formats.PortList(c.Bool("details")))
		},
	}
}

// resFilterFlagKeys are the --filter-KEY flags of res and ps: the keys
// every resource type has; the others are iproute2 words only.
var resFilterFlagKeys = []string{"pid", "comm", "dev", "cgroup", "container", "pod", "job"}

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

// resQuery is what res lists: per-device counts (of Dev only, when not
// ""), or the resources of Type that Filter keeps.
type resQuery struct {
	Counts  bool
	Dev     string
	Type    rdma.ResType
	Filter  *filter.Filter
	Details bool
}

func runRes(c *cli.Context) error {
	o, q, err := resOptions(c)
	if err != nil {
		return err
	}
	if q.Counts {
		return showList(o, func(cl *nldev.Client) ([]rdma.Summary, error) { return cl.SummariesOf(q.Dev) }, formats.SummaryList)
	}
	x := enrich.New(enrich.Options{})
	q.Filter.SelectProcesses(x) // pid PID: the process, every thread of it
	if o.Out.Format == formats.FormatLegacy {
		return showLegacy(o, x, q)
	}
	list := func(cl *nldev.Client) ([]rdma.Resource, error) {
		inv := cl.Inventory(nldev.InventoryOptions{Types: []rdma.ResType{q.Type}, Owners: x, Keep: q.Filter.Match})
		return inv.Resources, inv.Err()
	}
	return showList(o, list, formats.ResourceList(q.Type, q.Details))
}

func resOptions(c *cli.Context) (snapOptions, resQuery, error) {
	words := positional(c.Args().Slice())
	args := dropShow(words)
	// After show, iproute2's `rdma res show DEV`: a word that is no type
	// names a device, said unknown with the devices there are.
	afterShow := len(args) < len(words)
	o, err := snapshotOptions(c, formats.FormatLegacy)
	if err != nil {
		return o, resQuery{}, err
	}
	q := resQuery{Details: c.Bool("details")}
	extra := filterOptions(c, strings.Fields(c.String("filter")), resFilterFlagKeys...)
	legacy := o.Out.Format == formats.FormatLegacy
	if len(args) == 0 || len(args) == 1 && (isDevice(args[0]) || afterShow && !isResType(args[0])) {
		q.Counts, q.Dev = true, first(args)
		switch {
		case len(extra) > 0:
			return o, q, usagef("filters need a resource type (qp, cm_id, cq, mr, pd, ctx, srq)")
		case legacy:
			return o, q, usagef("-o legacy needs the cm_id type: rdmatrace res cm_id -o legacy")
		}
		return o, q, nil
	}
	if q.Type, err = rdma.ParseResType(args[0]); err != nil {
		return o, q, usagef("%w", err)
	}
	switch {
	case legacy && q.Type != rdma.ResCMID:
		return o, q, usagef("-o legacy is the rdma_cm layout: it shows cm_id only, not %s", q.Type)
	case legacy && o.NetNS != "":
		return o, q, usagef("-o legacy shows one namespace: leave out --netns")
	}
	if q.Filter, err = filter.ParseArgs(q.Type, append(args[1:], extra...)); err != nil {
		return o, q, usagef("%w", err)
	}
	return o, q, nil
}

// showLegacy prints live cm_ids in the legacy rdma_cm debugfs layout with
// PID and COMM columns (the "rdmastat" asked for in 2009), so that a live
// host and an old dump can be compared side by side.
func showLegacy(o snapOptions, x *enrich.Enricher, q resQuery) error {
	cl, err := dial(o.NLRecord)
	if err != nil {
		return err
	}
	defer cl.Close()
	inv := cl.Inventory(nldev.InventoryOptions{Types: []rdma.ResType{q.Type}, Owners: x, Keep: q.Filter.Match})
	if err := cl.AddLegacyColumns(inv.Devices, inv.Resources); err != nil {
		return err
	}
	if err := debugfs.WriteLegacy(os.Stdout, inv.Resources, []string{"PID", "COMM"}); err != nil {
		return err
	}
	return partial(inv.Err())
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

// isResType says whether name is a resource type (or its abbreviation).
func isResType(name string) bool {
	_, err := rdma.ParseResType(name)
	return err == nil
}

func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
