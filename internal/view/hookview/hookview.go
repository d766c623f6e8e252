// Package hookview lays out trace -l's hooks, as bpftrace -l lists its
// probes: a table, or an object per variant.
package hookview

import (
	"strings"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/trace"
)

// List lays out trace -l's rows: a table, or an object per variant.
var List = formats.List[trace.Hook]{Object: Object, Table: Table}

// Table is trace -l's human view.
func Table(ls []trace.Hook) *formats.Table {
	t := formats.NewTable("HOOK", "VARIANT", "PROBES", "HERE", "NOTE")
	for i := range ls {
		l := &ls[i]
		t.Append(l.Hook, l.Variant, strings.Join(l.Probes, " "), l.Here(), l.Note())
	}
	return t
}

// Object is one variant of trace -l, for -j and -o ndjson.
func Object(l *trace.Hook) formats.Object {
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
