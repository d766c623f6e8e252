/* SPDX-License-Identifier: GPL-2.0 */
/* ==== QP settings ====
 * A QP's transport settings at the modify that sets them: the timeouts and
 * retry counts, the path MTU, and the source GID the QP's address vector
 * uses (qp->av_sgid_attr, which _ib_modify_qp sets from the attr's
 * ah_attr.grh.sgid_attr on success; by its return the attr's own pointer
 * has been handed over to the QP and is NULL again). resources.h calls
 * emit_qp_attr from the modify's exit (fexit and kretprobe alike). */
#ifndef RDMATRACE_QPATTR_H
#define RDMATRACE_QPATTR_H

#include "common.h"

/* Which parts of a qp_attr_event are set, in its qa_flags. */
enum qp_attr_flag {
	QA_HAS_GID = 1 << 0,  /* sgid, gid_type, sgid_index are the QP's source GID */
	QA_HAS_NDEV = 1 << 1, /* the GID's netdev: ndev_name, ifindex, mtu, netns */
	QA_VLAN = 1 << 2,     /* the netdev is a VLAN device: vlan is its id */
	QA_HAS_GRH = 1 << 3,  /* IB_QP_AV with a GRH: dgid, hop_limit, traffic_class */
};

#define IFNAMSIZ 16
#define AH_GRH 1 /* enum ib_ah_flags' IB_AH_GRH, which the BTF leaves out */
#define QP_ATTR_MASK (IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MIN_RNR_TIMER | IB_QP_PATH_MTU | IB_QP_AV)

/* EV_QP_ATTR: a successful modify that set any of QP_ATTR_MASK. */
struct qp_attr_event {
	struct event_hdr h;
	struct ev_dev dev;
	struct ev_res res;
	__u8 sgid[16]; /* QA_HAS_GID */
	__u8 dgid[16]; /* QA_HAS_GRH */
	char ndev[IFNAMSIZ]; /* QA_HAS_NDEV */
	__u64 netns;   /* QA_HAS_NDEV: the netdev's network namespace (its inode number) */
	__u32 mask;    /* the modify's attr_mask: which of the values below it set */
	__u32 qa_flags; /* enum qp_attr_flag */
	__u32 path_mtu; /* enum ib_mtu */
	__u32 ifindex; /* QA_HAS_NDEV */
	__u32 ndev_mtu; /* QA_HAS_NDEV */
	__u32 gid_type; /* QA_HAS_GID: enum ib_gid_type */
	__u16 sgid_index; /* QA_HAS_GID */
	__u16 vlan;    /* QA_VLAN */
	__u8 timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 min_rnr_timer;
	__u8 hop_limit;     /* QA_HAS_GRH */
	__u8 traffic_class; /* QA_HAS_GRH */
	__u8 pad[2];
};

const struct qp_attr_event *unused_qp_attr_event __attribute__((unused));
const enum qp_attr_flag *unused_qp_attr_flag __attribute__((unused));

/* netdev_priv() is a flexible array at the end of struct net_device since
 * Linux 6.11; before, it starts at sizeof(struct net_device) aligned to
 * NETDEV_ALIGN (32). */
struct net_device___priv {
	unsigned int priv_len;
	__u8 priv[];
} __attribute__((preserve_access_index));

/* net/8021q/vlan.h's struct vlan_dev_priv is private to the 8021q module
 * (no BTF in vmlinux): vlan_id sits after the ingress and egress priority
 * maps, at byte 170, unchanged since Linux 3.10. */
#define VLAN_ID_OFFSET 170

static __always_inline void set_qp_attr_ndev(struct qp_attr_event *e, struct net_device *ndev)
{
	BPF_CORE_READ_STR_INTO(&e->ndev, ndev, name);
	e->ifindex = BPF_CORE_READ(ndev, ifindex);
	e->ndev_mtu = BPF_CORE_READ(ndev, mtu);
	e->netns = BPF_CORE_READ(ndev, nd_net.net, ns.inum);
	e->qa_flags |= QA_HAS_NDEV;
	/* priv_flags is an unsigned int on 5.10, a u64 on 6.1, a 32-bit
	 * bitfield on 6.12: read as the running kernel lays it out. */
	__u64 priv_flags = BPF_CORE_READ_BITFIELD_PROBED(ndev, priv_flags);
	if (!(priv_flags & IFF_802_1Q_VLAN))
		return;
	__u64 off;
	if (bpf_core_field_exists(struct net_device___priv, priv))
		off = bpf_core_field_offset(struct net_device___priv, priv);
	else
		off = (bpf_core_type_size(struct net_device) + 31) & ~31ULL;
	__u16 vid = 0;
	if (bpf_probe_read_kernel(&vid, sizeof(vid), (void *)ndev + off + VLAN_ID_OFFSET) == 0) {
		e->vlan = vid & 0xfff;
		e->qa_flags |= QA_VLAN;
	}
}

static __always_inline int emit_qp_attr(struct ib_qp *qp, struct ib_qp_attr *attr, int mask, int ret)
{
	if (ret != 0 || !(mask & QP_ATTR_MASK) || !qp || !attr)
		return 0;
	struct qp_attr_event *e = reserve(struct qp_attr_event, EV_QP_ATTR);
	if (!e)
		return 0;
	e->h.obj = (__u64)qp;
	set_owner(&e->h, &e->res, &qp->res);
	set_dev(&e->h, &e->dev, BPF_CORE_READ(qp, device));
	set_qp(&e->h, &e->dev, &e->res, qp);
	if (mask & IB_QP_PORT)
		e->dev.port = BPF_CORE_READ(attr, port_num);
	e->mask = mask;
	e->timeout = BPF_CORE_READ(attr, timeout);
	e->retry_cnt = BPF_CORE_READ(attr, retry_cnt);
	e->rnr_retry = BPF_CORE_READ(attr, rnr_retry);
	e->min_rnr_timer = BPF_CORE_READ(attr, min_rnr_timer);
	e->path_mtu = BPF_CORE_READ(attr, path_mtu);
	if ((mask & IB_QP_AV) && (BPF_CORE_READ(attr, ah_attr.ah_flags) & AH_GRH)) {
		BPF_CORE_READ_INTO(&e->dgid, attr, ah_attr.grh.dgid.raw);
		e->hop_limit = BPF_CORE_READ(attr, ah_attr.grh.hop_limit);
		e->traffic_class = BPF_CORE_READ(attr, ah_attr.grh.traffic_class);
		e->qa_flags |= QA_HAS_GRH;
	}
	/* The GID the QP sends from now, whether this modify set it or an
	 * earlier one did: what a path MTU is held against. */
	const struct ib_gid_attr *g = BPF_CORE_READ(qp, av_sgid_attr);
	if (g) {
		BPF_CORE_READ_INTO(&e->sgid, g, gid.raw);
		e->gid_type = BPF_CORE_READ(g, gid_type);
		e->sgid_index = BPF_CORE_READ(g, index);
		e->qa_flags |= QA_HAS_GID;
		struct net_device *ndev = BPF_CORE_READ(g, ndev);
		if (ndev)
			set_qp_attr_ndev(e, ndev);
	}
	submit(&e->h);
	return 0;
}

/* The unit tests' way in to reserve (tracer/busy_test.go): a record the
 * size of a qp-attr one, of its kind (settings) or of a QP's state change. */
SEC("raw_tp")
int BPF_PROG(selftest_reserve_qp_attr, __u64 settings)
{
	struct qp_attr_event *e = reserve(struct qp_attr_event, settings ? EV_QP_ATTR : EV_QP_STATE);
	if (!e)
		return 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 1;
}

#endif /* RDMATRACE_QPATTR_H */
