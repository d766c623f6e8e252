/* SPDX-License-Identifier: GPL-2.0 */
/* ==== Resources: ib_core's resource tracking and QP state ====
 * Every tracked QP, CQ, PD, MR, CM_ID, context, counter and SRQ passes
 * through rdma_restrack_add and rdma_restrack_del (or the begin/commit/
 * abort of a destroy); _ib_modify_qp is where a QP changes state (and
 * where qpattr.h reads its settings); the release of a uverbs or rdma_cm
 * file marks what it frees as a closed file's cleanup. */
#ifndef RDMATRACE_RESOURCES_H
#define RDMATRACE_RESOURCES_H

#include "common.h"
#include "qpattr.h"

/* EV_RES_*, EV_QP_STATE, EV_CM_ID_CREATE, EV_CM: a resource's lifecycle. */
struct res_event {
	struct event_hdr h;
	struct ev_dev dev;
	struct ev_res res;
	struct ev_addr addr;
	__u64 size;    /* F_HAS_SIZE: an MR's length */
	__u32 cm_tp;   /* EV_CM: enum cm_tp */
	__u32 cm_event; /* F_HAS_CM */
	__s32 status;  /* EV_CM: the cm event's status, or the QP creation's */
};

const struct res_event *unused_res_event __attribute__((unused));

/* Last known state of each QP, by address, to report old -> new. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} qp_states SEC(".maps");

/* Fill what each restrack type knows: its device, and for QPs the number,
 * type and port. */
static __always_inline void set_res(struct res_event *e, struct rdma_restrack_entry *res)
{
	set_owner(&e->h, &e->res, res);
	switch (e->res.res_type) {
	case RDMA_RESTRACK_PD: {
		struct ib_pd *pd = container(res, struct ib_pd, res);
		e->h.obj = (__u64)pd;
		set_dev(&e->h, &e->dev, BPF_CORE_READ(pd, device));
		break;
	}
	case RDMA_RESTRACK_CQ: {
		struct ib_cq *cq = container(res, struct ib_cq, res);
		e->h.obj = (__u64)cq;
		set_dev(&e->h, &e->dev, BPF_CORE_READ(cq, device));
		break;
	}
	case RDMA_RESTRACK_QP: {
		struct ib_qp *qp = container(res, struct ib_qp, res);
		e->h.obj = (__u64)qp;
		set_dev(&e->h, &e->dev, BPF_CORE_READ(qp, device));
		set_qp(&e->h, &e->dev, &e->res, qp);
		break;
	}
	case RDMA_RESTRACK_CM_ID: {
		struct rdma_id_private *id = container(res, struct rdma_id_private, res);
		__u32 rid = e->res.id;
		set_cm(&e->h, &e->dev, &e->res, &e->addr, id);
		e->res.id = rid;
		break;
	}
	case RDMA_RESTRACK_MR: {
		struct ib_mr *mr = container(res, struct ib_mr, res);
		e->h.obj = (__u64)mr;
		set_dev(&e->h, &e->dev, BPF_CORE_READ(mr, device));
		e->size = BPF_CORE_READ(mr, length); /* bench-trace: an MR's length */
		e->h.flags |= F_HAS_SIZE;
		break;
	}
	case RDMA_RESTRACK_CTX: {
		struct ib_ucontext *ctx = container(res, struct ib_ucontext, res);
		e->h.obj = (__u64)ctx;
		set_dev(&e->h, &e->dev, BPF_CORE_READ(ctx, device));
		break;
	}
	case RDMA_RESTRACK_SRQ: {
		/* ib_srq has a restrack entry since 5.11; on older kernels (5.10
		 * with --btf) the relocation below would fail the whole program,
		 * and with it every restrack hook. */
		if (!bpf_core_field_exists(struct ib_srq, res)) {
			e->h.obj = (__u64)res;
			break;
		}
		struct ib_srq *srq = container(res, struct ib_srq, res);
		e->h.obj = (__u64)srq;
		set_dev(&e->h, &e->dev, BPF_CORE_READ(srq, device));
		break;
	}
	default:
		e->h.obj = (__u64)res;
	}
}

static __always_inline int emit_res(__u32 kind, struct rdma_restrack_entry *res)
{
	if (!res)
		return 0;
	/* rdma_cm calls rdma_restrack_del for IDs that were never added
	 * (never bound to a device): the kernel returns at once, and so do we. */
	if (kind == EV_RES_DEL && !BPF_CORE_READ(res, valid))
		return 0;
	struct res_event *e = reserve(struct res_event, kind);
	if (!e)
		return 0;
	set_res(e, res);
	if (e->res.res_type == RDMA_RESTRACK_QP) {
		__u64 key = e->h.obj;
		if (kind == EV_RES_ADD) {
			__u8 reset = 0;
			bpf_map_update_elem(&qp_states, &key, &reset, BPF_ANY);
			e->res.new_state = 0; /* QPs are created in RESET */
			e->h.flags |= F_HAS_STATE;
		} else if (kind == EV_RES_COMMIT_DEL || kind == EV_RES_DEL) {
			bpf_map_delete_elem(&qp_states, &key);
		}
	}
	submit(&e->h);
	return 0;
}

static __always_inline int emit_qp_state(struct ib_qp *qp, struct ib_qp_attr *attr, int mask, int ret)
{
	emit_qp_attr(qp, attr, mask, ret);
	if (ret != 0 || !(mask & IB_QP_STATE) || !qp || !attr)
		return 0;
	struct res_event *e = reserve(struct res_event, EV_QP_STATE);
	if (!e)
		return 0;
	__u64 key = (__u64)qp;
	__u8 new_state = BPF_CORE_READ(attr, qp_state);
	__u8 *old = bpf_map_lookup_elem(&qp_states, &key);
	e->res.old_state = old ? *old : STATE_UNKNOWN;
	e->res.new_state = new_state;
	bpf_map_update_elem(&qp_states, &key, &new_state, BPF_ANY);
	set_res(e, &qp->res);
	e->h.flags |= F_HAS_STATE;
	submit(&e->h);
	return 0;
}

/* ---- Hooks whose variants differ: BTF first ---- */

SEC("fexit/rdma_restrack_add")
int BPF_PROG(fexit_restrack_add, struct rdma_restrack_entry *res)
{
	/* The id is assigned inside the function: read it on return. */
	if (!BPF_CORE_READ(res, valid))
		return 0;
	return emit_res(EV_RES_ADD, res);
}

/* A modify in progress, per thread (pid_tgid), from its entry to its
 * return: what the kretprobe fallback needs, and what tells rxe's own move
 * to ERR inside a modify to ERR (failures.h) from one of its own. */
struct modify_args {
	__u64 qp;   /* struct ib_qp * */
	__u64 attr; /* struct ib_qp_attr * */
	__s32 mask;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 10240);
	__type(key, __u64);
	__type(value, struct modify_args);
} modify_args SEC(".maps");

static __always_inline int modify_enter(struct ib_qp *qp, struct ib_qp_attr *attr, int mask)
{
	struct modify_args a = {.qp = (__u64)qp, .attr = (__u64)attr, .mask = mask};
	save_entry(&modify_args, bpf_get_current_pid_tgid(), &a);
	return 0;
}

/* Both the user path (ib_modify_qp_with_udata) and the kernel path
 * (ib_modify_qp) go through _ib_modify_qp. The fentry program only marks
 * the modify as in progress; the fexit one reports it. */
SEC("fentry/_ib_modify_qp")
int BPF_PROG(fentry_modify_qp, struct ib_qp *qp, struct ib_qp_attr *attr, int mask)
{
	return modify_enter(qp, attr, mask);
}

SEC("fexit/_ib_modify_qp")
int BPF_PROG(fexit_modify_qp, struct ib_qp *qp, struct ib_qp_attr *attr, int mask, struct ib_udata *udata, int ret)
{
	__u64 key = bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&modify_args, &key);
	return emit_qp_state(qp, attr, mask, ret);
}

/* ---- ... and their fallbacks: kprobes, saving what the return needs ---- */

SEC("kprobe/rdma_restrack_add")
int BPF_KPROBE(kprobe_restrack_add, struct rdma_restrack_entry *res)
{
	__u64 val = (__u64)res;
	save_entry(&entry_args, bpf_get_current_pid_tgid(), &val);
	return 0;
}

SEC("kretprobe/rdma_restrack_add")
int BPF_KRETPROBE(kretprobe_restrack_add)
{
	__u64 key = bpf_get_current_pid_tgid();
	__u64 *res = take_entry(&entry_args, key);
	if (!res)
		return 0;
	struct rdma_restrack_entry *r = (void *)*res;
	bpf_map_delete_elem(&entry_args, &key);
	if (!BPF_CORE_READ(r, valid))
		return 0;
	return emit_res(EV_RES_ADD, r);
}

SEC("kprobe/_ib_modify_qp")
int BPF_KPROBE(kprobe_modify_qp, struct ib_qp *qp, struct ib_qp_attr *attr, int mask)
{
	return modify_enter(qp, attr, mask);
}

SEC("kretprobe/_ib_modify_qp")
int BPF_KRETPROBE(kretprobe_modify_qp, int ret)
{
	__u64 key = bpf_get_current_pid_tgid();
	struct modify_args *a = take_entry(&modify_args, key);
	if (!a)
		return 0;
	struct modify_args copy = *a;
	bpf_map_delete_elem(&modify_args, &key);
	return emit_qp_state((struct ib_qp *)copy.qp, (struct ib_qp_attr *)copy.attr, copy.mask, ret);
}

/* ---- Hooks whose two variants share one body ---- */

ENTRY_HOOK(rdma_restrack_del, restrack_del, (emit_res(EV_RES_DEL, res)), struct rdma_restrack_entry *res)
ENTRY_HOOK(rdma_restrack_begin_del, restrack_begin_del, (emit_res(EV_RES_BEGIN_DEL, res)), struct rdma_restrack_entry *res)
ENTRY_HOOK(rdma_restrack_commit_del, restrack_commit_del, (emit_res(EV_RES_COMMIT_DEL, res)), struct rdma_restrack_entry *res)
ENTRY_HOOK(rdma_restrack_abort_del, restrack_abort_del, (emit_res(EV_RES_ABORT_DEL, res)), struct rdma_restrack_entry *res)

/* The release of /dev/infiniband/uverbsN (ib_uverbs) and rdma_cm (rdma_ucm)
 * files, where the kernel frees what a process left behind. */
ENTRY_HOOK(ib_uverbs_close, uverbs_close, close_enter())
RETURN_HOOK(ib_uverbs_close, uverbs_close, close_exit())
ENTRY_HOOK(ucma_close, ucma_close, close_enter())
RETURN_HOOK(ucma_close, ucma_close, close_exit())

/* ---- Not attached by rdmatrace ---- */

/* The two halves of the kretprobe fallbacks' side map, as raw_tp programs
 * that BPF_PROG_TEST_RUN can run on a kernel without RDMA or kprobes:
 * tracer/sidemap_test.go fills entry_args past its size and checks that
 * what was evicted is counted in side_drops. */
SEC("raw_tp")
int BPF_PROG(selftest_save_entry, __u64 key)
{
	save_entry(&entry_args, key, &key);
	return 0;
}

SEC("raw_tp")
int BPF_PROG(selftest_take_entry, __u64 key)
{
	if (take_entry(&entry_args, key))
		bpf_map_delete_elem(&entry_args, &key);
	return 0;
}

#endif /* RDMATRACE_RESOURCES_H */
