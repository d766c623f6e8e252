package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ps"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
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
	o, filters, err := psOptions(c)
	if err != nil {
		return err
	}
	l, err := ps.List(filters)
	if err != nil {
		return err
	}
	proc.WarnPIDNamespace(os.Stderr)
	if err := o.write(formats.ProcessList.Of(l.Rows)); err != nil {
		return err
	}
	if l.Note != "" {
		logf("ps: %s", l.Note)
	}
	return partial(l.Partial)
}

// psOptions are the output and each type's filter of the --filter-KEY
// flags.
func psOptions(c *cli.Context) (output, map[rdma.ResType]*filter.Filter, error) {
	o, err := listOptions(c, "ps")
	if err != nil {
		return o, nil, err
	}
	words := filterOptions(c, nil, resFilterFlagKeys...)
	filters := map[rdma.ResType]*filter.Filter{}
	for _, t := range rdma.ResourceTypes {
		if filters[t], err = filter.ParseArgs(t, words); err != nil {
			return o, nil, usagef("%w", err)
		}
	}
	return o, filters, nil
}

// listOptions check a list command's arguments (none) and read its
// output: table, json or ndjson (what says "-o text" is wrong).
func listOptions(c *cli.Context, what string) (output, error) {
	if err := maxArgs(c.Args().Slice(), 0); err != nil {
		return output{}, err
	}
	o, err := outputOptions(c)
	if err == nil && o.Format == formats.FormatText {
		err = usagef("-o text: %s has table, json and ndjson", what)
	}
	return o, err
}

// listFlags are the output flags of the commands that list a table: -j,
// -p and -o table|json|ndjson.
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
