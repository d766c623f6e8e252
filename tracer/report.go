package tracer

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// attachReport tells on stderr, in a line or two, what was attached and
// what not (each hook's reason when verbose); it is an error when nothing
// could be.
func attachReport(t *Tracer, verbose bool, out io.Writer) error {
	attached := t.Attached()
	var skipped, absent []string
	noTracefs := false
	if k := t.Kprobes; !k.First && k.Why != "" && (verbose || t.Preemption.Preemptible()) {
		fmt.Fprintf(out, "rdmatrace: %s\n", k.Why)
	}
	for _, r := range t.Reports {
		switch {
		case r.Variant != "" && r.Preferred != "" && verbose:
			fmt.Fprintf(out, "rdmatrace: hook %s attached (%s; %s)\n", r.Hook, r.Variant, r.Preferred)
		case r.Variant != "" && verbose:
			fmt.Fprintf(out, "rdmatrace: hook %s attached (%s)\n", r.Hook, r.Variant)
		case r.Skipped && verbose:
			fmt.Fprintf(out, "rdmatrace: hook %s skipped: %s\n", r.Hook, r.Reason)
		case r.Variant == "" && verbose:
			fmt.Fprintf(out, "rdmatrace: hook %s not attached: %s\n", r.Hook, r.Reason)
		}
		if r.Skipped {
			absent = append(absent, r.Hook)
			continue
		}
		if r.Variant == "" {
			skipped = append(skipped, r.Hook)
			noTracefs = noTracefs || strings.Contains(r.Reason, "nor tracefs")
		}
	}
	if noTracefs {
		fmt.Fprintln(out, "rdmatrace: tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing): hooks that fall back to kprobes need it")
	}
	why := ""
	if len(skipped) > 0 && !verbose {
		why = " (-v says why)"
	}
	if attached == 0 {
		return fmt.Errorf("no hook could be attached%s", why)
	}
	choice := kprobeChoice(t)
	// Hooks in a module that is not loaded (smc) are not counted: there is
	// nothing of theirs to trace, and they are named at the end.
	if len(absent) > 0 {
		choice += "; not traced, module not loaded: " + strings.Join(absent, ", ")
	}
	total := len(t.Reports) - len(absent)
	if len(skipped) > 0 {
		fmt.Fprintf(out, "rdmatrace: %d of %d hooks attached%s; skipped: %s%s\n", attached, total, choice, strings.Join(skipped, ", "), why)
	} else {
		fmt.Fprintf(out, "rdmatrace: %d of %d hooks attached%s\n", attached, total, choice)
	}
	return nil
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

// summary tells what was attached, what was seen and what was lost.
func summary(t *Tracer, seen, shown, drops uint64, out io.Writer) {
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
	fmt.Fprintf(out, "rdmatrace: events: %d seen, %d shown, %d dropped\n", seen, shown, drops)
	busySummary(t, out)
	endLosses(readLosses(t), hasKprobes(t), out)
}
