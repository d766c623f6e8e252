package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ps"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

func init() { commands = append(commands, psCommand()) }

func psCommand() *cli.Command {
	return &cli.Command{
		Name:      "ps",
		Usage:     "list the processes and kernel modules that hold RDMA resources, with their counts, devices and open /dev/infiniband files (an lsof for RDMA)",
		ArgsUsage: " ",
		Description: "One row per process (its threads folded in) and per kernel module ([module]),\n" +
			"from the kernel's RDMA netlink snapshot of every resource type.\n\n" +
			"-p PID[,PID...] selects processes, as in procps and lsof (ranges too: 2000-2100);\n" +
			"a -p that no PID follows is iproute2's -p, pretty JSON (also --pretty).\n" +
			"Another user's open files need root (or CAP_SYS_PTRACE) to read: without it they\n" +
			"show as \"-\", and a line on stderr says so.\n\n" +
			filterHelp(resFilterFlagKeys...) +
			"EXAMPLES:\n" +
			"   rdmatrace ps\n" +
			"   rdmatrace ps --filter-dev mlx5_0 -j\n" +
			"   rdmatrace ps -p 1234,5678              # as procps' ps -p and lsof -p\n" +
			"   rdmatrace -j -p ps -p 1234             # -p before ps is iproute2's pretty\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: no RDMA netlink, a reply that could not be decoded (what could be is shown)", ""),
		// -p is the PID here (procps, lsof); hoistFlags makes a -p with no
		// PID after it --pretty.
		Flags: append(append(listFlagsNoPretty(&cli.BoolFlag{Name: "pretty", Usage: "indent the JSON, as rdma -p -j does (-p when no PID follows)"}),
			filterFlags(true, resFilterFlagKeys...)...),
			&cli.BoolFlag{Name: "details", Aliases: []string{"d"}, Usage: "accepted as in iproute2 (-dd too); ps shows all it has already"}),
		Action: runPs,
	}
}

func runPs(c *cli.Context) error {
	format, err := listFormat(c, "ps")
	if err != nil {
		return err
	}
	words := filterWords(c, nil, resFilterFlagKeys...)
	en := enrich.New(enrich.Options{})
	filters := map[rdma.ResType]*filter.Filter{}
	for _, t := range rdma.ResourceTypes {
		if filters[t], err = filter.ParseArgs(t, words); err != nil {
			return usage(c, "%w", err)
		}
		filters[t].SelectProcesses(en) // -p PID: the process, every thread of it
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	inv := cl.Inventory(nldev.InventoryOptions{Owners: en, Keep: func(r *rdma.Resource) bool { return filters[r.Type].Match(r) }})
	proc.WarnPIDNamespace(os.Stderr)
	// Older kernels dump no ctx or srq: "-" in the table, no key in JSON.
	rows := ps.Rows(inv.Resources, en, "", inv.Unknown...)
	objs := make([]formats.Object, len(rows))
	for i := range rows {
		objs[i] = formats.ProcessObject(&rows[i])
	}
	err = writeObjects(os.Stdout, format, c.Bool("pretty"), objs, nil, func() *formats.Table { return formats.ProcessTable(rows) })
	if err != nil {
		return err
	}
	if note := ps.UnreadableNote(ps.Unreadable(rows, "")); note != "" {
		fmt.Fprintf(os.Stderr, "rdmatrace: ps: %s\n", note)
	}
	return partial(inv.Partial())
}

// listFlags are the output flags of the commands that list a table: -j,
// -p and -o table|json|ndjson.
// listFormat checks a list command's arguments (none) and returns its
// output format: table, json or ndjson (what says "-o text" is wrong).
func listFormat(c *cli.Context, what string) (string, error) {
	if err := maxArgs(c, 0); err != nil {
		return "", err
	}
	format, err := outputFormat(c)
	if err != nil {
		return "", err
	}
	if format == outText {
		return "", usage(c, "-o text: %s has table, json and ndjson", what)
	}
	return format, nil
}

func listFlags(more ...cli.Flag) []cli.Flag {
	return append(listFlagsNoPretty(&cli.BoolFlag{Name: "pretty", Aliases: []string{"p"}, Usage: "indent the JSON, as rdma -p -j does"}), more...)
}

// listFlagsNoPretty is listFlags with the command's own --pretty, for
// commands where -p means something else.
func listFlagsNoPretty(pretty cli.Flag, more ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "JSON array (same as -o json)"},
		pretty,
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: outTable, Usage: "output format: table, json, ndjson"},
	}, more...)
}
