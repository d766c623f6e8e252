package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/tracer"
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

// listHooks is `trace -l [PATTERN]`: the hooks, each of their variants,
// and whether the running kernel has their targets.
func listHooks(o output, pattern string) error {
	ls, notes, err := tracer.List(pattern)
	if err != nil {
		if strings.HasPrefix(err.Error(), "pattern ") {
			return usagef("%w", err)
		}
		return exitWith(1, err)
	}
	if err := o.write(hookList.Of(ls)); err != nil {
		return err
	}
	for _, n := range notes {
		logf("trace -l: %s", formats.Sanitize(n))
	}
	if len(ls) == 0 {
		return exitWith(1, fmt.Errorf("no hook matches %q", pattern))
	}
	return nil
}

// hookList lays out trace -l's rows.
var hookList = formats.List[tracer.Listed]{Object: listedObject, Table: listedTable}

func listedTable(ls []tracer.Listed) *formats.Table {
	t := formats.NewTable("HOOK", "VARIANT", "PROBES", "HERE", "NOTE")
	for i := range ls {
		l := &ls[i]
		t.Append(l.Hook, l.Variant, strings.Join(l.Probes, " "), l.Here(), l.Note())
	}
	return t
}

func listedObject(l *tracer.Listed) formats.Object {
	o := formats.Object{
		{Key: "hook", Kind: formats.Str, Str: l.Hook},
		{Key: "variant", Kind: formats.Str, Str: l.Variant},
		{Key: "probes", Kind: formats.StrList, List: l.Probes},
		{Key: "present", Kind: formats.Str, Str: l.Here()},
	}
	if l.Where != "" {
		o = append(o, formats.Field{Key: "where", Kind: formats.Str, Str: l.Where})
	}
	if l.Why != "" {
		o = append(o, formats.Field{Key: "why", Kind: formats.Str, Str: l.Why})
	}
	if l.Module != "" {
		o = append(o, formats.Field{Key: "module", Kind: formats.Str, Str: l.Module})
	}
	if l.Followed {
		o = append(o, formats.Field{Key: "follow-pid-only", Kind: formats.Bool, Num: 1})
	}
	return o
}
