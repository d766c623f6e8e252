/* SPDX-License-Identifier: GPL-2.0 */
/* ==== Calls that created nothing: failed creates and rdma_cm steps ====
 * A create that fails leaves no object for restrack or netlink to show:
 * only its caller sees the errno. Every user-space create passes one of
 * uverbs' two entry points, ib_uverbs_ioctl and ib_uverbs_write (also for
 * write commands sent through the ioctl's INVOKE_WRITE): on their return
 * with an error, the command (read back from the caller's memory, which the
 * kernel has just read) says what was asked for, and a create's failure is
 * reported with the device's limits. Deeper hooks add what only they see,
 * kept per thread until that return: the QP's capabilities
 * (ib_create_qp_user), an MR's length and the locked-memory arithmetic
 * (ib_umem_get), the rdma cgroup's refusal (ib_rdmacg_try_charge).
 *
 * rdma_cm's steps that fail inside the call (rdma_bind_addr,
 * rdma_resolve_addr, rdma_resolve_route, rdma_listen, rdma_connect) get
 * no rdma_cm event: their return is reported with the address tried.
 *
 * And the GID table's changes (add_modify_gid, del_gid), which ib_core's
 * cache dispatches to its clients as GID_CHANGE without ib_dispatch_event. */
#ifndef RDMATRACE_CREATES_H
#define RDMATRACE_CREATES_H

#include "common.h"
#include "cm.h"
#include "failures.h" /* GID_LEN */

/* What failed, in EV_CALL_FAIL's op. */
enum call_op {
	CALL_GET_CONTEXT = 1,
	CALL_ALLOC_PD,
	CALL_CREATE_CQ,
	CALL_CREATE_QP,
	CALL_CREATE_SRQ,
	CALL_REG_MR,
	CALL_REG_DMABUF_MR,
	CALL_ALLOC_MW,
	CALL_CREATE_AH,
	CALL_OPEN_XRCD,
	CALL_CREATE_WQ,
	CALL_OPEN_QP,
	CALL_ALLOC_DM,
	CALL_CREATE_FLOW,
	CALL_RDMA_BIND_ADDR = 32,
	CALL_RDMA_RESOLVE_ADDR,
	CALL_RDMA_RESOLVE_ROUTE,
	CALL_RDMA_LISTEN,
	CALL_RDMA_CONNECT,
};

/* What refused it, where a deeper hook saw it (EV_CALL_FAIL's limit). */
enum call_limit {
	LIMIT_RDMACG = 1,  /* the rdma cgroup: rdmacg_res says hca_handle or hca_object */
	LIMIT_MEMLOCK = 2, /* ib_umem_get's pin: pinned + npages > RLIMIT_MEMLOCK, without CAP_IPC_LOCK */
};

/* What the caller asked for (asked_has says which). */
enum asked_flag {
	ASKED_QP = 1 << 0,  /* the capabilities and qp_type */
	ASKED_CQE = 1 << 1, /* cqe */
	ASKED_MR = 1 << 2,  /* length and access */
};

struct ev_asked {
	__u64 length; /* an MR's bytes */
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
	__u32 cqe;
	__u32 access; /* IB_ACCESS_* */
	__u8 qp_type;
	__u8 has; /* enum asked_flag */
	__u16 pad;
};

/* The device's limits (struct ib_device_attr) when the call failed. */
struct ev_caps {
	__u64 max_mr_size;
	__u32 max_qp_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_cqe;
	__u32 max_qp;
	__u32 max_cq;
	__u32 max_mr;
	__u32 max_pd;
	__u32 max_srq;
	__u32 pad;
};

/* EV_CALL_FAIL: a create or an rdma_cm step that returned an error. */
struct call_fail_event {
	struct event_hdr h;
	struct ev_dev dev;
	struct ev_res res;   /* the rdma_cm ID of a step */
	struct ev_addr addr; /* a step's addresses; dst: the one asked for */
	struct ev_asked asked;
	struct ev_caps caps; /* F_HAS_CAPS */
	__u64 memlock;       /* LIMIT_MEMLOCK: RLIMIT_MEMLOCK, bytes */
	__u64 pinned;        /* LIMIT_MEMLOCK: pages the process had pinned */
	__u64 npages;        /* LIMIT_MEMLOCK: pages the MR needed */
	__u32 op;            /* enum call_op */
	__s32 err;           /* the negative errno returned */
	__u32 limit;         /* enum call_limit; 0: none seen */
	__u32 rdmacg_res;    /* LIMIT_RDMACG: enum rdmacg_resource_type */
};

/* EV_GID_CHANGE: a GID table entry added or deleted. */
struct gid_event {
	struct event_hdr h;
	struct ev_dev dev; /* its port in port */
	__u8 gid[GID_LEN];
	char netdev[16];
	__u32 index;
	__u32 gid_type; /* enum ib_gid_type: 0 IB, 1 RoCE v1, 2 RoCE v2 */
	__u32 op;       /* 1 add, 2 del */
	__u32 pad;
};

const struct call_fail_event *unused_call_fail_event __attribute__((unused));
const struct gid_event *unused_gid_event __attribute__((unused));
const enum call_op *unused_call_op __attribute__((unused));
const enum call_limit *unused_call_limit __attribute__((unused));
const enum asked_flag *unused_asked_flag __attribute__((unused));

/* uverbs' private types, from its module's BTF. */
struct ib_uverbs_device {
	struct ib_device *ib_dev;
} __attribute__((preserve_access_index));

struct ib_uverbs_file {
	struct ib_uverbs_device *device;
} __attribute__((preserve_access_index));

struct uverbs_api_object {
	__u32 id;
} __attribute__((preserve_access_index));

struct ib_gid_table_entry {
	struct ib_gid_attr attr;
} __attribute__((preserve_access_index));

struct ib_gid_table {
	struct ib_gid_table_entry **data_vec;
} __attribute__((preserve_access_index));

/* 7.2 made data_vec a flexible array at the table's end (one allocation
 * instead of two): a field of another kind, which the pointer's flavour
 * does not match. */
struct ib_gid_table___flex {
	struct ib_gid_table_entry *data_vec[0];
} __attribute__((preserve_access_index));

/* What a deeper hook saw, per thread until the entry point returns. */
struct call_detail {
	struct ev_asked asked;
	__u64 memlock, pinned, npages;
	__u32 limit;
	__u32 rdmacg_res;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tid */
	__type(value, struct call_detail);
} call_details SEC(".maps");

static __always_inline struct call_detail *detail_of_current(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct call_detail *d = bpf_map_lookup_elem(&call_details, &tid);
	if (d)
		return d;
	static const struct call_detail zero;
	if (bpf_map_update_elem(&call_details, &tid, &zero, BPF_ANY)) {
		side_drop();
		return 0;
	}
	return bpf_map_lookup_elem(&call_details, &tid);
}

#define IS_ERR_VALUE(x) ((unsigned long)(void *)(x) >= (unsigned long)-4095)

/* ---- What the deeper hooks see ---- */

static __always_inline int on_create_qp_user(struct ib_qp_init_attr *attr, long ret)
{
	if (!IS_ERR_VALUE(ret) || !attr)
		return 0;
	struct call_detail *d = detail_of_current();
	if (!d)
		return 0;
	d->asked.max_send_wr = BPF_CORE_READ(attr, cap.max_send_wr);
	d->asked.max_recv_wr = BPF_CORE_READ(attr, cap.max_recv_wr);
	d->asked.max_send_sge = BPF_CORE_READ(attr, cap.max_send_sge);
	d->asked.max_recv_sge = BPF_CORE_READ(attr, cap.max_recv_sge);
	d->asked.max_inline_data = BPF_CORE_READ(attr, cap.max_inline_data);
	d->asked.qp_type = BPF_CORE_READ(attr, qp_type);
	d->asked.has |= ASKED_QP;
	return 0;
}

#define RLIMIT_MEMLOCK 8
#define CAP_IPC_LOCK 14
#define PAGE_SHIFT_4K 12

static __always_inline int on_umem_get(__u64 addr, __u64 size, int access, long ret)
{
	if (!IS_ERR_VALUE(ret))
		return 0;
	struct call_detail *d = detail_of_current();
	if (!d)
		return 0;
	d->asked.length = size;
	d->asked.access = access;
	d->asked.has |= ASKED_MR;
	if (ret != -12) /* ENOMEM */
		return 0;
	/* ib_umem_get: new_pinned = pinned_vm + npages; over the limit
	 * without CAP_IPC_LOCK, -ENOMEM (and pinned_vm back as it was). */
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 lim = BPF_CORE_READ(task, signal, rlim[RLIMIT_MEMLOCK].rlim_cur);
	__u64 pinned = BPF_CORE_READ(task, mm, pinned_vm.counter);
	__u32 caps = 0;
	const struct cred *cred = BPF_CORE_READ(task, cred);
	bpf_probe_read_kernel(&caps, 4, __builtin_preserve_access_index(&cred->cap_effective));
	__u64 pages = ((addr & 4095) + size + 4095) >> PAGE_SHIFT_4K;
	if (caps & (1 << CAP_IPC_LOCK))
		return 0;
	if (pinned + pages > (lim >> PAGE_SHIFT_4K)) {
		d->limit = LIMIT_MEMLOCK;
		d->memlock = lim;
		d->pinned = pinned;
		d->npages = pages;
	}
	return 0;
}

static __always_inline int on_rdmacg_charge(__u32 res, int ret)
{
	if (ret == 0)
		return 0;
	struct call_detail *d = detail_of_current();
	if (!d)
		return 0;
	d->limit = LIMIT_RDMACG;
	d->rdmacg_res = res;
	return 0;
}

/* ---- The entry points' return ---- */

/* uapi: ib_user_verbs.h's write commands, ib_user_ioctl_cmds.h's objects
 * and methods. */
#define UV_OBJ_DEVICE 0
#define UV_OBJ_CQ 3
#define UV_OBJ_QP 4
#define UV_OBJ_SRQ 5
#define UV_OBJ_MR 7
#define UV_OBJ_WQ 12
#define UV_OBJ_DM 14
#define UV_METHOD_INVOKE_WRITE 0
#define UV_METHOD_GET_CONTEXT 3
#define UV_ATTR_CORE_IN 0
#define UV_ATTR_WRITE_CMD 2
#define UV_ATTR_CREATE_CQ_CQE 1
#define UV_METHOD_REG_DMABUF_MR 4

static __always_inline __u32 write_op(__u32 cmd, int ex)
{
	switch (cmd) {
	case 0: return CALL_GET_CONTEXT;
	case 3: return CALL_ALLOC_PD;
	case 5: return CALL_CREATE_AH;
	case 9: return CALL_REG_MR;
	case 14: return CALL_ALLOC_MW;
	case 18: return CALL_CREATE_CQ;
	case 24: return CALL_CREATE_QP;
	case 32: case 39: return CALL_CREATE_SRQ;
	case 37: return CALL_OPEN_XRCD;
	case 40: return CALL_OPEN_QP;
	case 50: return ex ? CALL_CREATE_FLOW : 0;
	case 52: return ex ? CALL_CREATE_WQ : 0;
	}
	return 0;
}

/* A write command's CQ entries, from its body (after the 8-byte header;
 * the extended commands have a 16-byte ex header more): struct
 * ib_uverbs_create_cq's cqe follows response and user_handle,
 * ib_uverbs_ex_create_cq's follows user_handle. */
static __always_inline void write_asked(struct ev_asked *a, __u32 op, int ex, const void *body)
{
	__u32 v = 0;
	if (op == CALL_CREATE_CQ) {
		if (!bpf_probe_read_user(&v, 4, body + (ex ? 16 + 8 : 16))) {
			a->cqe = v;
			a->has |= ASKED_CQE;
		}
	}
}

struct uv_ioctl_hdr {
	__u16 length;
	__u16 object_id;
	__u16 method_id;
	__u16 num_attrs;
	__u64 reserved1;
	__u32 driver_id;
	__u32 reserved2;
};

struct uv_attr {
	__u16 attr_id;
	__u16 len;
	__u16 flags;
	__u16 reserved;
	__u64 data;
};

#define MAX_IOCTL_ATTRS 12

/* The op of an ioctl, and what it asked: the write command it carries
 * (INVOKE_WRITE), or the method's own attributes. */
static __always_inline __u32 ioctl_op(struct ev_asked *a, const void *uarg)
{
	struct uv_ioctl_hdr h;
	if (bpf_probe_read_user(&h, sizeof(h), uarg))
		return 0;
	__u32 op = 0, write_cmd = 0xffffffff;
	__u64 core_in = 0;
	if (h.object_id == UV_OBJ_DEVICE && h.method_id == UV_METHOD_GET_CONTEXT)
		return CALL_GET_CONTEXT;
	if (h.object_id == UV_OBJ_CQ && h.method_id == 0)
		op = CALL_CREATE_CQ;
	else if (h.object_id == UV_OBJ_QP && h.method_id == 0)
		op = CALL_CREATE_QP;
	else if (h.object_id == UV_OBJ_SRQ && h.method_id == 0)
		op = CALL_CREATE_SRQ;
	else if (h.object_id == UV_OBJ_WQ && h.method_id == 0)
		op = CALL_CREATE_WQ;
	else if (h.object_id == UV_OBJ_DM && h.method_id == 0)
		op = CALL_ALLOC_DM;
	else if (h.object_id == UV_OBJ_MR && h.method_id == UV_METHOD_REG_DMABUF_MR)
		op = CALL_REG_DMABUF_MR;
	else if (!(h.object_id == UV_OBJ_DEVICE && h.method_id == UV_METHOD_INVOKE_WRITE))
		return 0;
	const struct uv_attr *attrs = uarg + sizeof(h);
	for (int i = 0; i < MAX_IOCTL_ATTRS; i++) {
		if (i >= h.num_attrs)
			break;
		struct uv_attr at;
		if (bpf_probe_read_user(&at, sizeof(at), &attrs[i]))
			break;
		if (op == CALL_CREATE_CQ && at.attr_id == UV_ATTR_CREATE_CQ_CQE) {
			a->cqe = (__u32)at.data;
			a->has |= ASKED_CQE;
		} else if (!op && at.attr_id == UV_ATTR_WRITE_CMD) {
			write_cmd = (__u32)at.data;
		} else if (!op && at.attr_id == UV_ATTR_CORE_IN) {
			core_in = at.len > 8 ? at.data : 0;
		}
	}
	if (op || write_cmd == 0xffffffff)
		return op;
	/* INVOKE_WRITE: the command's body is CORE_IN (no header). */
	op = write_op(write_cmd & 0xff, 0);
	if (op && core_in)
		write_asked(a, op, 0, (const void *)core_in);
	return op;
}

static __always_inline void set_caps(struct event_hdr *h, struct ev_caps *c, struct ib_device *dev)
{
	if (!dev)
		return;
	c->max_mr_size = BPF_CORE_READ(dev, attrs.max_mr_size);
	c->max_qp_wr = BPF_CORE_READ(dev, attrs.max_qp_wr);
	c->max_send_sge = BPF_CORE_READ(dev, attrs.max_send_sge);
	c->max_recv_sge = BPF_CORE_READ(dev, attrs.max_recv_sge);
	c->max_cqe = BPF_CORE_READ(dev, attrs.max_cqe);
	c->max_qp = BPF_CORE_READ(dev, attrs.max_qp);
	c->max_cq = BPF_CORE_READ(dev, attrs.max_cq);
	c->max_mr = BPF_CORE_READ(dev, attrs.max_mr);
	c->max_pd = BPF_CORE_READ(dev, attrs.max_pd);
	c->max_srq = BPF_CORE_READ(dev, attrs.max_srq);
	h->flags |= F_HAS_CAPS;
}

/* A uverbs entry point returned ret for the command at uarg (ioctl) or
 * ubuf (write). A call that worked goes at once, with no map lookup: rxe
 * rings its doorbell with a write per post. The deeper hooks keep a
 * detail only when they fail, which fails the call too; a failed call
 * takes its thread's detail. */
static __always_inline int on_uverbs_return(struct file *filp, const void *uarg, const void *ubuf, long ret)
{
	if (ret >= 0 || ret < -4095)
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct call_detail *dp = bpf_map_lookup_elem(&call_details, &tid);
	struct call_detail d = {};
	if (dp) {
		d = *dp;
		bpf_map_delete_elem(&call_details, &tid);
	}
	struct ev_asked asked = d.asked;
	__u32 op = 0;
	if (uarg) {
		op = ioctl_op(&asked, uarg);
	} else {
		__u32 command = 0;
		if (bpf_probe_read_user(&command, 4, ubuf))
			return 0;
		int ex = (command >> 24) & 0x80;
		op = write_op(command & 0xff, ex);
		if (op)
			write_asked(&asked, op, ex, ubuf + 8);
	}
	if (!op)
		return 0;
	struct call_fail_event *e = reserve(struct call_fail_event, EV_CALL_FAIL);
	if (!e)
		return 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	e->h.owner_pid = e->h.actor_pid;
	e->h.owner_tid = e->h.actor_tid;
	__builtin_memcpy(e->h.owner_comm, e->h.actor_comm, sizeof(e->h.owner_comm));
	e->h.owner_cgroup = task_cgroup_id(task);
	e->h.flags |= F_HAS_OWNER | F_USER;
	struct ib_device *dev = 0;
	if (bpf_core_type_exists(struct ib_uverbs_file)) { /* ib_uverbs's BTF */
		struct ib_uverbs_file *uf = BPF_CORE_READ(filp, private_data);
		dev = BPF_CORE_READ(uf, device, ib_dev);
	}
	set_dev(&e->h, &e->dev, dev);
	set_caps(&e->h, &e->caps, dev);
	e->op = op;
	e->err = ret;
	e->asked = asked;
	e->limit = d.limit;
	e->rdmacg_res = d.rdmacg_res;
	e->memlock = d.memlock;
	e->pinned = d.pinned;
	e->npages = d.npages;
	submit(&e->h);
	return 0;
}

/* An rdma_cm step that failed inside the call: the ID, the address it
 * tried (dst, when given: the ID may not keep it after a failure). */
static __always_inline int emit_cm_fail(__u32 op, struct rdma_cm_id *id, struct sockaddr *dst, long ret)
{
	/* EADDRINUSE from rdma_listen and rdma_connect is a port-busy event
	 * (ports.h), with its holders. */
	if (ret >= 0 || !id || (ret == -98 && (op == CALL_RDMA_LISTEN || op == CALL_RDMA_CONNECT)))
		return 0;
	struct call_fail_event *e = reserve(struct call_fail_event, EV_CALL_FAIL);
	if (!e)
		return 0;
	set_cm(&e->h, &e->dev, &e->res, &e->addr, container(id, struct rdma_id_private, id));
	if (!(e->h.flags & F_HAS_OWNER)) {
		/* An ID not yet tracked: the caller owns it. */
		struct task_struct *task = (struct task_struct *)bpf_get_current_task();
		e->h.owner_pid = e->h.actor_pid;
		e->h.owner_tid = e->h.actor_tid;
		__builtin_memcpy(e->h.owner_comm, e->h.actor_comm, sizeof(e->h.owner_comm));
		e->h.owner_cgroup = task_cgroup_id(task);
		e->h.flags |= F_HAS_OWNER;
	}
	if (dst)
		bpf_probe_read_kernel(e->addr.dst, ADDR_LEN, dst);
	e->op = op;
	e->err = ret;
	submit(&e->h);
	return 0;
}

/* ---- The hooks: fexit, or a kprobe and kretprobe carrying the
 * arguments (up to three) from the entry to the return ---- */

/* CALL_HOOK(fn, id, ret type, A, B, C, body, (params), (kprobe params)):
 * fexit_call_<fn> runs body with a, b, c (the expressions A, B, C of fn's
 * parameters, all of which fexit must name to find the return value) and
 * ret; kprobe_call_<fn> stashes A, B, C (from the first parameters, up to
 * those it needs) and kretprobe_call_<fn> runs body with them and ret. */
#define UNPAREN(...) __VA_ARGS__
#define CALL_HOOK(fn, id, rtype, A, B, C, body, params, kparams)               \
	static __always_inline int body_##fn(__u64 a, __u64 b, __u64 c, long ret) body \
	SEC("fexit/" #fn)                                                     \
	int BPF_PROG(fexit_call_##fn, UNPAREN params, rtype ret)                   \
	{                                                                     \
		return body_##fn((__u64)(A), (__u64)(B), (__u64)(C), (long)ret); \
	}                                                                     \
	SEC("kprobe/" #fn)                                                    \
	int BPF_KPROBE(kprobe_call_##fn, UNPAREN kparams)                          \
	{                                                                     \
		return stash_save(STASH_CALLS + id, (__u64)(A), (__u64)(B), (__u64)(C)); \
	}                                                                     \
	SEC("kretprobe/" #fn)                                                 \
	int BPF_KRETPROBE(kretprobe_call_##fn, rtype ret)                          \
	{                                                                     \
		struct stash_args s;                                          \
		if (!stash_take(STASH_CALLS + id, &s))                        \
			return 0;                                             \
		return body_##fn(s.a, s.b, s.c, (long)ret);                   \
	}

CALL_HOOK(ib_uverbs_ioctl, 1, long, filp, arg, 0,
	  { return on_uverbs_return((struct file *)a, (const void *)b, 0, ret); },
	  (struct file *filp, unsigned int cmd, unsigned long arg), (struct file *filp, unsigned int cmd, unsigned long arg))
CALL_HOOK(ib_uverbs_write, 2, long, filp, buf, 0,
	  { return on_uverbs_return((struct file *)a, 0, (const void *)b, ret); },
	  (struct file *filp, const char *buf, size_t count, loff_t *pos), (struct file *filp, const char *buf))
CALL_HOOK(ib_create_qp_user, 3, void *, attr, 0, 0,
	  { return on_create_qp_user((struct ib_qp_init_attr *)a, ret); },
	  (struct ib_device *dev, struct ib_pd *pd, struct ib_qp_init_attr *attr, void *udata, void *uobj,
	   const char *caller),
	  (struct ib_device *dev, struct ib_pd *pd, struct ib_qp_init_attr *attr))
CALL_HOOK(ib_umem_get, 4, void *, addr, size, access,
	  { return on_umem_get(a, b, (int)c, ret); },
	  (struct ib_device *device, unsigned long addr, size_t size, int access),
	  (struct ib_device *device, unsigned long addr, size_t size, int access))
CALL_HOOK(ib_rdmacg_try_charge, 5, int, resource_index, 0, 0,
	  { return on_rdmacg_charge((__u32)a, (int)ret); },
	  (void *cg_obj, struct ib_device *device, enum rdmacg_resource_type resource_index),
	  (void *cg_obj, struct ib_device *device, enum rdmacg_resource_type resource_index))
CALL_HOOK(rdma_bind_addr, 6, int, id, addr, 0,
	  { return emit_cm_fail(CALL_RDMA_BIND_ADDR, (struct rdma_cm_id *)a, 0, ret); },
	  (struct rdma_cm_id *id, struct sockaddr *addr), (struct rdma_cm_id *id, struct sockaddr *addr))
CALL_HOOK(rdma_resolve_addr, 7, int, id, dst_addr, 0,
	  { return emit_cm_fail(CALL_RDMA_RESOLVE_ADDR, (struct rdma_cm_id *)a, (struct sockaddr *)b, ret); },
	  (struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr, unsigned long timeout_ms),
	  (struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr))
CALL_HOOK(rdma_resolve_route, 8, int, id, 0, 0,
	  { return emit_cm_fail(CALL_RDMA_RESOLVE_ROUTE, (struct rdma_cm_id *)a, 0, ret); },
	  (struct rdma_cm_id *id, unsigned long timeout_ms), (struct rdma_cm_id *id))
CALL_HOOK(rdma_listen, 9, int, id, 0, 0,
	  { return emit_cm_fail(CALL_RDMA_LISTEN, (struct rdma_cm_id *)a, 0, ret); },
	  (struct rdma_cm_id *id, int backlog), (struct rdma_cm_id *id))
/* rdma_connect_locked (5.11+); user space attaches the same programs to
 * rdma_connect on older kernels. */
CALL_HOOK(rdma_connect_locked, 10, int, id, 0, 0,
	  { return emit_cm_fail(CALL_RDMA_CONNECT, (struct rdma_cm_id *)a, 0, ret); },
	  (struct rdma_cm_id *id, void *param), (struct rdma_cm_id *id))

/* ---- The GID table ---- */

#define GID_ADD 1
#define GID_DEL 2

static __always_inline int emit_gid(__u32 op, const struct ib_gid_attr *attr)
{
	if (!attr)
		return 0;
	__u8 gid[GID_LEN];
	if (BPF_CORE_READ_INTO(&gid, attr, gid.raw))
		return 0;
	__u64 lo = 0, hi = 0;
	__builtin_memcpy(&lo, gid, 8);
	__builtin_memcpy(&hi, gid + 8, 8);
	if (!lo && !hi) /* an empty entry: nothing added or removed */
		return 0;
	struct gid_event *e = reserve(struct gid_event, EV_GID_CHANGE);
	if (!e)
		return 0;
	set_dev(&e->h, &e->dev, BPF_CORE_READ(attr, device));
	e->dev.port = BPF_CORE_READ(attr, port_num);
	__builtin_memcpy(e->gid, gid, GID_LEN);
	e->index = BPF_CORE_READ(attr, index);
	e->gid_type = BPF_CORE_READ(attr, gid_type);
	struct net_device *nd = BPF_CORE_READ(attr, ndev);
	if (nd)
		BPF_CORE_READ_STR_INTO(&e->netdev, nd, name);
	e->op = op;
	submit(&e->h);
	return 0;
}

static __always_inline int on_del_gid(struct ib_gid_table *table, int ix)
{
	if (!table || ix < 0 || ix > 0xffff || !bpf_core_type_exists(struct ib_gid_table))
		return 0;
	struct ib_gid_table_entry **vec;
	if (bpf_core_field_exists(struct ib_gid_table___flex, data_vec))
		vec = (void *)table + bpf_core_field_offset(struct ib_gid_table___flex, data_vec);
	else
		vec = BPF_CORE_READ(table, data_vec);
	struct ib_gid_table_entry *entry = 0;
	if (!vec || bpf_probe_read_kernel(&entry, sizeof(entry), vec + ix) || !entry)
		return 0;
	return emit_gid(GID_DEL, &entry->attr);
}

/* add_modify_gid's entry: the GID about to be stored (it fails only when
 * memory or the driver's add_gid does); del_gid's: the entry going. */
ENTRY_HOOK(add_modify_gid, add_modify_gid, (emit_gid(GID_ADD, attr)), struct ib_gid_table *table,
	   const struct ib_gid_attr *attr)
ENTRY_HOOK(del_gid, del_gid, (on_del_gid(table, ix)), struct ib_device *ib_dev, __u32 port,
	   struct ib_gid_table *table, int ix)

#endif /* RDMATRACE_CREATES_H */
