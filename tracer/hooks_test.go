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
func tried(h Hook, fallback bool) []string {
	var out []string
	for _, v := range h.variants {
		if !(fallback && h.fallbackSkips(v)) {
			out = append(out, v.name)
		}
	}
	return out
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
