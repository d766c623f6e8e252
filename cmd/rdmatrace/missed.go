package main

import (
	"fmt"
	"os"

	"github.com/rdmatrace/rdmatrace/tracer"
)

// missedSummary tells what the kernel did not run and what the kretprobe
// fallbacks lost between entry and return, when there is anything to tell.
func missedSummary(t *tracer.Tracer) {
	if n, err := t.SideDrops(); err == nil && n > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: WARNING: %d creates, QP state changes or file closes lost by the kprobe fallbacks (a return without its saved entry)\n", n)
	}
	m := t.Missed()
	switch {
	case m.Kprobe > 0 || m.Recursion > 0:
		fmt.Fprintf(os.Stderr, "rdmatrace: WARNING: the kernel missed %d kprobe/kretprobe hits and skipped %d program runs (another BPF program was running): their events are lost\n", m.Kprobe, m.Recursion)
	case !m.KprobeKnown && hasKprobes(t):
		fmt.Fprintln(os.Stderr, "rdmatrace: this kernel does not report missed kprobes (Linux 6.7+ does): a kretprobe beyond maxactive would go unnoticed")
	}
}

func hasKprobes(t *tracer.Tracer) bool {
	for _, r := range t.Reports {
		if r.Variant == "kprobe" || r.Variant == "kprobe+kretprobe" {
			return true
		}
	}
	return false
}
