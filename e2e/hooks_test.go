//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestEveryHookAttaches runs the tracer in both modes and checks that every
// hook attaches on this kernel: a hook renamed or gone in a new kernel
// (sid's 7.x calls cm_send_mra cm_prepare_mra) must get a variant, not
// silently trace less.
func TestEveryHookAttaches(t *testing.T) {
	needDevice(t)
	needModuleBTF(t)
	// smc's hook is skipped without smc: load it to check that one too
	// (sid's 7.2 is built without SMC: skipped there, and said so).
	if _, stderr, err := runStatus("modprobe", "smc"); err != nil {
		t.Logf("kernel %s: no smc (%s): its hook is skipped", release(t), strings.TrimSpace(string(stderr)))
	}
	for _, mode := range []string{"btf", "fallback"} {
		t.Run(mode, func(t *testing.T) {
			// -v: each hook that does not attach says so in a line.
			args := []string{"trace", "--no-snapshot", "--duration", "1s", "-v"}
			if mode == "fallback" {
				args = append(args, "--fallback")
			}
			_, stderr, err := runStatus(*rdmatraceBin, args...)
			if err != nil {
				t.Fatalf("rdmatrace %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			for _, l := range strings.Split(string(stderr), "\n") {
				if strings.Contains(l, " not attached: ") {
					t.Errorf("kernel %s: %s", release(t), l)
				}
			}
			if mode == "btf" {
				checkPreemptChoice(t, string(stderr))
				checkPortHooksUseBTF(t, string(stderr))
			}
			for _, l := range bytes.Split(stderr, []byte("\n")) {
				if bytes.HasPrefix(l, []byte("rdmatrace: hooks attached:")) {
					t.Logf("kernel %s: %s", release(t), l)
				}
			}
		})
	}
}

// checkPreemptChoice: on a preemptible kernel (sid's 7.2, "full (lazy)")
// the restrack and _ib_modify_qp hooks attach as kprobes, which run with
// preemption off, and the attach summary says why; elsewhere (6.12 is
// voluntary) they keep fentry/fexit.
func checkPreemptChoice(t *testing.T, stderr string) {
	t.Helper()
	sched, err := os.ReadFile("/sys/kernel/debug/sched/preempt")
	if err != nil {
		t.Logf("kernel %s: no sched/preempt (%v): preemption choice not checked", release(t), err)
		return
	}
	s := string(sched)
	preemptible := strings.Contains(s, "(full)") || strings.Contains(s, "(lazy)") || strings.Contains(s, "(rt)")
	t.Logf("kernel %s: sched/preempt %q", release(t), strings.TrimSpace(s))
	want := map[bool][]string{
		true: {"hook rdma_restrack_del attached (kprobe; preferred to fentry: preemptible kernel",
			"hook _ib_modify_qp attached (kprobe+kretprobe; preferred to fexit: preemptible kernel",
			"; kprobes for restrack and _ib_modify_qp hooks: preemptible kernel"},
		false: {"hook rdma_restrack_del attached (fentry)\n", "hook _ib_modify_qp attached (fexit)\n"},
	}[preemptible]
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("kernel %s (preemptible %v): stderr lacks %q:\n%s", release(t), preemptible, w, stderr)
		}
	}
}

// checkPortHooksUseBTF: on the full-tier kernels the port-busy hooks load
// as fexit programs. The bind hooks fall back to kprobes silently when the
// verifier rejects their fexit program (6.1's and 6.12's verifiers did, for
// a length the 6.18 verifier could bound and theirs could not), so "not
// attached" alone does not catch that.
func checkPortHooksUseBTF(t *testing.T, stderr string) {
	t.Helper()
	if os.Getenv("RDMATRACE_E2E_FULL") == "0" {
		return
	}
	for _, h := range []string{"rdma_listen", "__inet_bind", "__inet6_bind"} {
		if w := "hook " + h + " attached (fexit)\n"; !strings.Contains(stderr, w) {
			t.Errorf("kernel %s: stderr lacks %q:\n%s", release(t), w, stderr)
		}
	}
}

// TestAQuietRunSaysOneLineAtEachEnd: without -v, trace says how many
// hooks attached in one line when it starts and, with the events and
// drops, in one when it ends; no hook is listed. A run used to end with
// every hook's name, 2 to 5 KB of stderr.
func TestAQuietRunSaysOneLineAtEachEnd(t *testing.T) {
	needDevice(t)
	needModuleBTF(t)
	_, stderr, err := runStatus(*rdmatraceBin, "trace", "--no-snapshot", "--duration", "1s")
	if err != nil {
		t.Fatalf("rdmatrace trace: %v\n%s", err, stderr)
	}
	var counts, ends int
	for _, l := range strings.Split(string(stderr), "\n") {
		switch {
		case strings.HasPrefix(l, "rdmatrace: BUG: "):
			t.Logf("kernel %s: %s", release(t), l) // a verifier rejection is said without -v, as it should
		case strings.HasPrefix(l, "rdmatrace: hook ") || strings.HasPrefix(l, "rdmatrace: hooks attached:") || strings.HasPrefix(l, "rdmatrace: hooks skipped:"):
			t.Errorf("kernel %s: without -v, a hook is listed: %s", release(t), l)
		case strings.Contains(l, " hooks attached") && strings.Contains(l, "; events: ") && strings.HasSuffix(l, " dropped"):
			ends++
		case strings.Contains(l, " hooks attached"):
			counts++
		}
	}
	if counts != 1 || ends != 1 {
		t.Errorf("kernel %s: %d lines of counts at the start and %d at the end, want one each:\n%s", release(t), counts, ends, stderr)
	}
	t.Logf("kernel %s: %d bytes of stderr:\n%s", release(t), len(stderr), stderr)
}
