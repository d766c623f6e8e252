package tracer

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
)

// reportGolden compares got with testdata/attach-report/name (-update
// rewrites it).
func reportGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("..", "testdata", "attach-report", name), []byte(got))
}

// reportTracer is a tracer as Open leaves it on a kernel where rdma_cm is
// not loaded, smc neither, and one hook has no variant that attaches.
func reportTracer(n int) *Tracer {
	t := &Tracer{}
	for i := range n {
		t.Reports = append(t.Reports, Report{Hook: "hook" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), Variant: "fentry"})
	}
	t.Reports = append(t.Reports,
		Report{Hook: "smc_switch_to_fallback", Skipped: true, Reason: "module smc not loaded (start rdmatrace after it loads to see its events)"},
		Report{Hook: "rdma_cma:cm_event_handler", Reason: "tp_btf: not in this kernel: tracepoint not found; raw_tp: not in this kernel: no such tracepoint"},
	)
	return t
}

// runReport is what a session says at start and at the end.
func runReport(t *testing.T, tr *Tracer, verbose bool) string {
	t.Helper()
	var out bytes.Buffer
	if err := attachReport(tr, verbose, &out); err != nil {
		t.Fatal(err)
	}
	out.WriteString("--- end\n")
	endCounts(tr, counts{read: 1234, shown: 1200}, verbose, &out)
	return out.String()
}

// TestAHealthyRunSaysOneLineAtEachEnd: without -v, a run whose hooks
// attach, but for those of modules not loaded and one the kernel lacks,
// says one line of counts when it starts and one when it ends; -v lists
// each hook. Before, every run ended with both lists, 2 to 5 KB.
func TestAHealthyRunSaysOneLineAtEachEnd(t *testing.T) {
	tr := reportTracer(40)
	quiet := runReport(t, tr, false)
	if n := strings.Count(quiet, "\n"); n != 3 {
		t.Errorf("quiet report: %d lines, want 3:\n%s", n, quiet)
	}
	reportGolden(t, "quiet.txt", quiet)
	reportGolden(t, "verbose.txt", runReport(t, tr, true))
}

// TestAllAttachedSaysNoSkips: nothing skipped, nothing to list.
func TestAllAttachedSaysNoSkips(t *testing.T) {
	tr := reportTracer(3)
	tr.Reports = tr.Reports[:3]
	if got, want := runReport(t, tr, false), "rdmatrace: 3 hooks attached\n--- end\nrdmatrace: 3 hooks attached; events: 1234 seen, 1200 shown, 34 filtered out, 0 dropped\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestAHookAnOptionAskedForIsNamedWhenMissing: --follow-pid's hooks that
// do not attach are said without -v, the others are only counted.
func TestAHookAnOptionAskedForIsNamedWhenMissing(t *testing.T) {
	tr := reportTracer(5)
	tr.Reports = append(tr.Reports, Report{Hook: "sched:sched_switch", Requested: true, Reason: "tp_btf: not in this kernel: x; raw_tp: not in this kernel: y"})
	reportGolden(t, "requested.txt", runReport(t, tr, false))
}

// TestVerifierRejectionIsReportedAsABug: a program the verifier refused
// is said without -v, with the kernel, the program and the verifier's
// conclusion, whether the hook attached another way or not; -v adds the
// log's last lines.
func TestVerifierRejectionIsReportedAsABug(t *testing.T) {
	defer func(f func() string) { osRelease = f }(osRelease)
	osRelease = func() string { return "6.1.0-28-amd64" }
	log := []string{"0: R1=ctx() R10=fp0", "; int x = idx;", "12: (bf) r2 = r6", "R2 min value is negative, either use unsigned index or do a if (index >=0) check."}
	tr := reportTracer(3)
	tr.Reports = append(tr.Reports,
		Report{Hook: "_ib_modify_qp", Variant: "kprobe+kretprobe", Reason: "fexit: rejected by the kernel's verifier: " + log[3],
			Rejections: []Rejection{{Hook: "_ib_modify_qp", Variant: "fexit", Prog: "fexit_modify_qp", Log: log}}},
		Report{Hook: "ib_uverbs_close", Reason: "fentry+fexit: rejected by the kernel's verifier: " + log[3],
			Rejections: []Rejection{{Hook: "ib_uverbs_close", Variant: "fentry+fexit", Prog: "fentry_uverbs_close", Log: log}}},
	)
	reportGolden(t, "rejected.txt", runReport(t, tr, false))
	reportGolden(t, "rejected-verbose.txt", runReport(t, tr, true))
}

// TestNothingAttachedIsAnError: no hook attached ends the run, and says
// privileges when that is what failed.
func TestNothingAttachedIsAnError(t *testing.T) {
	var out bytes.Buffer
	tr := &Tracer{Reports: []Report{{Hook: "a", Reason: "fentry: no"}}}
	if err := attachReport(tr, false, &out); err == nil || err.Error() != "no hook could be attached (-v says why)" {
		t.Errorf("got %v", err)
	}
	tr.Reports[0].denied = true
	if err := attachReport(tr, false, &out); !errors.Is(err, ErrPrivileges) {
		t.Errorf("a hook denied for privileges: got %v, want ErrPrivileges", err)
	}
}
