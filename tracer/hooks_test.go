package tracer

import (
	"slices"
	"testing"
)

func hookNamed(t *testing.T, name string) Hook {
	t.Helper()
	for _, h := range Hooks {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("no hook %s", name)
	return Hook{}
}

// tried lists the variants attachHook tries, in order.
func tried(h Hook, fallback bool) []string { return triedOn(h, fallback, false) }

// triedOn is tried on a kernel where kprobes come first or not.
func triedOn(h Hook, fallback, kprobesFirst bool) []string {
	var out []string
	for _, v := range h.order(fallback, kprobesFirst) {
		out = append(out, v.name)
	}
	return out
}

// TestPreemptibleKernelsTryKprobesFirstWhereLossMatters: on a preemptible
// kernel the restrack and _ib_modify_qp hooks try kprobes before
// fentry/fexit (a preempted fentry program makes the trampoline skip the
// next task's run: sid lost destroys so); the others keep their order, and
// a voluntary kernel keeps every order. Fails on the tree before issue 10's
// fix, which always tried fentry/fexit first.
func TestPreemptibleKernelsTryKprobesFirstWhereLossMatters(t *testing.T) {
	want := map[string][]string{
		"rdma_restrack_add":         {"kprobe+kretprobe", "fexit"},
		"rdma_restrack_del":         {"kprobe", "fentry"},
		"rdma_restrack_begin_del":   {"kprobe", "fentry"},
		"rdma_restrack_commit_del":  {"kprobe", "fentry"},
		"rdma_restrack_abort_del":   {"kprobe", "fentry"},
		"_ib_modify_qp":             {"kprobe+kretprobe", "fexit"},
		"ib_uverbs_close":           {"fentry+fexit", "kprobe+kretprobe"},
		"__ib_unregister_device":    {"fentry+fexit", "kprobe"},
		"rdma_cma:cm_event_handler": {"tp_btf", "raw_tp"},
	}
	for name, w := range want {
		h := hookNamed(t, name)
		if got := triedOn(h, false, true); !slices.Equal(got, w) {
			t.Errorf("%s on a preemptible kernel tries %q, want %q", name, got, w)
		}
	}
	for _, h := range Hooks {
		if got, listed := triedOn(h, false, false), h.Variants(); !slices.Equal(got, listed) {
			t.Errorf("%s on a voluntary kernel tries %q, want its listed order %q", h.Name, got, listed)
		}
		if got, fb := triedOn(h, true, true), tried(h, true); !slices.Equal(got, fb) {
			t.Errorf("%s under --fallback on a preemptible kernel tries %q, want %q", h.Name, got, fb)
		}
	}
}

// TestRenamedTracepointsAreTried: rdma_cma:cm_send_mra is cm_prepare_mra
// after 6.12 (Debian sid's 7.2 has only the new name); the hook
// tries the old name, then the new one, with tp_btf and, under --fallback,
// with raw tracepoints only.
func TestRenamedTracepointsAreTried(t *testing.T) {
	h := hookNamed(t, "rdma_cma:cm_send_mra")
	if got, want := tried(h, false), []string{"tp_btf", "raw_tp", "tp_btf cm_prepare_mra", "raw_tp cm_prepare_mra"}; !slices.Equal(got, want) {
		t.Errorf("variants tried: %q, want %q", got, want)
	}
	if got, want := tried(h, true), []string{"raw_tp", "raw_tp cm_prepare_mra"}; !slices.Equal(got, want) {
		t.Errorf("variants tried with --fallback: %q, want %q", got, want)
	}
	for _, v := range h.variants[2:] {
		if p := v.progs[0]; p.target != "cm_prepare_mra" {
			t.Errorf("variant %s attaches %s to %q", v.name, p.name, p.target)
		}
	}
}

// TestFallbackKeepsOnlyNonBTFVariants: --fallback skips every BTF variant of
// a hook that has another kind, and keeps the BTF-only hooks (rdma_cm ID
// creation, device registration) as they were.
func TestFallbackKeepsOnlyNonBTFVariants(t *testing.T) {
	for _, h := range Hooks {
		got := tried(h, true)
		if len(got) == 0 {
			t.Errorf("%s: --fallback tries nothing", h.Name)
		}
		hasOther := false
		for _, v := range h.variants {
			hasOther = hasOther || !v.btf()
		}
		for _, v := range h.variants {
			if hasOther && v.btf() && slices.Contains(got, v.name) {
				t.Errorf("%s: --fallback tries %s", h.Name, v.name)
			}
		}
	}
	if got := tried(hookNamed(t, "rdma_create_user_id"), true); !slices.Equal(got, []string{"fexit"}) {
		t.Errorf("rdma_create_user_id with --fallback tries %q, want its fexit", got)
	}
}
