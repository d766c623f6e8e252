package tracer

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// attachReport tells on stderr what was attached: one line of counts,
// each hook's line only with verbose. Said without verbose all the same:
// a hook an option asked for that did not attach, and a program the
// verifier rejected (a bug to report). It is an error when nothing could
// be attached.
func attachReport(t *Tracer, verbose bool, out io.Writer) error {
	attached := t.Attached()
	noTracefs, denied := false, false
	if k := t.Kprobes; !k.First && k.Why != "" && (verbose || t.Preemption.Preemptible()) {
		fmt.Fprintf(out, "rdmatrace: %s\n", k.Why)
	}
	for _, r := range t.Reports {
		switch {
		case r.Variant != "" && r.Preferred != "" && verbose:
			fmt.Fprintf(out, "rdmatrace: hook %s attached (%s; %s)\n", r.Hook, r.Variant, r.Preferred)
		case r.Variant != "" && verbose:
			fmt.Fprintf(out, "rdmatrace: hook %s attached (%s)\n", r.Hook, r.Variant)
		case r.Skipped && (verbose || r.Requested):
			fmt.Fprintf(out, "rdmatrace: hook %s skipped: %s\n", r.Hook, r.Reason)
		case r.Variant == "" && !r.Skipped && (verbose || r.Requested):
			fmt.Fprintf(out, "rdmatrace: hook %s not attached: %s\n", r.Hook, r.Reason)
		}
		if r.Variant == "" && !r.Skipped {
			noTracefs = noTracefs || strings.Contains(r.Reason, "nor tracefs")
			denied = denied || r.denied
		}
	}
	rejections(t, verbose, out)
	if noTracefs {
		fmt.Fprintln(out, "rdmatrace: tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing): hooks that fall back to kprobes need it")
	}
	if attached == 0 {
		if denied {
			return ErrPrivileges
		}
		if verbose {
			return fmt.Errorf("no hook could be attached")
		}
		return fmt.Errorf("no hook could be attached (-v says why)")
	}
	fmt.Fprintf(out, "rdmatrace: %s%s\n", hookCounts(t, verbose), kprobeChoice(t))
	return nil
}

// hookCounts is "41 hooks attached, 3 skipped (-v lists them)": hooks
// whose module is not loaded count as skipped.
func hookCounts(t *Tracer, verbose bool) string {
	attached := t.Attached()
	skipped := len(t.Reports) - attached
	s := fmt.Sprintf("%d hooks attached", attached)
	if skipped > 0 {
		s += fmt.Sprintf(", %d skipped", skipped)
		if !verbose {
			s += " (-v lists them)"
		}
	}
	return s
}

// rejections tells of each program the kernel's verifier refused: the
// kernel, the program, the verifier's conclusion (with verbose, the log's
// last lines), and that it is a bug to report.
func rejections(t *Tracer, verbose bool, out io.Writer) {
	release := ""
	for _, r := range t.Reports {
		for _, rj := range r.Rejections {
			if release == "" {
				release = osRelease()
			}
			then := "the hook is not traced"
			if r.Variant != "" {
				then = "the hook is traced by its " + r.Variant + " variant instead"
			}
			more := " (-v shows the verifier's last lines)"
			if verbose {
				more = " with the lines below"
			}
			fmt.Fprintf(out, "rdmatrace: BUG: Linux %s's verifier rejected program %s (hook %s, %s): %s; %s. This is rdmatrace's bug: please report it%s\n",
				release, rj.Prog, rj.Hook, rj.Variant, strings.TrimRight(rj.Conclusion(), "."), then, more)
			if verbose {
				for _, l := range rj.Log {
					fmt.Fprintf(out, "rdmatrace:   %s\n", l)
				}
			}
		}
	}
}

// kprobeChoice tells, for the attach summary, which hooks use kprobes
// rather than their usual fentry/fexit, and why: "; kprobes for restrack
// and _ib_modify_qp hooks: preemptible kernel (lazy)".
func kprobeChoice(t *Tracer) string {
	var names []string
	for _, r := range t.Reports {
		if r.Preferred == "" {
			continue
		}
		n := r.Hook
		if strings.HasPrefix(n, "rdma_restrack_") {
			n = "restrack"
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	list := strings.Join(names, ", ")
	if i := strings.LastIndex(list, ", "); i >= 0 {
		list = list[:i] + " and " + list[i+2:]
	}
	return "; kprobes for " + list + " hooks: " + t.Kprobes.Why
}

// counts are what the summary's line adds up: every event the hooks made
// was shown, filtered out, held back or dropped.
type counts struct {
	read, shown    uint64 // read from the ring; kept by the user-space filters
	kernelFiltered uint64 // discarded by the kernel filters
	held           uint64 // port-busy events the rate limit held back
	// What was lost: the ring full (drops), port-busy events refused at a
	// quarter of it or by a full ring (busyDrops), the busiest owner's
	// refused at three quarters (shed), auxiliary records refused at half
	// (auxShed), and what the stop left unread.
	drops, busyDrops, shed, auxShed, unread uint64
}

func (c counts) filtered() uint64 { return c.read - c.shown + c.kernelFiltered }
func (c counts) dropped() uint64  { return c.drops + c.busyDrops + c.shed + c.auxShed + c.unread }
func (c counts) seen() uint64     { return c.read + c.kernelFiltered + c.held + c.dropped() }

// readCounts reads the kernel's side of the counts; read and shown are the
// caller's.
func readCounts(t *Tracer, read, shown uint64, kernelFilter bool) counts {
	c := counts{read: read, shown: shown, unread: t.Unread()}
	c.drops, _ = t.Drops()
	c.busyDrops, _ = t.BusyDrops()
	c.held, _ = t.BusySuppressed()
	c.shed, _ = t.Shed()
	c.auxShed, _ = t.AuxShed()
	if kernelFilter {
		c.kernelFiltered, _ = t.Filtered()
	}
	return c
}

// summary tells what was attached (each hook with verbose), what was seen
// and what was lost: one line in a healthy run. The lines after the
// counts take their figures from c, not from a second read of the
// kernel's counters, which a flood still running moves meanwhile.
func summary(t *Tracer, c counts, verbose bool, out io.Writer) {
	endCounts(t, c, verbose, out)
	writeBusySummary(out, c.held, c.busyDrops)
	l := readLosses(t)
	l.auxShed = c.auxShed
	if l.shed = c.shed; l.shed > 0 && l.busiest == "" {
		l.busiest = busiestName(t)
	}
	endLosses(l, hasKprobes(t), out)
}

// endCounts is the summary's hooks and events: the hooks' lists with
// verbose, then the line of counts, "events: 7000 seen, 2402 shown, 4000
// held back, 598 dropped (98 of them unread at the stop)", whose parts
// past shown are said when they are not 0 (dropped always).
func endCounts(t *Tracer, c counts, verbose bool, out io.Writer) {
	if verbose {
		var on, off []string
		for _, r := range t.Reports {
			if r.Variant != "" && r.Reason != "" {
				on = append(on, r.Hook+" ("+r.Variant+", as "+r.Reason+")")
			} else if r.Variant != "" {
				on = append(on, r.Hook+" ("+r.Variant+")")
			} else {
				off = append(off, r.Hook+": "+r.Reason)
			}
		}
		fmt.Fprintf(out, "rdmatrace: hooks attached: %d: %s\n", len(on), strings.Join(on, ", "))
		if len(off) > 0 {
			fmt.Fprintf(out, "rdmatrace: hooks skipped: %d: %s\n", len(off), strings.Join(off, "; "))
		}
	}
	line := fmt.Sprintf("rdmatrace: %s; events: %d seen, %d shown", hookCounts(t, verbose), c.seen(), c.shown)
	if n := c.filtered(); n > 0 {
		line += fmt.Sprintf(", %d filtered out", n)
	}
	if c.held > 0 {
		line += fmt.Sprintf(", %d held back", c.held)
	}
	line += fmt.Sprintf(", %d dropped", c.dropped())
	if c.unread > 0 {
		line += fmt.Sprintf(" (%d of them unread at the stop)", c.unread)
	}
	fmt.Fprintln(out, line)
}
