package tracer

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/bpf"
)

// fakeKernel has the functions and tracepoints it is given.
type fakeKernel struct {
	btf, syms   map[string]string
	tps         map[string]string
	haveKprobes bool
	notLoaded   []string
}

func (k fakeKernel) btfHas(name string, tp bool) (string, bool) {
	if tp {
		w, ok := k.tps[name]
		return w, ok
	}
	w, ok := k.btf[name]
	return w, ok
}
func (k fakeKernel) kallsyms(name string) (string, bool) { w, ok := k.syms[name]; return w, ok }
func (k fakeKernel) kprobes() bool                       { return k.haveKprobes }
func (k fakeKernel) missing() []string {
	var out []string
	for _, m := range k.notLoaded {
		if slices.Contains(rdmaModules, m) {
			out = append(out, m)
		}
	}
	return out
}
func (k fakeKernel) loaded(m string) bool { return !slices.Contains(k.notLoaded, m) }

func listedFor(ls []Listed, hook, variant string) *Listed {
	for i := range ls {
		if ls[i].Hook == hook && ls[i].Variant == variant {
			return &ls[i]
		}
	}
	return nil
}

func TestListSaysWhichTargetsTheKernelHas(t *testing.T) {
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	k := fakeKernel{
		btf:         map[string]string{"rdma_restrack_add": "ib_core", "__inet_bind": "vmlinux"},
		syms:        map[string]string{"rdma_restrack_add": "ib_core"},
		tps:         map[string]string{"cm_send_req": "rdma_cm"},
		haveKprobes: true,
		notLoaded:   []string{"smc"},
	}
	ls := list(spec, k, "")
	for _, tc := range []struct {
		hook, variant   string
		probes          string
		present, unknow bool
		where, why      string
	}{
		{"rdma_restrack_add", "fexit", "fexit:rdma_restrack_add", true, false, "ib_core", ""},
		{"rdma_restrack_add", "kprobe+kretprobe", "kprobe:rdma_restrack_add kretprobe:rdma_restrack_add", true, false, "ib_core", ""},
		{"rdma_cma:cm_send_req", "tp_btf", "tp_btf:cm_send_req", true, false, "rdma_cm", ""},
		{"rdma_cma:cm_send_req", "raw_tp", "rawtracepoint:cm_send_req", true, false, "rdma_cm", ""},
		{"rdma_cma:cm_send_mra", "tp_btf cm_prepare_mra", "tp_btf:cm_prepare_mra", false, false, "", "not in this kernel's BTF"},
		{"__inet_bind", "fexit", "fexit:__inet_bind", true, false, "vmlinux", ""},
		{"__inet_bind", "kprobe+kretprobe", "kprobe:__inet_bind kretprobe:__inet_bind", false, false, "", "not in this kernel's kallsyms"},
		{"smc_ib_create_queue_pair", "fexit", "fexit:smc_ib_create_queue_pair", false, true, "", "module smc not loaded: cannot check"},
	} {
		l := listedFor(ls, tc.hook, tc.variant)
		if l == nil {
			t.Errorf("%s %s not listed", tc.hook, tc.variant)
			continue
		}
		if got := strings.Join(l.Probes, " "); got != tc.probes || l.Present != tc.present || l.Unknown != tc.unknow || l.Where != tc.where || l.Why != tc.why {
			t.Errorf("%s %s: probes %q present %v unknown %v where %q why %q; want %q %v %v %q %q",
				tc.hook, tc.variant, got, l.Present, l.Unknown, l.Where, l.Why, tc.probes, tc.present, tc.unknow, tc.where, tc.why)
		}
	}
	// Without kprobes, no kprobe variant is there; a missing RDMA module
	// makes an absent function unknown, not absent.
	k.haveKprobes, k.notLoaded = false, []string{"rdma_cm"}
	ls = list(spec, k, "")
	if l := listedFor(ls, "rdma_restrack_add", "kprobe+kretprobe"); l.Present || l.Why != "this kernel has no kprobes" {
		t.Errorf("without kprobes: %+v", *l)
	}
	if l := listedFor(ls, "rdma_create_user_id", "fexit"); l.Present || !l.Unknown || !strings.Contains(l.Why, "rdma_cm not loaded") {
		t.Errorf("rdma_cm not loaded: %+v", *l)
	}
}

// Every program of every hook names its target: a tracing program's
// comes from its ELF section.
func TestListNamesEveryProbesTarget(t *testing.T) {
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list(spec, fakeKernel{}, "") {
		for _, p := range l.Probes {
			kind, target, ok := strings.Cut(p, ":")
			if !ok || kind == "" || target == "" || strings.Contains(target, "/") {
				t.Errorf("%s %s: probe %q", l.Hook, l.Variant, p)
			}
		}
	}
}

func TestListGlobMatchesHooksAndProbes(t *testing.T) {
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	count := func(pattern string) (n int, hooks map[string]bool) {
		hooks = map[string]bool{}
		for _, l := range list(spec, fakeKernel{}, pattern) {
			n++
			hooks[l.Hook] = true
		}
		return n, hooks
	}
	if n, _ := count(""); n < len(Hooks) {
		t.Errorf("all: %d rows for %d hooks", n, len(Hooks))
	}
	if _, h := count("rdma_cma:*"); len(h) < 10 || h["rdma_restrack_add"] {
		t.Errorf("rdma_cma:*: %v", h)
	}
	if _, h := count("*restrack*"); len(h) != 5 {
		t.Errorf("*restrack*: %v", h)
	}
	// rdma_listen has two hooks: EADDRINUSE (port-busy) and its other errors.
	if _, h := count("kretprobe:rdma_listen"); len(h) != 2 || !h["rdma_listen"] || !h["rdma_listen errors"] {
		t.Errorf("kretprobe:rdma_listen: %v", h)
	}
	if n, _ := count("nosuch*"); n != 0 {
		t.Errorf("nosuch*: %d rows", n)
	}
	if _, _, err := List("["); err == nil {
		t.Error(`List("[") took a bad pattern`)
	}
}

// On this host (BTF, no RDMA): a vmlinux function is found in vmlinux's
// BTF, and an RDMA one is unknown, with ib_core named as not loaded.
func TestListReadsThisKernel(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skip("no kernel BTF here")
	}
	ls, notes, err := List("")
	if err != nil {
		t.Fatal(err)
	}
	if l := listedFor(ls, "__inet_bind", "fexit"); l == nil || !l.Present || l.Where != "vmlinux" {
		t.Errorf("__inet_bind fexit: %+v", l)
	}
	if l := listedFor(ls, "sched:sched_switch", "tp_btf"); l == nil || !l.Present || l.Where != "vmlinux" {
		t.Errorf("sched_switch tp_btf: %+v", l)
	}
	if _, err := os.Stat("/sys/module/ib_core"); err == nil {
		return // an RDMA host: the rest is the guest tests'
	}
	if l := listedFor(ls, "rdma_restrack_add", "fexit"); l == nil || l.Present || !l.Unknown {
		t.Errorf("rdma_restrack_add fexit without ib_core: %+v", l)
	}
	if len(notes) == 0 || !strings.Contains(strings.Join(notes, "\n"), "ib_core") {
		t.Errorf("notes %q do not say ib_core is not loaded", notes)
	}
}
