package main

import (
	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/trace"
	"github.com/rdmatrace/rdmatrace/internal/view/hookview"
)

// listFlag is trace's -l, as bpftrace -l lists its probes.
var listFlag = &cli.BoolFlag{Name: "list", Aliases: []string{"l"},
	Usage: "list the hooks (those matching a glob PATTERN argument: trace -l 'rdma_cma:*') and whether this kernel has where each attaches; needs no root"}

// traceListOptions are trace -l's: its format (the human view is a table)
// and the glob PATTERN.
func traceListOptions(c *cli.Context) (o output, pattern string, err error) {
	if err := maxArgs(c.Args().Slice(), 1); err != nil {
		return o, "", err
	}
	if o.Format, err = streamOptions(c, formats.FormatText, formats.FormatJSON, formats.FormatNDJSON); err != nil {
		return o, "", err
	}
	if o.Format == formats.FormatText {
		o.Format = formats.FormatTable
	}
	return o, first(positional(c.Args().Slice())), nil
}

// listHooks is `trace -l [PATTERN]` (trace.ListHooks).
func listHooks(o output, pattern string) error {
	return trace.ListHooks(pattern, func(ls []trace.Hook) error { return o.write(hookview.List.Of(ls)) })
}
