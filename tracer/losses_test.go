package tracer

import (
	"bytes"
	"strings"
	"testing"
)

// TestLiveWarningSaysSkippedRuns: a tick that sees new recursion misses
// warns at once, naming the programs, as it does for drops; a tick with
// nothing new says nothing. Before issue 10's fix the live check read only
// the ring buffer drops, so sid's skipped destroys went unsaid until the
// end.
func TestLiveWarningSaysSkippedRuns(t *testing.T) {
	flushed := 0
	w := &lossWatch{dropHint: "raise --ring-size", before: func() { flushed++ }}
	var out bytes.Buffer
	w.update(losses{}, &out)
	if out.Len() != 0 || flushed != 0 {
		t.Fatalf("nothing lost, but: %q", out.String())
	}
	m := Misses{Recursion: 30, RecursionBy: []ProgMisses{{Prog: "fentry_restrack_del", N: 18}, {Prog: "fentry_restrack_begin_del", N: 12}}}
	w.update(losses{drops: 2, missed: m}, &out)
	got := out.String()
	for _, want := range []string{
		"WARNING: 2 events dropped (ring buffer full; 2 in all): raise --ring-size\n",
		"WARNING: the kernel skipped 30 runs of rdmatrace's programs (30 in all: fentry_restrack_del 18, fentry_restrack_begin_del 12;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings %q lack %q", got, want)
		}
	}
	if flushed != 1 {
		t.Errorf("output flushed %d times before the warnings, want once", flushed)
	}
	out.Reset()
	m.Recursion, m.RecursionBy[0].N = 31, 19
	w.update(losses{drops: 2, missed: m}, &out)
	if got := out.String(); !strings.Contains(got, "skipped 1 runs of rdmatrace's programs (31 in all: fentry_restrack_del 19,") || strings.Contains(got, "dropped") {
		t.Errorf("second tick: %q, want one new skipped run and no drop warning", got)
	}
	out.Reset()
	w.update(losses{drops: 2, missed: m}, &out)
	if out.Len() != 0 {
		t.Errorf("nothing new, but: %q", out.String())
	}
}

// TestEndSummarySaysSkippedRuns: the end summary of trace and leaks names
// the programs whose runs the kernel skipped.
func TestEndSummarySaysSkippedRuns(t *testing.T) {
	var out bytes.Buffer
	endLosses(losses{missed: Misses{Recursion: 18, RecursionBy: []ProgMisses{{Prog: "fentry_restrack_del", N: 18}}, KprobeKnown: true}}, true, &out)
	if got := out.String(); !strings.HasPrefix(got, "rdmatrace: WARNING: the kernel skipped 18 runs of rdmatrace's programs (fentry_restrack_del 18;") || strings.Count(got, "\n") != 1 {
		t.Errorf("end summary %q", got)
	}
}

// TestAttachSummarySaysKprobesAndWhy: the one-line attach summary says
// which hooks use kprobes instead of fentry/fexit, and why.
func TestAttachSummarySaysKprobesAndWhy(t *testing.T) {
	tr := &Tracer{Kprobes: KprobeChoice{First: true, Why: "preemptible kernel (lazy)"}}
	for _, h := range []string{"rdma_restrack_add", "rdma_restrack_del", "_ib_modify_qp"} {
		tr.Reports = append(tr.Reports, Report{Hook: h, Variant: "kprobe", Preferred: "preferred to fentry: preemptible kernel (lazy)"})
	}
	tr.Reports = append(tr.Reports, Report{Hook: "ib_uverbs_close", Variant: "fentry+fexit"})
	if got, want := kprobeChoice(tr), "; kprobes for restrack and _ib_modify_qp hooks: preemptible kernel (lazy)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := kprobeChoice(&Tracer{Reports: tr.Reports[3:]}); got != "" {
		t.Errorf("no hook preferred kprobes, but: %q", got)
	}
}

// TestPortBusyLossesAreSaidApart: port-busy events refused to keep the ring
// for lifecycle events are warned of as such, not as ring buffer drops,
// and the end summary says how many the rate limit held back.
func TestPortBusyLossesAreSaidApart(t *testing.T) {
	w := &lossWatch{dropHint: "raise --ring-size"}
	var out bytes.Buffer
	w.update(losses{busyDrops: 7}, &out)
	if got := out.String(); got != "rdmatrace: WARNING: 7 port-busy events dropped (7 in all): "+busyDropWhy+"\n" {
		t.Errorf("warning %q", got)
	}
	out.Reset()
	writeBusySummary(&out, 0, 0)
	if out.Len() != 0 {
		t.Errorf("nothing held back or dropped, but: %q", out.String())
	}
	writeBusySummary(&out, 175000, 3)
	got := out.String()
	if !strings.HasPrefix(got, "rdmatrace: port-busy events: 175000 held back by the rate limit (") ||
		!strings.Contains(got, "\nrdmatrace: WARNING: 3 port-busy events dropped: ") || strings.Count(got, "\n") != 2 {
		t.Errorf("end summary %q", got)
	}
}

// TestAuxShedIsSaidApart: QP settings and spans refused at half the ring
// are warned of as such, and said at the end.
func TestAuxShedIsSaidApart(t *testing.T) {
	w := &lossWatch{dropHint: "raise --ring-size"}
	var out bytes.Buffer
	w.update(losses{auxShed: 5}, &out)
	if got := out.String(); got != "rdmatrace: WARNING: 5 QP settings (qp-attr) or spans not traced (5 in all): "+auxShedWhy+"\n" {
		t.Errorf("warning %q", got)
	}
	out.Reset()
	endLosses(losses{auxShed: 5}, false, &out)
	if got := out.String(); !strings.Contains(got, "rdmatrace: WARNING: 5 QP settings (qp-attr) or spans not traced: ") {
		t.Errorf("end %q", got)
	}
	if c := (counts{drops: 1, auxShed: 5}); c.dropped() != 6 {
		t.Errorf("dropped %d, want the shed settings counted with the drops", c.dropped())
	}
}
