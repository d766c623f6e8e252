/* SPDX-License-Identifier: GPL-2.0 */
/* ==== rdma_cm: IDs and the rdma_cma tracepoints ====
 * An rdma_cm ID's creation (rdma_create_user_id, __rdma_create_kernel_id:
 * no tracepoint says so, and restrack sees the ID only once it is bound to
 * a device) and every rdma_cma tracepoint, as struct res_event with cm_tp
 * saying which. */
#ifndef RDMATRACE_CM_H
#define RDMATRACE_CM_H

#include "common.h"
#include "resources.h"

/* rdma_cma tracepoints, in EV_CM's cm_tp. */
enum cm_tp {
	CM_TP_EVENT_HANDLER = 1,
	CM_TP_EVENT_DONE,
	CM_TP_REQ_HANDLER,
	CM_TP_SEND_REQ,
	CM_TP_SEND_REP,
	CM_TP_SEND_RTU,
	CM_TP_SEND_REJ,
	CM_TP_SEND_MRA,
	CM_TP_DISCONNECT,
	CM_TP_SENT_DREQ,
	CM_TP_SENT_DREP,
	CM_TP_ID_ATTACH,
	CM_TP_ID_DESTROY,
	CM_TP_QP_CREATE,
	CM_TP_QP_DESTROY,
	CM_TP_LISTEN, /* rdma_listen succeeded: no tracepoint says so */
};

const enum cm_tp *unused_cm_tp __attribute__((unused));

static __always_inline int emit_cm(__u32 tp, struct rdma_id_private *id, struct rdma_cm_event *ev, int status)
{
	/* tp_btf arguments may be NULL as far as the verifier knows (6.12
	 * says trusted_ptr_or_null): check before any offset arithmetic. */
	if (!id)
		return 0;
	struct res_event *e = reserve(struct res_event, EV_CM);
	if (!e)
		return 0;
	set_cm(&e->h, &e->dev, &e->res, &e->addr, id);
	e->cm_tp = tp;
	if (ev) {
		e->cm_event = BPF_CORE_READ(ev, event);
		e->status = BPF_CORE_READ(ev, status);
		e->h.flags |= F_HAS_CM;
	} else if (tp == CM_TP_QP_CREATE) {
		e->status = status;
	}
	submit(&e->h);
	return 0;
}

SEC("fexit/rdma_create_user_id")
int BPF_PROG(fexit_create_user_id, void *handler, void *context, enum rdma_ucm_port_space ps, enum ib_qp_type qpt,
	     struct rdma_cm_id *ret)
{
	if (!ret || (unsigned long)ret >= (unsigned long)-4095)
		return 0;
	struct res_event *e = reserve(struct res_event, EV_CM_ID_CREATE);
	if (!e)
		return 0;
	set_cm(&e->h, &e->dev, &e->res, &e->addr, container(ret, struct rdma_id_private, id));
	submit(&e->h);
	return 0;
}

SEC("fexit/__rdma_create_kernel_id")
int BPF_PROG(fexit_create_kernel_id, void *net, void *handler, void *context, enum rdma_ucm_port_space ps,
	     enum ib_qp_type qpt, const char *caller, struct rdma_cm_id *ret)
{
	if (!ret || (unsigned long)ret >= (unsigned long)-4095)
		return 0;
	struct res_event *e = reserve(struct res_event, EV_CM_ID_CREATE);
	if (!e)
		return 0;
	set_cm(&e->h, &e->dev, &e->res, &e->addr, container(ret, struct rdma_id_private, id));
	if (caller)
		bpf_probe_read_kernel_str(e->res.kern_name, sizeof(e->res.kern_name), caller);
	submit(&e->h);
	return 0;
}

/* The rdma_cma tracepoints. */
#define CM_HOOK(tp, cm_tp) TP_HOOK(tp, (emit_cm(cm_tp, id, 0, 0)), struct rdma_id_private *id)
CM_HOOK(cm_send_req, CM_TP_SEND_REQ)
CM_HOOK(cm_send_rep, CM_TP_SEND_REP)
CM_HOOK(cm_send_rtu, CM_TP_SEND_RTU)
CM_HOOK(cm_send_rej, CM_TP_SEND_REJ)
CM_HOOK(cm_send_mra, CM_TP_SEND_MRA)
CM_HOOK(cm_disconnect, CM_TP_DISCONNECT)
CM_HOOK(cm_sent_dreq, CM_TP_SENT_DREQ)
CM_HOOK(cm_sent_drep, CM_TP_SENT_DREP)
CM_HOOK(cm_id_attach, CM_TP_ID_ATTACH)
CM_HOOK(cm_id_destroy, CM_TP_ID_DESTROY)
CM_HOOK(cm_qp_destroy, CM_TP_QP_DESTROY)
CM_HOOK(cm_req_handler, CM_TP_REQ_HANDLER)
TP_HOOK(cm_qp_create, (emit_cm(CM_TP_QP_CREATE, id, 0, rc)),
	struct rdma_id_private *id, struct ib_pd *pd, void *init_attr, int rc)
TP_HOOK(cm_event_handler, (emit_cm(CM_TP_EVENT_HANDLER, id, ev, 0)),
	struct rdma_id_private *id, struct rdma_cm_event *ev)
TP_HOOK(cm_event_done, (emit_cm(CM_TP_EVENT_DONE, id, ev, result)),
	struct rdma_id_private *id, struct rdma_cm_event *ev, int result)

#endif /* RDMATRACE_CM_H */
