package tracer

import (
	"fmt"
	"io"
	"strings"
)

// losses is what was lost, as counted at one moment: events the ring
// buffer could not take, entries the kretprobe fallbacks lost between entry
// and return, and runs the kernel missed or skipped.
type losses struct {
	drops, side uint64
	busyDrops   uint64 // port-busy events, counted apart from drops
	shed        uint64 // the busiest owner's, refused at three quarters
	auxShed     uint64 // QP settings and spans, refused at half
	unnamed     uint64 // events delivered without their lookup (the namer's budget)
	missed      Misses
	// busiest names the owner the share holds back, for the warnings.
	busiest string
}

func readLosses(t *Tracer) losses {
	var l losses
	l.drops, _ = t.Drops()
	l.busyDrops, _ = t.BusyDrops()
	if l.shed, _ = t.Shed(); l.shed > 0 {
		l.busiest = busiestName(t)
	}
	l.auxShed, _ = t.AuxShed()
	l.side, _ = t.SideDrops()
	l.unnamed = t.NamingSkipped()
	l.missed = t.Missed()
	return l
}

// lossWatch warns of losses as soon as a tick sees them, each kind with
// what is new since the last warning and the total.
type lossWatch struct {
	last losses
	// dropHint says what to do about a full ring buffer.
	dropHint string
	// before runs once before any warning (to flush the output first).
	before func()
	// out gets the warnings.
	out io.Writer
}

func (w *lossWatch) check(t *Tracer) { w.update(readLosses(t), w.out) }

func (w *lossWatch) update(now losses, out io.Writer) {
	warned := false
	warn := func(format string, a ...any) {
		if !warned && w.before != nil {
			w.before()
		}
		warned = true
		fmt.Fprintf(out, "rdmatrace: WARNING: "+format+"\n", a...)
	}
	if n := now.drops; n > w.last.drops {
		warn("%d events dropped (ring buffer full; %d in all): %s", n-w.last.drops, n, w.dropHint)
	}
	if n := now.busyDrops; n > w.last.busyDrops {
		warn("%d port-busy events dropped (%d in all): %s", n-w.last.busyDrops, n, busyDropWhy)
	}
	if n := now.shed; n > w.last.shed {
		warn("%d events of the busiest owner%s refused (%d in all): %s", n-w.last.shed, now.busiest, n, shedWhy)
	}
	if n := now.auxShed; n > w.last.auxShed {
		warn("%d QP settings (qp-attr) or spans not traced (%d in all): %s", n-w.last.auxShed, n, auxShedWhy)
	}
	if n := now.unnamed; n > w.last.unnamed {
		warn("%d port-busy or SMC fallback events shown without who held the port or socket (%d in all): %s", n-w.last.unnamed, n, unnamedWhy)
	}
	if n := now.missed.Recursion; n > w.last.missed.Recursion {
		warn("the kernel skipped %d runs of rdmatrace's programs (%d in all: %s): their events are lost", n-w.last.missed.Recursion, n, recursionBy(now.missed))
	}
	if n := now.missed.Kprobe; n > w.last.missed.Kprobe {
		warn("the kernel missed %d kprobe/kretprobe hits (%d in all): their events are lost", n-w.last.missed.Kprobe, n)
	}
	if n := now.side; n > w.last.side {
		warn("%d creates, QP state changes or file closes lost by the kprobe fallbacks (%d in all; a return without its saved entry)", n-w.last.side, n)
	}
	w.last = now
}

// recursionBy lists the programs that skipped runs and why they can.
func recursionBy(m Misses) string {
	var by []string
	for _, p := range m.RecursionBy {
		by = append(by, fmt.Sprintf("%s %d", p.Prog, p.N))
	}
	return strings.Join(by, ", ") + "; a program already running on that CPU, e.g. an fentry program preempted on a preemptible kernel"
}

// busyDropWhy says why port-busy events are dropped before the ring is full.
const busyDropWhy = "they may fill only a quarter of the ring buffer, the rest is kept for the lifecycle events"

// unnamedWhy says why an event's holders were not looked up.
var unnamedWhy = fmt.Sprintf("the lookups, which read every process's open files, are kept off the reader's path and to %d a second with %d waiting, and the stop waits %v for them", namerRate, namerQueue, StopDrain)

// auxShedWhy says why auxiliary records are refused before the ring is
// full.
const auxShedWhy = "they may fill only half the ring buffer, the rest is kept for the lifecycle events (raise --ring-size to keep them)"

// shedWhy says why the busiest owner's events are refused before the ring
// is full.
const shedWhy = "the one that makes most events may fill three quarters of the ring buffer, the last quarter is kept for the others' (raise --ring-size, or filter it out)"

// busiestName is " (uid U, cgroup C)" for the owner the share holds back
// now, or "" when none leads.
func busiestName(t *Tracer) string {
	uid, cg, ok := t.Busiest()
	switch {
	case !ok:
		return ""
	case uid == NoUID:
		return fmt.Sprintf(" (kernel threads, cgroup %d)", cg)
	}
	return fmt.Sprintf(" (uid %d, cgroup %d)", uid, cg)
}

// writeBusySummary tells, at the end, what the port-busy limits held back
// or dropped, when anything.
func writeBusySummary(out io.Writer, held, dropped uint64) {
	if held > 0 {
		fmt.Fprintf(out, "rdmatrace: port-busy events: %d held back by the rate limit (one a second per process, four per user and cgroup, sixteen in all; the next one shown says how many before it)\n", held)
	}
	if dropped > 0 {
		fmt.Fprintf(out, "rdmatrace: WARNING: %d port-busy events dropped: %s\n", dropped, busyDropWhy)
	}
}

// endLosses tells, at the end, what the kernel did not run and what the
// kretprobe fallbacks lost between entry and return, when there is
// anything to tell.
func endLosses(l losses, kprobes bool, out io.Writer) {
	if l.unnamed > 0 {
		fmt.Fprintf(out, "rdmatrace: %d port-busy or SMC fallback events shown without who held the port or socket: %s\n", l.unnamed, unnamedWhy)
	}
	if l.shed > 0 {
		fmt.Fprintf(out, "rdmatrace: WARNING: %d events of the busiest owner%s refused: %s\n", l.shed, l.busiest, shedWhy)
	}
	if l.auxShed > 0 {
		fmt.Fprintf(out, "rdmatrace: WARNING: %d QP settings (qp-attr) or spans not traced: %s\n", l.auxShed, auxShedWhy)
	}
	if l.side > 0 {
		fmt.Fprintf(out, "rdmatrace: WARNING: %d creates, QP state changes or file closes lost by the kprobe fallbacks (a return without its saved entry)\n", l.side)
	}
	m := l.missed
	if m.Recursion > 0 {
		fmt.Fprintf(out, "rdmatrace: WARNING: the kernel skipped %d runs of rdmatrace's programs (%s): their events are lost\n", m.Recursion, recursionBy(m))
	}
	switch {
	case m.Kprobe > 0:
		fmt.Fprintf(out, "rdmatrace: WARNING: the kernel missed %d kprobe/kretprobe hits: their events are lost\n", m.Kprobe)
	case !m.KprobeKnown && kprobes:
		fmt.Fprintln(out, "rdmatrace: this kernel does not report missed kprobes (Linux 6.7+ does): a kretprobe beyond maxactive would go unnoticed")
	}
}

func hasKprobes(t *Tracer) bool {
	for _, r := range t.Reports {
		if r.Variant == "kprobe" || r.Variant == "kprobe+kretprobe" {
			return true
		}
	}
	return false
}
