/* SPDX-License-Identifier: GPL-2.0 */
/* ==== SMC-R links: which [smc] QP is whose ====
 * No interface gives an SMC-R link's QP number: rdma res lists the smc
 * module's QPs as [smc], SMC's generic netlink the links without QPs. The
 * link itself has both: smc_ib_create_queue_pair(lnk) creates lnk->roce_qp
 * for link lnk->link_id of link group lnk->lgr, on lnk->smcibdev's ibdev,
 * port lnk->ibport; smc_ib_destroy_queue_pair(lnk) destroys it, and
 * smc:smcr_link_down(lnk, location) says the link went down. The types
 * are the smc module's (its BTF). role sits in an anonymous union of
 * struct smc_link_group, which CO-RE searches by name. */
#ifndef RDMATRACE_SMCR_H
#define RDMATRACE_SMCR_H

#include "common.h"

/* EV_SMC_LINK_*: an SMC-R link and its QP. */
struct smc_link_event {
	struct event_hdr h;
	struct ev_dev dev;
	__u32 qpn;    /* F_HAS_QP */
	__u32 lgr_id; /* the link group's id, a host-order u32 as SMC's netlink gives it; 0: no group */
	__s32 status; /* EV_SMC_LINK_CREATE: the creation's */
	__u8 qp_type; /* F_HAS_QP */
	__u8 link_id;
	__u8 link_state; /* enum smc_link_state */
	__u8 role;    /* enum smc_lgr_role */
};

const struct smc_link_event *unused_smc_link_event __attribute__((unused));

struct smc_ib_device {
	struct ib_device *ibdev;
} __attribute__((preserve_access_index));

/* CO-RE matches an enum field only with an enum of the same name. */
enum smc_lgr_role { SMC_CLNT, SMC_SERV };
enum smc_link_state { SMC_LNK_UNUSED, SMC_LNK_INACTIVE, SMC_LNK_ACTIVATING, SMC_LNK_ACTIVE };

struct smc_link_group {
	__u8 id[4]; /* SMC_LGR_ID_SIZE */
	enum smc_lgr_role role;
} __attribute__((preserve_access_index));

struct smc_link {
	struct smc_ib_device *smcibdev;
	__u8 ibport;
	struct ib_qp *roce_qp;
	__u8 link_id;
	struct smc_link_group *lgr;
	enum smc_link_state state;
} __attribute__((preserve_access_index));

static __always_inline int emit_smc_link(__u32 kind, struct smc_link *lnk, int ret)
{
	if (!lnk)
		return 0;
	struct ib_qp *qp = BPF_CORE_READ(lnk, roce_qp);
	if (kind == EV_SMC_LINK_DESTROY && !qp)
		return 0; /* called on cleanup paths that made no QP */
	struct smc_link_event *e = reserve(struct smc_link_event, kind);
	if (!e)
		return 0;
	e->h.obj = (__u64)lnk;
	e->link_id = BPF_CORE_READ(lnk, link_id);
	e->status = ret;
	struct smc_ib_device *sd = BPF_CORE_READ(lnk, smcibdev);
	if (sd)
		set_dev(&e->h, &e->dev, BPF_CORE_READ(sd, ibdev));
	e->dev.port = BPF_CORE_READ(lnk, ibport);
	if (qp) {
		e->qpn = BPF_CORE_READ(qp, qp_num);
		e->qp_type = BPF_CORE_READ(qp, qp_type);
		e->h.flags |= F_HAS_QP;
	}
	e->link_state = BPF_CORE_READ(lnk, state);
	struct smc_link_group *lgr = BPF_CORE_READ(lnk, lgr);
	if (lgr) {
		/* the id's 4 bytes as a host-order u32, as SMC's netlink puts
		 * it (SMC_NLA_LGR_R_ID) and smc-tools print it (%08x) */
		__u32 id = 0;
		BPF_CORE_READ_INTO(&id, lgr, id);
		e->lgr_id = id;
		e->role = BPF_CORE_READ(lgr, role) & 1;
	}
	submit(&e->h);
	return 0;
}

SEC("fexit/smc_ib_create_queue_pair")
int BPF_PROG(fexit_smc_ib_create_queue_pair, struct smc_link *lnk, int ret)
{
	return emit_smc_link(EV_SMC_LINK_CREATE, lnk, ret);
}

SEC("fentry/smc_ib_destroy_queue_pair")
int BPF_PROG(fentry_smc_ib_destroy_queue_pair, struct smc_link *lnk)
{
	return emit_smc_link(EV_SMC_LINK_DESTROY, lnk, 0);
}

SEC("kprobe/smc_ib_destroy_queue_pair")
int kprobe_smc_ib_destroy_queue_pair(struct pt_regs *ctx)
{
	return emit_smc_link(EV_SMC_LINK_DESTROY, (struct smc_link *)PT_REGS_PARM1(ctx), 0);
}

SEC("tp_btf/smcr_link_down")
int BPF_PROG(tp_btf_smcr_link_down, struct smc_link *lnk, void *location)
{
	return emit_smc_link(EV_SMC_LINK_DOWN, lnk, 0);
}

SEC("raw_tp/smcr_link_down")
int BPF_PROG(raw_tp_smcr_link_down, struct smc_link *lnk, void *location)
{
	return emit_smc_link(EV_SMC_LINK_DOWN, lnk, 0);
}

#endif /* RDMATRACE_SMCR_H */
