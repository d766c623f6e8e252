package tracer

import (
	"slices"

	"github.com/cilium/ebpf/link"
)

// attachKind is how a program is attached.
type attachKind uint8

const (
	tracing   attachKind = iota // fentry, fexit, tp_btf
	kprobe                      // kprobe on target
	kretprobe                   // kretprobe on target
	rawTP                       // raw tracepoint target
)

// prog is one program of a variant and where it goes.
type prog struct {
	name   string // program name in the collection (the C function)
	kind   attachKind
	target string // function or tracepoint; for tracing, empty: the ELF section names it
}

// variant is one way to implement a hook: its programs attach together.
type variant struct {
	name  string // "fexit", "kprobe+kretprobe", "tp_btf", "raw_tp"
	progs []prog
}

// Hook is one thing rdmatrace watches, with its variants in order of
// preference.
type Hook struct {
	Name     string // what it watches, e.g. "rdma_restrack_add"
	variants []variant
	// kprobeIfPreemptible: on a preemptible kernel, try the kprobe
	// variants before fentry/fexit. Set where a skipped run loses a
	// resource's create, destroy or state change, and where tasks enter
	// the function concurrently (many programs exiting at once): an
	// fentry program preempted there makes the trampoline skip the next
	// task's run on that CPU. Not set on the file-close hooks (a skipped
	// run only misnames a destroy's cause, and their kretprobe would wait
	// through the whole release, where maxactive runs out) nor on device
	// unregistration (rare, one at a time).
	kprobeIfPreemptible bool
	// module: the kernel module whose code the hook is in, when the hook
	// is not about RDMA's own modules; without it loaded, the hook is
	// skipped and says so (loading it is not rdmatrace's business).
	module string
	// followed: the hook serves a followed program (rdmabench) and is
	// attached only when Options.Follow names one; `rdmatrace trace`
	// without --follow-pid keeps its events and its cost as before.
	followed bool
}

func tracingVariant(name, progName string) variant {
	return variant{name: name, progs: []prog{{name: progName, kind: tracing}}}
}

func kprobeVariant(progName, target string) variant {
	return variant{name: "kprobe", progs: []prog{{name: progName, kind: kprobe, target: target}}}
}

func cmHook(tp string, renamed ...string) Hook { return tpHook("rdma_cma", tp, renamed...) }

func tpHook(system, tp string, renamed ...string) Hook {
	h := Hook{Name: system + ":" + tp, variants: []variant{
		tracingVariant("tp_btf", "tp_btf_"+tp),
		{name: "raw_tp", progs: []prog{{name: "raw_tp_" + tp, kind: rawTP, target: tp}}},
	}}
	// The same tracepoint under a newer name: the same programs, attached
	// to it.
	for _, n := range renamed {
		h.variants = append(h.variants,
			variant{name: "tp_btf " + n, progs: []prog{{name: "tp_btf_" + tp, kind: tracing, target: n}}},
			variant{name: "raw_tp " + n, progs: []prog{{name: "raw_tp_" + tp, kind: rawTP, target: n}}})
	}
	return h
}

// portHook reports EADDRINUSE from fn: an fexit program (short names
// it), or a kprobe and kretprobe; older is the same function's name on
// kernels without fn, tried after it.
func portHook(fn, short string, older ...string) Hook {
	h := Hook{Name: fn}
	for _, target := range append([]string{fn}, older...) {
		name := "fexit"
		if target != fn {
			name = "fexit " + target
		}
		h.variants = append(h.variants, variant{name: name, progs: []prog{{name: "fexit_" + short, kind: tracing, target: target}}})
	}
	for _, target := range append([]string{fn}, older...) {
		name := "kprobe+kretprobe"
		if target != fn {
			name = "kprobe+kretprobe " + target
		}
		h.variants = append(h.variants, variant{name: name, progs: []prog{
			{name: "kprobe_" + short, kind: kprobe, target: target},
			{name: "kretprobe_" + short, kind: kretprobe, target: target}}})
	}
	return h
}

// callHook reports fn's failures (creates.h's CALL_HOOK): an fexit
// program, or a kprobe and kretprobe; older are the same function's names
// on kernels without fn, tried after it.
func callHook(fn string, older ...string) Hook {
	short := "call_" + fn
	h := Hook{Name: fn}
	if fn == "rdma_listen" || fn == "rdma_connect_locked" {
		h.Name = fn + " errors" // beside the port-busy hook on the same function
	}
	for _, target := range append([]string{fn}, older...) {
		name := "fexit"
		if target != fn {
			name = "fexit " + target
		}
		h.variants = append(h.variants, variant{name: name, progs: []prog{{name: "fexit_" + short, kind: tracing, target: target}}})
	}
	for _, target := range append([]string{fn}, older...) {
		name := "kprobe+kretprobe"
		if target != fn {
			name = "kprobe+kretprobe " + target
		}
		h.variants = append(h.variants, variant{name: name, progs: []prog{
			{name: "kprobe_" + short, kind: kprobe, target: target},
			{name: "kretprobe_" + short, kind: kretprobe, target: target}}})
	}
	return h
}

// spanHook times calls of a kernel function (fentry to fexit); attached
// only when following.
func spanHook(fn string) Hook { return followedHook(closeHook(fn, "span_"+fn)) }

// entryHook runs at fn's entry: an fentry program, or a kprobe (the C
// side's ENTRY_HOOK makes both, named after short).
func entryHook(fn, short string) Hook {
	return Hook{Name: fn, variants: []variant{tracingVariant("fentry", "fentry_"+short), kprobeVariant("kprobe_"+short, fn)}}
}

// moduleHook is h, skipped when module is not loaded.
func moduleHook(module string, h Hook) Hook { h.module = module; return h }

// followedHook is h attached only when following a process.
func followedHook(h Hook) Hook { h.followed = true; return h }

// closeHook marks the release of a device file, so that what it frees is
// told apart from explicit destroys.
func closeHook(fn, short string) Hook {
	return Hook{Name: fn, variants: []variant{
		{name: "fentry+fexit", progs: []prog{{name: "fentry_" + short, kind: tracing}, {name: "fexit_" + short, kind: tracing}}},
		{name: "kprobe+kretprobe", progs: []prog{
			{name: "kprobe_" + short, kind: kprobe, target: fn},
			{name: "kretprobe_" + short, kind: kretprobe, target: fn}}},
	}}
}

// Hooks lists every hook, in attach order: lifecycle first, so nothing that
// is created while the rest attaches goes unseen.
var Hooks = []Hook{
	{Name: "rdma_restrack_add", kprobeIfPreemptible: true, variants: []variant{
		tracingVariant("fexit", "fexit_restrack_add"),
		{name: "kprobe+kretprobe", progs: []prog{
			{name: "kprobe_restrack_add", kind: kprobe, target: "rdma_restrack_add"},
			{name: "kretprobe_restrack_add", kind: kretprobe, target: "rdma_restrack_add"}}},
	}},
	{Name: "rdma_restrack_del", kprobeIfPreemptible: true, variants: []variant{
		tracingVariant("fentry", "fentry_restrack_del"), kprobeVariant("kprobe_restrack_del", "rdma_restrack_del")}},
	{Name: "rdma_restrack_begin_del", kprobeIfPreemptible: true, variants: []variant{
		tracingVariant("fentry", "fentry_restrack_begin_del"), kprobeVariant("kprobe_restrack_begin_del", "rdma_restrack_begin_del")}},
	{Name: "rdma_restrack_commit_del", kprobeIfPreemptible: true, variants: []variant{
		tracingVariant("fentry", "fentry_restrack_commit_del"), kprobeVariant("kprobe_restrack_commit_del", "rdma_restrack_commit_del")}},
	{Name: "rdma_restrack_abort_del", kprobeIfPreemptible: true, variants: []variant{
		tracingVariant("fentry", "fentry_restrack_abort_del"), kprobeVariant("kprobe_restrack_abort_del", "rdma_restrack_abort_del")}},
	// Its entry half marks the modify in progress (rxe's move to ERR inside
	// it is the modify's); the variant keeps the name of the half that
	// reports.
	{Name: "_ib_modify_qp", kprobeIfPreemptible: true, variants: []variant{
		{name: "fexit", progs: []prog{{name: "fentry_modify_qp", kind: tracing}, {name: "fexit_modify_qp", kind: tracing}}},
		{name: "kprobe+kretprobe", progs: []prog{
			{name: "kprobe_modify_qp", kind: kprobe, target: "_ib_modify_qp"},
			{name: "kretprobe_modify_qp", kind: kretprobe, target: "_ib_modify_qp"}}},
	}},
	{Name: "rdma_create_user_id", variants: []variant{tracingVariant("fexit", "fexit_create_user_id")}},
	{Name: "__rdma_create_kernel_id", variants: []variant{tracingVariant("fexit", "fexit_create_kernel_id")}},
	{Name: "ib_register_device", variants: []variant{tracingVariant("fexit", "fexit_register_device")}},
	{Name: "__ib_unregister_device", variants: []variant{
		{name: "fentry+fexit", progs: []prog{{name: "fentry_unregister_device", kind: tracing}, {name: "fexit_unregister_device", kind: tracing}}},
		kprobeVariant("kprobe_unregister_device", "__ib_unregister_device")}},
	closeHook("ib_uverbs_close", "uverbs_close"), closeHook("ucma_close", "ucma_close"),
	cmHook("cm_event_handler"), cmHook("cm_event_done"), cmHook("cm_req_handler"),
	cmHook("cm_send_req"), cmHook("cm_send_rep"), cmHook("cm_send_rtu"), cmHook("cm_send_rej"),
	// A kernel after 6.12 renamed cm_send_mra to cm_prepare_mra (same
	// class, same argument); Debian sid's 7.2 has only the new name.
	cmHook("cm_send_mra", "cm_prepare_mra"), cmHook("cm_disconnect"), cmHook("cm_sent_dreq"), cmHook("cm_sent_drep"),
	cmHook("cm_id_attach"), cmHook("cm_id_destroy"), cmHook("cm_qp_create"), cmHook("cm_qp_destroy"),

	// Port conflicts: EADDRINUSE from rdma_listen, rdma_connect and a
	// process's TCP bind (iWARP shares the host's TCP ports).
	portHook("rdma_listen", "rdma_listen"),
	portHook("rdma_connect_locked", "rdma_connect", "rdma_connect"), // 5.10 has rdma_connect only
	portHook("__inet_bind", "inet_bind"), portHook("__inet6_bind", "inet6_bind"),

	// SMC sockets that fall back to TCP, with the reason (smc loaded).
	moduleHook("smc", tpHook("smc", "smc_switch_to_fallback")),
	// SMC-R links: the QP each link creates and destroys, with its link
	// group, and links that go down (smc loaded; its BTF names the types).
	moduleHook("smc", Hook{Name: "smc_ib_create_queue_pair", variants: []variant{tracingVariant("fexit", "fexit_smc_ib_create_queue_pair")}}),
	moduleHook("smc", Hook{Name: "smc_ib_destroy_queue_pair", variants: []variant{
		tracingVariant("fentry", "fentry_smc_ib_destroy_queue_pair"),
		kprobeVariant("kprobe_smc_ib_destroy_queue_pair", "smc_ib_destroy_queue_pair")}}),
	moduleHook("smc", tpHook("smc", "smcr_link_down")),

	// Why things fail: asynchronous events of ports and devices (every
	// driver raises them through ib_dispatch_event) and of user objects
	// (uverbs' handlers); siw's of kernel objects; QPs that rxe moves to
	// ERR, and error completions of rxe and siw, counted per QP and
	// status, reported at the first and, per status, at the QP's destroy.
	entryHook("ib_dispatch_event", "dispatch_event"),
	entryHook("ib_uverbs_qp_event_handler", "uverbs_qp_event"), entryHook("ib_uverbs_cq_event_handler", "uverbs_cq_event"),
	entryHook("ib_uverbs_srq_event_handler", "uverbs_srq_event"), entryHook("ib_uverbs_wq_event_handler", "uverbs_wq_event"),
	moduleHook("siw", entryHook("siw_qp_event", "siw_qp_event")), moduleHook("siw", entryHook("siw_cq_event", "siw_cq_event")),
	moduleHook("siw", entryHook("siw_srq_event", "siw_srq_event")),
	moduleHook("rdma_rxe", entryHook("rxe_qp_error", "rxe_qp_error")),
	moduleHook("rdma_rxe", entryHook("rxe_cq_post", "rxe_cq_post")),
	moduleHook("siw", entryHook("siw_sqe_complete", "siw_sqe_complete")),
	moduleHook("siw", entryHook("siw_rqe_complete", "siw_rqe_complete")),
	entryHook("ib_destroy_qp_user", "destroy_qp_user"),

	// Calls that created nothing: a create's failure at uverbs' two entry
	// points, with what the deeper hooks saw (the QP asked for, the MR's
	// pin against RLIMIT_MEMLOCK, the rdma cgroup's refusal), and rdma_cm
	// steps that fail inside the call. Each degrades on its own: without
	// ib_create_qp_user (before 5.15) a QP's failure still comes, without
	// what it asked. ib_umem_get is __ib_umem_get_va in ib_core on Debian
	// sid's 7.2.
	callHook("ib_uverbs_ioctl"), callHook("ib_uverbs_write"),
	callHook("ib_create_qp_user"), callHook("ib_umem_get", "__ib_umem_get_va"), callHook("ib_rdmacg_try_charge"),
	callHook("rdma_bind_addr"), callHook("rdma_resolve_addr"), callHook("rdma_resolve_route"),
	callHook("rdma_listen"), callHook("rdma_connect_locked", "rdma_connect"),
	// The GID table's changes: ib_core's cache tells its clients of them
	// (GID_CHANGE) without ib_dispatch_event.
	entryHook("add_modify_gid", "add_modify_gid"), entryHook("del_gid", "del_gid"),

	// Spans (with --follow-pid only): how long the kernel took for each
	// rdma_cm step and verb. Registrations and creations of every process
	// are seen (they are what slows the followed one down); BPF reports
	// ucma_get_event, mostly waiting for the next event, only for
	// followed processes.
	spanHook("rdma_resolve_addr"), spanHook("rdma_resolve_route"), spanHook("rdma_connect_locked"),
	spanHook("ucma_get_event"),
	spanHook("ib_uverbs_reg_mr"), spanHook("ib_umem_get"), spanHook("ib_dereg_mr_user"),
	spanHook("ib_uverbs_alloc_pd"),
	spanHook("ib_uverbs_handler_UVERBS_METHOD_CQ_CREATE"), spanHook("ib_uverbs_handler_UVERBS_METHOD_QP_CREATE"),
	spanHook("ib_uverbs_create_cq"), spanHook("ib_uverbs_ex_create_cq"),
	spanHook("ib_uverbs_create_qp"), spanHook("ib_uverbs_ex_create_qp"),
	spanHook("ib_uverbs_modify_qp"), spanHook("ib_uverbs_ex_modify_qp"),
	// Off-CPU spells of the followed processes' threads; filtered in BPF,
	// as every context switch of the machine passes through them.
	followedHook(tpHook("sched", "sched_switch")), followedHook(tpHook("sched", "sched_wakeup")),
}

// btf says whether the variant needs BTF (fentry, fexit, tp_btf).
func (v variant) btf() bool {
	for _, p := range v.progs {
		if p.kind == tracing {
			return true
		}
	}
	return false
}

// fallbackSkips says whether --fallback skips v: a BTF variant of a hook
// that has a variant of another kind (a hook with fexit only keeps it).
func (h Hook) fallbackSkips(v variant) bool {
	if !v.btf() {
		return false
	}
	for _, o := range h.variants {
		if !o.btf() {
			return true
		}
	}
	return false
}

// order is the variants attachHook tries, in order: as listed, without
// those --fallback skips, and on a preemptible kernel (kprobesFirst) with
// the kprobe variants first where the hook asks for it.
func (h Hook) order(fallback, kprobesFirst bool) []variant {
	var out []variant
	for _, v := range h.variants {
		if !(fallback && h.fallbackSkips(v)) {
			out = append(out, v)
		}
	}
	if kprobesFirst && h.kprobeIfPreemptible {
		slices.SortStableFunc(out, func(a, b variant) int {
			switch {
			case a.btf() == b.btf():
				return 0
			case a.btf():
				return 1
			}
			return -1
		})
	}
	return out
}

// Variants names the variants of a hook in order of preference.
func (h Hook) Variants() []string {
	out := make([]string, len(h.variants))
	for i, v := range h.variants {
		out[i] = v.name
	}
	return out
}

// attach attaches one loaded program.
func (p prog) attach(loaded *loadedProg) (link.Link, error) {
	switch p.kind {
	case kprobe:
		return link.Kprobe(p.target, loaded.prog, nil)
	case kretprobe:
		return link.Kretprobe(p.target, loaded.prog, nil)
	case rawTP:
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: p.target, Program: loaded.prog})
	}
	return link.AttachTracing(link.TracingOptions{Program: loaded.prog})
}
