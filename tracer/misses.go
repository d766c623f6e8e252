package tracer

import (
	"github.com/cilium/ebpf/link"
)

// SideDrops is how many events the kretprobe fallbacks lost between a
// function's entry and its return: the side map (entry_args, modify_args,
// closing) could not take the entry, or the return found none (evicted
// from the LRU map, or its kprobe was missed). 0 with fentry/fexit.
func (t *Tracer) SideDrops() (uint64, error) {
	m := t.maps["side_drops"]
	if m == nil {
		return 0, nil
	}
	var perCPU []uint64
	if err := m.Lookup(uint32(0), &perCPU); err != nil {
		return 0, err
	}
	var n uint64
	for _, v := range perCPU {
		n += v
	}
	return n, nil
}

// Misses says how often the kernel did not run an attached program.
type Misses struct {
	// Kprobe counts the kprobes and kretprobes the kernel missed (for a
	// kretprobe, mostly calls beyond maxactive in flight at once), summed
	// over rdmatrace's kprobe links. The kernel reports it in link info
	// since Linux 6.7 (so 6.12 has it, 6.1 does not); KprobeKnown is false
	// when no kprobe link could say, and Kprobes is how many could.
	Kprobe      uint64
	KprobeKnown bool
	Kprobes     int
	// Recursion counts runs skipped because the program, or another BPF
	// program, was already running on the CPU: nested in an interrupt, or
	// on a preemptible kernel an fentry/fexit program preempted there
	// (program stats, Linux 5.12+; kprobes count there since 6.7,
	// fentry/fexit and tp_btf since 5.12). RecursionBy names the
	// programs that skipped runs, with their counts.
	Recursion   uint64
	RecursionBy []ProgMisses
}

// ProgMisses is one program's count of skipped runs.
type ProgMisses struct {
	Prog string
	N    uint64
}

// Missed sums what the kernel reports of missed runs.
func (t *Tracer) Missed() Misses {
	var m Misses
	for _, l := range t.links {
		info, err := l.Info()
		if err != nil || info.Type != link.PerfEventType {
			continue
		}
		if k := info.PerfEvent().Kprobe(); k != nil {
			m.Kprobe += k.Missed
			m.KprobeKnown = true
			m.Kprobes++
		}
	}
	for _, p := range t.progs {
		if st, err := p.prog.Stats(); err == nil && st.RecursionMisses > 0 {
			m.Recursion += st.RecursionMisses
			m.RecursionBy = append(m.RecursionBy, ProgMisses{p.name, st.RecursionMisses})
		}
	}
	return m
}
