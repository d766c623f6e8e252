package formats

import (
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/analysis/trace"
)

// HookList lays out trace -l's rows: a table, or an object per variant.
var HookList = List[trace.Hook]{Object: HookObject, Table: HookTable}

// HookTable is trace -l's human view.
func HookTable(ls []trace.Hook) *Table {
	t := NewTable("HOOK", "VARIANT", "PROBES", "HERE", "NOTE")
	for i := range ls {
		l := &ls[i]
		t.Append(l.Hook, l.Variant, strings.Join(l.Probes, " "), l.Here(), l.Note())
	}
	return t
}

// HookObject is one variant of trace -l, for -j and -o ndjson.
func HookObject(l *trace.Hook) Object {
	o := Object{
		{Key: "hook", Kind: Str, Str: l.Hook},
		{Key: "variant", Kind: Str, Str: l.Variant},
		{Key: "probes", Kind: StrList, List: l.Probes},
		{Key: "present", Kind: Str, Str: l.Here()},
	}
	if l.Where != "" {
		o = append(o, Field{Key: "where", Kind: Str, Str: l.Where})
	}
	if l.Why != "" {
		o = append(o, Field{Key: "why", Kind: Str, Str: l.Why})
	}
	if l.Module != "" {
		o = append(o, Field{Key: "module", Kind: Str, Str: l.Module})
	}
	if l.Followed {
		o = append(o, Field{Key: "follow-pid-only", Kind: Bool, Num: 1})
	}
	return o
}
