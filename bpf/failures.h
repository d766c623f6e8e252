/* SPDX-License-Identifier: GPL-2.0 */
/* ==== Why did it fail: asynchronous events and QP errors ====
 * Asynchronous events: a device's and its ports' (ib_dispatch_event, which
 * every driver calls for PORT_ACTIVE, PORT_ERR, GID_CHANGE, ... in its own
 * context: the netdev notifier of an `ip link set down`), and a user
 * object's (ib_uverbs_{qp,cq,srq,wq}_event_handler, the handler uverbs
 * gives every user object). Kernel objects have no common point: their
 * ULP's handler is called by the driver itself; siw calls it from
 * siw_{qp,cq,srq}_event, hooked for kernel objects only (user objects are
 * seen by uverbs). rxe calls it inline: its kernel objects' events are not
 * seen.
 *
 * QP errors: a QP the driver moves to ERR by itself (rxe_qp_error on a QP
 * not in ERR yet, outside a modify of the QP to ERR, which is reported as
 * the modify), and the
 * error completions of drivers that complete work in the kernel (rxe's
 * rxe_cq_post, siw's siw_sqe_complete and siw_rqe_complete): counted per QP
 * and status in wc_errors, one event at a QP's first error completion, and
 * the counts once, when the QP is destroyed (ib_destroy_qp_user). */

#ifndef RDMATRACE_FAILURES_H
#define RDMATRACE_FAILURES_H

#include "common.h"
#include "resources.h" /* modify_args: a modify in progress */

#define N_WC_STATUS 22 /* enum ib_wc_status: IB_WC_SUCCESS .. IB_WC_GENERAL_ERR */
#define GID_LEN 16

/* What a qp_error_event says (its cause). */
enum qp_error_cause {
	QPE_DRIVER_ERR = 1, /* the driver moved the QP to ERR itself */
	QPE_FIRST_WC = 2,   /* the QP's first error completion; wc_status is its status */
	QPE_WC_COUNT = 3,   /* at the QP's destroy: count completions had wc_status */
};

/* A QP's peer as the driver keeps it (F_HAS_PEER). */
struct ev_peer {
	__u8 gid[GID_LEN];
	__u32 qpn;
	__u32 pad;
};

/* EV_ASYNC: an asynchronous event, about a device port (res_type 0xff) or
 * an object (res: its type, id, QP number). */
struct async_event {
	struct event_hdr h;
	struct ev_dev dev;
	struct ev_res res;
	struct ev_peer peer;
	__u32 ib_event; /* enum ib_event_type */
	__u32 pad;
};

/* EV_QP_ERROR: a QP moved to ERR by its driver, or its error completions. */
struct qp_error_event {
	struct event_hdr h;
	struct ev_dev dev;
	struct ev_res res;
	struct ev_peer peer;
	__u64 count;     /* QPE_FIRST_WC: 1; QPE_WC_COUNT: how many */
	__u32 wc_status; /* enum ib_wc_status; 0 for QPE_DRIVER_ERR */
	__u32 cause;     /* enum qp_error_cause */
};

const struct async_event *unused_async_event __attribute__((unused));
const struct qp_error_event *unused_qp_error_event __attribute__((unused));
const enum qp_error_cause *unused_qp_error_cause __attribute__((unused));

#define NO_RES_TYPE 0xff /* a port or device event: no object */

/* The drivers' types, from their module's BTF at load time. */
struct rxe_av {
	struct ib_global_route grh;
} __attribute__((preserve_access_index));

struct rxe_qp {
	struct ib_qp ibqp;
	struct ib_qp_attr attr;
	struct rxe_av pri_av;
} __attribute__((preserve_access_index));

struct rxe_cq {
	struct ib_cq ibcq;
} __attribute__((preserve_access_index));

/* siw's objects begin with the core's (struct siw_qp's base_qp, siw_cq's
 * base_cq, siw_srq's base_srq, since siw came in 5.3): cast, not
 * relocated, because Debian builds no siw and one built out of tree may
 * have no BTF (its hooks are then kprobes). */

/* The peer of an rxe QP: the destination of its primary path and the
 * remote QP number, as modify_qp(RTR) gave them. Other drivers keep them in
 * their own way (siw has none: its peer is a TCP connection). */
static __always_inline void set_peer(struct event_hdr *h, struct ev_peer *p, struct ib_qp *qp)
{
	if (!bpf_core_type_exists(struct rxe_qp))
		return;
	int rxe = bpf_core_enum_value(enum rdma_driver_id, RDMA_DRIVER_RXE);
	if (BPF_CORE_READ(qp, device, ops.driver_id) != rxe)
		return;
	struct rxe_qp *rqp = container(qp, struct rxe_qp, ibqp);
	p->qpn = BPF_CORE_READ(rqp, attr.dest_qp_num);
	BPF_CORE_READ_INTO(&p->gid, rqp, pri_av.grh.dgid.raw);
	if (p->qpn)
		h->flags |= F_HAS_PEER;
}

/* A QP: its device, owner, number, type, port and peer. */
static __always_inline void set_failed_qp(struct event_hdr *h, struct ev_dev *d, struct ev_res *r, struct ev_peer *p,
					  struct ib_qp *qp)
{
	h->obj = (__u64)qp;
	set_dev(h, d, BPF_CORE_READ(qp, device));
	set_owner(h, r, &qp->res);
	r->res_type = RDMA_RESTRACK_QP;
	set_qp(h, d, r, qp);
	set_peer(h, p, qp);
}

static __always_inline int emit_async(struct ib_event *ev, struct ib_device *dev, __u32 type, void *obj)
{
	struct async_event *e = reserve(struct async_event, EV_ASYNC);
	if (!e)
		return 0;
	e->ib_event = BPF_CORE_READ(ev, event);
	e->res.res_type = NO_RES_TYPE;
	switch (type) {
	case RDMA_RESTRACK_QP:
		set_failed_qp(&e->h, &e->dev, &e->res, &e->peer, obj);
		break;
	case RDMA_RESTRACK_CQ: {
		struct ib_cq *cq = obj;
		e->h.obj = (__u64)cq;
		set_dev(&e->h, &e->dev, BPF_CORE_READ(cq, device));
		set_owner(&e->h, &e->res, &cq->res);
		break;
	}
	case RDMA_RESTRACK_SRQ: {
		struct ib_srq *srq = obj;
		e->h.obj = (__u64)srq;
		set_dev(&e->h, &e->dev, BPF_CORE_READ(srq, device));
		e->res.res_type = RDMA_RESTRACK_SRQ;
		if (bpf_core_field_exists(srq->res)) /* SRQs are tracked from 5.12 */
			set_owner(&e->h, &e->res, &srq->res);
		break;
	}
	default: { /* a port or the device; a WQ (no restrack entry): its device */
		set_dev(&e->h, &e->dev, dev);
		if (obj) {
			e->h.obj = (__u64)obj;
			e->h.flags |= F_USER; /* only user WQs are seen */
		} else {
			/* port_num was a u8 before 5.12's u32: read its low byte, which
			 * holds every port number there is. */
			__u8 port = 0;
			bpf_probe_read_kernel(&port, 1, __builtin_preserve_access_index(&ev->element.port_num));
			e->dev.port = port;
		}
	}
	}
	submit(&e->h);
	return 0;
}

/* A device's or a port's event, in the context of the driver that raised
 * it. ib_dispatch_event queues it; ib_dispatch_event_clients delivers it. */
static __always_inline int on_dispatch(struct ib_event *ev)
{
	if (!ev)
		return 0;
	return emit_async(ev, BPF_CORE_READ(ev, device), NO_RES_TYPE, 0);
}

static __always_inline int on_user_event(struct ib_event *ev, __u32 type)
{
	if (!ev)
		return 0;
	void *obj = BPF_CORE_READ(ev, element.qp); /* the union's pointer, whichever it is */
	if (!obj)
		return 0;
	return emit_async(ev, BPF_CORE_READ(ev, device), type, obj);
}

#define WQ_TYPE 0xfe /* not a restrack type: a WQ has no entry */

ENTRY_HOOK(ib_dispatch_event, dispatch_event, (on_dispatch(ev)), struct ib_event *ev)
ENTRY_HOOK(ib_uverbs_qp_event_handler, uverbs_qp_event, (on_user_event(ev, RDMA_RESTRACK_QP)), struct ib_event *ev)
ENTRY_HOOK(ib_uverbs_cq_event_handler, uverbs_cq_event, (on_user_event(ev, RDMA_RESTRACK_CQ)), struct ib_event *ev)
ENTRY_HOOK(ib_uverbs_srq_event_handler, uverbs_srq_event, (on_user_event(ev, RDMA_RESTRACK_SRQ)), struct ib_event *ev)
ENTRY_HOOK(ib_uverbs_wq_event_handler, uverbs_wq_event, (on_user_event(ev, WQ_TYPE)), struct ib_event *ev)

/* siw's events of kernel objects (a user object's event reaches uverbs,
 * which reports it). */
static __always_inline int emit_kernel_event(void *obj, struct ib_device *dev, __u32 type, __u32 etype)
{
	struct async_event *e = reserve(struct async_event, EV_ASYNC);
	if (!e)
		return 0;
	e->ib_event = etype;
	e->res.res_type = NO_RES_TYPE;
	switch (type) {
	case RDMA_RESTRACK_QP:
		set_failed_qp(&e->h, &e->dev, &e->res, &e->peer, obj);
		break;
	case RDMA_RESTRACK_CQ:
		e->h.obj = (__u64)obj;
		set_dev(&e->h, &e->dev, dev);
		set_owner(&e->h, &e->res, &((struct ib_cq *)obj)->res);
		break;
	default:
		e->h.obj = (__u64)obj;
		set_dev(&e->h, &e->dev, dev);
		e->res.res_type = RDMA_RESTRACK_SRQ;
		if (bpf_core_field_exists(((struct ib_srq *)obj)->res)) /* SRQs are tracked from 5.12 */
			set_owner(&e->h, &e->res, &((struct ib_srq *)obj)->res);
	}
	submit(&e->h);
	return 0;
}

static __always_inline int on_siw_qp_event(void *sqp, __u32 etype)
{
	struct ib_qp *qp = sqp;
	if (!qp || BPF_CORE_READ(qp, uobject))
		return 0;
	return emit_kernel_event(qp, BPF_CORE_READ(qp, device), RDMA_RESTRACK_QP, etype);
}

static __always_inline int on_siw_cq_event(void *scq, __u32 etype)
{
	struct ib_cq *cq = scq;
	if (!cq || BPF_CORE_READ(cq, uobject))
		return 0;
	return emit_kernel_event(cq, BPF_CORE_READ(cq, device), RDMA_RESTRACK_CQ, etype);
}

static __always_inline int on_siw_srq_event(void *ssrq, __u32 etype)
{
	struct ib_srq *srq = ssrq;
	if (!srq || BPF_CORE_READ(srq, uobject))
		return 0;
	return emit_kernel_event(srq, BPF_CORE_READ(srq, device), RDMA_RESTRACK_SRQ, etype);
}

ENTRY_HOOK(siw_qp_event, siw_qp_event, (on_siw_qp_event(qp, etype)), void *qp, enum ib_event_type etype)
ENTRY_HOOK(siw_cq_event, siw_cq_event, (on_siw_cq_event(cq, etype)), void *cq, enum ib_event_type etype)
ENTRY_HOOK(siw_srq_event, siw_srq_event, (on_siw_srq_event(srq, etype)), void *srq, enum ib_event_type etype)

/* ---- QP errors ---- */

/* Error completions per QP (its device and number) and status; n[0], which
 * no error has, is their total. */
struct wc_key {
	__u64 dev;
	__u32 qpn;
	__u32 pad;
};

struct wc_counts {
	__u64 n[32]; /* N_WC_STATUS used; 32 for a masked index the verifier sees bounded */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct wc_key);
	__type(value, struct wc_counts);
} wc_errors SEC(".maps");

static __always_inline int emit_qp_error(struct ib_qp *qp, __u32 cause, __u32 status, __u64 n_wc)
{
	struct qp_error_event *e = reserve(struct qp_error_event, EV_QP_ERROR);
	if (!e)
		return 0;
	e->cause = cause;
	e->wc_status = status;
	e->count = n_wc;
	set_failed_qp(&e->h, &e->dev, &e->res, &e->peer, qp);
	submit(&e->h);
	return 0;
}

/* xa_load, bounded: the restrack entry of a QP by its number (restrack
 * files a QP under its number). XA_CHUNK_SHIFT is 6. */
#define XA_CHUNK_MASK 63
static __always_inline int xa_is_node(__u64 entry) { return (entry & 3) == 2 && entry > 4096; }

static __always_inline struct ib_qp *qp_by_number(struct ib_device *dev, __u32 qpn)
{
	struct rdma_restrack_root *roots = BPF_CORE_READ(dev, res);
	if (!roots)
		return 0;
	struct rdma_restrack_root *rt = &roots[RDMA_RESTRACK_QP];
	__u64 entry = (__u64)BPF_CORE_READ(rt, xa.xa_head);
	if (!xa_is_node(entry))
		return qpn == 0 && entry && (entry & 3) == 0 ? container((void *)entry, struct ib_qp, res) : 0;
	struct xa_node *node = (void *)(entry - 2);
	if ((qpn >> BPF_CORE_READ(node, shift)) > XA_CHUNK_MASK)
		return 0;
	for (int i = 0; i < 6; i++) { /* 6 levels of 64 cover 36 bits; a QPN has 24 */
		__u32 off = (qpn >> BPF_CORE_READ(node, shift)) & XA_CHUNK_MASK;
		entry = (__u64)BPF_CORE_READ(node, slots[off]);
		if (!xa_is_node(entry))
			break;
		node = (void *)(entry - 2);
	}
	if (!entry || (entry & 3) != 0) /* empty, or an internal entry */
		return 0;
	return container((void *)entry, struct ib_qp, res);
}

/* An error completion of qp (its number qpn on dev; qp NULL where only the
 * number is known, then looked up): counted, and the QP's first reported. */
static __always_inline int count_wc(struct ib_device *dev, __u32 qpn, struct ib_qp *qp, __u32 status)
{
	if (status == 0 || status >= N_WC_STATUS)
		return 0;
	struct wc_key k = {.dev = (__u64)dev, .qpn = qpn};
	struct wc_counts *c = bpf_map_lookup_elem(&wc_errors, &k);
	if (!c) {
		static const struct wc_counts zero;
		if (bpf_map_update_elem(&wc_errors, &k, &zero, BPF_NOEXIST) && bpf_map_update_elem(&wc_errors, &k, &zero, BPF_ANY)) {
			side_drop();
			return 0;
		}
		c = bpf_map_lookup_elem(&wc_errors, &k);
		if (!c)
			return 0;
	}
	/* Two CPUs completing the QP's first errors at once may both report
	 * one: rare, and harmless beside a count that is right. */
	int first = c->n[0] == 0;
	__sync_fetch_and_add(&c->n[0], 1);
	__u64 idx = status;
	asm volatile("%0 &= 31" : "+r"(idx)); /* a bound the compiler cannot drop as known */
	__sync_fetch_and_add(&c->n[idx], 1);
	if (!first)
		return 0;
	if (!qp)
		qp = qp_by_number(dev, qpn);
	if (!qp)
		return 0;
	return emit_qp_error(qp, QPE_FIRST_WC, status, 1);
}

/* Whether this thread is inside a modify of qp to ERR (_ib_modify_qp's
 * entry saved it in modify_args; its return removes it). rxe carries out
 * such a modify with rxe_qp_error, the function it also moves a failed QP
 * to ERR with: that move is the modify's, which the QP's modify event
 * already reports. Only a modify to ERR counts: rxe's completer or
 * responder, run in softirq on top of a thread modifying the same QP to
 * another state, still has its own move reported. */
static __always_inline int in_modify_to_err(struct ib_qp *qp)
{
	__u64 key = bpf_get_current_pid_tgid();
	struct modify_args *a = bpf_map_lookup_elem(&modify_args, &key);
	if (!a || a->qp != (__u64)qp || !(a->mask & IB_QP_STATE))
		return 0;
	struct ib_qp_attr *attr = (void *)a->attr;
	return attr && BPF_CORE_READ(attr, qp_state) == IB_QPS_ERR;
}

/* rxe: a QP the driver moved to ERR (a retry count run out, a remote or
 * local error in the completer or responder), unless it is in ERR already
 * or a modify to ERR of that QP is what moves it. rxe_qp_error also
 * flushes: rxe's tasks call it again for each work request they find on a
 * QP in ERR, in a kworker or softirq after a modify to ERR as well, and
 * the modify sets the state before it calls rxe_qp_error. */
static __always_inline int on_rxe_qp_error(struct rxe_qp *rqp)
{
	if (!rqp || BPF_CORE_READ(rqp, attr.qp_state) == IB_QPS_ERR || in_modify_to_err(&rqp->ibqp))
		return 0;
	return emit_qp_error(&rqp->ibqp, QPE_DRIVER_ERR, 0, 0);
}

/* rxe: every completion passes rxe_cq_post; only errors go on. A user
 * CQ's entry is an ib_uverbs_wc, which has the QP's number; a kernel CQ's an
 * ib_wc, which has the QP. Both begin with the 64-bit wr_id and the
 * status. */
static __always_inline int on_rxe_cq_post(struct rxe_cq *rcq, void *cqe)
{
	__u32 status = 0;
	if (!rcq || bpf_probe_read_kernel(&status, 4, cqe + 8) || status == 0)
		return 0;
	struct ib_cq *cq = &rcq->ibcq;
	struct ib_device *dev = BPF_CORE_READ(cq, device);
	if (BPF_CORE_READ(cq, uobject)) {
		__u32 qpn = 0;
		bpf_probe_read_kernel(&qpn, 4, cqe + 28); /* struct ib_uverbs_wc's qp_num (uapi) */
		return count_wc(dev, qpn, 0, status);
	}
	struct ib_qp *qp = BPF_CORE_READ((struct ib_wc *)cqe, qp);
	if (!qp)
		return 0;
	return count_wc(dev, BPF_CORE_READ(qp, qp_num), qp, status);
}

ENTRY_HOOK(rxe_qp_error, rxe_qp_error, (on_rxe_qp_error(qp)), struct rxe_qp *qp)
ENTRY_HOOK(rxe_cq_post, rxe_cq_post, (on_rxe_cq_post(cq, cqe)), struct rxe_cq *cq, void *cqe)

/* siw: its work completion statuses (enum siw_wc_status, uapi) as
 * ib_wc_status, as siw_reap_cqe maps them. */
static __always_inline __u32 siw_wc_status(__u32 s)
{
	switch (s) {
	case 1: return IB_WC_LOC_LEN_ERR;
	case 2: return IB_WC_LOC_PROT_ERR;
	case 3: return IB_WC_LOC_QP_OP_ERR;
	case 4: return IB_WC_WR_FLUSH_ERR;
	case 5: return IB_WC_BAD_RESP_ERR;
	case 6: return IB_WC_LOC_ACCESS_ERR;
	case 7: return IB_WC_REM_ACCESS_ERR;
	case 8: return IB_WC_REM_INV_REQ_ERR;
	case 9: return IB_WC_GENERAL_ERR;
	}
	return 0;
}

static __always_inline int on_siw_complete(struct ib_qp *qp, __u32 status)
{
	if (!qp || status == 0)
		return 0;
	return count_wc(BPF_CORE_READ(qp, device), BPF_CORE_READ(qp, qp_num), qp, siw_wc_status(status));
}

ENTRY_HOOK(siw_sqe_complete, siw_sqe_complete, (on_siw_complete(qp, status)),
	   struct ib_qp *qp, void *sqe, __u32 bytes, __u32 status)
ENTRY_HOOK(siw_rqe_complete, siw_rqe_complete, (on_siw_complete(qp, status)),
	   struct ib_qp *qp, void *rqe, __u32 bytes, __u32 inval_stag, __u32 status)

/* A QP is destroyed: its error completions, one event per status. */
static __always_inline int on_destroy_qp(struct ib_qp *qp)
{
	if (!qp)
		return 0;
	struct wc_key k = {.dev = (__u64)BPF_CORE_READ(qp, device), .qpn = BPF_CORE_READ(qp, qp_num)};
	struct wc_counts *c = bpf_map_lookup_elem(&wc_errors, &k);
	if (!c)
		return 0;
	struct wc_counts n = *c;
	bpf_map_delete_elem(&wc_errors, &k);
	for (__u32 s = 1; s < N_WC_STATUS; s++)
		if (n.n[s])
			emit_qp_error(qp, QPE_WC_COUNT, s, n.n[s]);
	return 0;
}

ENTRY_HOOK(ib_destroy_qp_user, destroy_qp_user, (on_destroy_qp(qp)), struct ib_qp *qp)

#endif /* RDMATRACE_FAILURES_H */
