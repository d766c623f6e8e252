package tracer

import (
	"strings"
	"testing"
)

// TestEveryModifyVariantMarksTheModifyAtEntry: rxe carries out a modify
// to ERR with the function it moves a failed QP to ERR with, and the BPF
// side tells the two apart by a mark _ib_modify_qp's entry sets for the
// thread. So every variant of the hook has a program at the entry
// (fentry, kprobe) besides the one that reports at the return: a variant
// with fexit alone reported each disconnect over rxe twice.
func TestEveryModifyVariantMarksTheModifyAtEntry(t *testing.T) {
	h := hookNamed(t, "_ib_modify_qp")
	for _, v := range h.variants {
		entry, exit := false, false
		for _, p := range v.progs {
			switch {
			case p.kind == kprobe || p.kind == tracing && strings.HasPrefix(p.name, "fentry_"):
				entry = true
			case p.kind == kretprobe || p.kind == tracing && strings.HasPrefix(p.name, "fexit_"):
				exit = true
			}
		}
		if !entry || !exit {
			t.Errorf("_ib_modify_qp's variant %s has programs %+v: entry %v, return %v; want both", v.name, v.progs, entry, exit)
		}
	}
}
