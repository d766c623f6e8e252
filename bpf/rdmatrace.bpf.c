//go:build ignore

// SPDX-License-Identifier: GPL-2.0
// rdmatrace's kernel side: CO-RE programs on ib_core's resource tracking,
// the rdma_cma tracepoints, QP modification, rdma_cm ID creation and device
// (un)registration. Every hook exists twice: the BTF variant (fentry/fexit,
// tp_btf), which is cheapest, and a fallback (kprobe/kretprobe, raw_tp)
// for kernels where the first cannot attach. User space picks per hook.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define TASK_COMM_LEN 16
#define DEV_NAME_LEN 64 /* IB_DEVICE_NAME_MAX */
#define KERN_NAME_LEN 32
#define ADDR_LEN 28 /* sizeof(struct sockaddr_in6), as the tracepoints copy */
#define STATE_UNKNOWN 0xff

enum event_kind {
	EV_RES_ADD = 1,       /* rdma_restrack_add returned: the object is tracked */
	EV_RES_DEL = 2,       /* rdma_restrack_del: MR, CM_ID, CTX, COUNTER freed */
	EV_RES_BEGIN_DEL = 3, /* PD/CQ/QP/SRQ destruction started */
	EV_RES_COMMIT_DEL = 4,/* ... and done: the object is gone */
	EV_RES_ABORT_DEL = 5, /* ... and failed: the object stays */
	EV_QP_STATE = 6,      /* a QP changed state */
	EV_CM_ID_CREATE = 7,  /* an rdma_cm ID was created (not yet tracked) */
	EV_CM = 8,            /* an rdma_cma tracepoint; cm_tp says which */
	EV_DEV_REGISTER = 9,
	EV_DEV_UNREGISTER = 10,
	EV_DEV_UNREGISTERED = 11,
	EV_PORT_BUSY = 12,    /* a bind, rdma_listen or rdma_connect got EADDRINUSE: struct port_busy_event */
	EV_SMC_FALLBACK = 13, /* smc:smc_switch_to_fallback: an SMC socket fell back to TCP: struct smc_fallback_event */
	EV_SMC_LINK_CREATE = 14,  /* an SMC-R link's QP was created (smc_ib_create_queue_pair returned) */
	EV_SMC_LINK_DOWN = 15,    /* smc:smcr_link_down: an SMC-R link went down */
	EV_SMC_LINK_DESTROY = 16, /* an SMC-R link's QP is destroyed (smc_ib_destroy_queue_pair) */
	EV_SPAN = 20,    /* bench-trace: a kernel function returned; dur is its time */
	EV_OFF_CPU = 21, /* bench-trace: a followed thread ran again after an off-CPU spell */
};

/* What got EADDRINUSE, in EV_PORT_BUSY's func. */
enum port_op {
	PORT_RDMA_LISTEN = 1,
	PORT_RDMA_CONNECT,
	PORT_INET_BIND,
	PORT_INET6_BIND,
};

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

/* Flags in event.flags. */
enum event_flag {
	F_USER = 1 << 0,       /* a user-space object */
	F_HAS_DEV = 1 << 1,    /* dev_index/dev_name are set */
	F_HAS_OWNER = 1 << 2,  /* owner_* are set (res->task was not NULL) */
	F_HAS_STATE = 1 << 3,  /* new_state is set */
	F_HAS_QP = 1 << 4,     /* qpn/qp_type are set */
	F_HAS_CM = 1 << 5,     /* cm_event/status are set */
	F_HAS_ADDR = 1 << 6,   /* src/dst/ps are set */
	F_EXITING = 1 << 7,    /* the actor was exiting (PF_EXITING): cleanup at process exit */
	F_CLOSING = 1 << 8,    /* inside ib_uverbs_close or ucma_close: cleanup of a closed file */
	F_OWNER_EXITING = 1 << 9, /* F_HAS_OWNER: the owner's process was exiting (every thread past PF_EXITING) */
	F_HAS_SIZE = 1 << 12,  /* bench-trace: size is set */
	F_PREEMPTED = 1 << 13, /* bench-trace: off-CPU while runnable (preempted), not asleep */
};

#define PF_EXITING 0x00000004 /* include/linux/sched.h; a #define, so not in BTF */

/* Every record starts with this header; kind says which record it is.
 * Each record's fields mean one thing, for the kinds that record serves. */
struct event_hdr {
	__u64 ts;     /* bpf_ktime_get_ns: CLOCK_MONOTONIC; a span's or spell's start */
	__u64 cgroup; /* the actor's cgroup v2 id */
	__u64 obj;    /* kernel address of the object: identity across events; 0: none */
	__u64 owner_cgroup; /* cgroup v2 id of the owner; 0 for kernel objects */
	__u32 kind;   /* enum event_kind */
	__u32 flags;  /* enum event_flag */
	__u32 actor_pid;
	__u32 actor_tid;
	__u32 owner_pid; /* F_HAS_OWNER: tgid of res->task (or the traced thread) */
	__u32 owner_tid;
	char actor_comm[TASK_COMM_LEN];
	char owner_comm[TASK_COMM_LEN];
};

/* The RDMA device and port an event is on (F_HAS_DEV; port 0: none). */
struct ev_dev {
	__u32 index;
	__u32 port;
	char name[DEV_NAME_LEN];
};

/* An rdma_cm ID's or a socket's addresses (F_HAS_ADDR). */
struct ev_addr {
	__u32 ps; /* enum rdma_ucm_port_space */
	__u8 src[ADDR_LEN];
	__u8 dst[ADDR_LEN];
};

/* A restrack object or an rdma_cm ID. */
struct ev_res {
	__u32 id;  /* restrack id (cm-idn, cqn, pdn, ...); lqpn for QPs lives in qpn */
	__u32 qpn; /* F_HAS_QP */
	__u8 res_type; /* enum rdma_restrack_type */
	__u8 qp_type;  /* F_HAS_QP */
	__u8 old_state; /* EV_QP_STATE: the QP's state before, or STATE_UNKNOWN */
	__u8 new_state; /* F_HAS_STATE: a QP's or an rdma_cm ID's state */
	char kern_name[KERN_NAME_LEN];
};

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

/* EV_DEV_*: a device registered or unregistered. */
struct dev_event {
	struct event_hdr h;
	struct ev_dev dev;
};

/* EV_PORT_BUSY: a bind, rdma_listen or rdma_connect got EADDRINUSE. */
struct port_busy_event {
	struct event_hdr h;
	struct ev_dev dev;
	struct ev_res res; /* the rdma_cm ID (rdma_listen, rdma_connect) */
	struct ev_addr addr;
	__u32 op;         /* enum port_op */
	__u32 suppressed; /* like events (same port, process and operation) the rate limit held back before this one */
	__s32 status;
};

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

/* EV_SMC_FALLBACK: an SMC socket fell back to TCP. */
struct smc_fallback_event {
	struct event_hdr h;
	struct ev_addr addr; /* the TCP connection's */
	__u64 inode;  /* the SMC socket's */
	__s32 reason; /* SMC_CLC_DECL_* */
};

/* EV_SPAN (bench-trace): a kernel function returned. */
struct span_event {
	struct event_hdr h;
	struct ev_dev dev;
	__u64 dur;  /* ns; h.ts is its start */
	__u64 size; /* F_HAS_SIZE: ib_umem_get's size */
	__u32 func; /* enum span_func */
	__s32 status; /* the errno it returned, or 0 */
};

/* EV_OFF_CPU (bench-trace): a followed thread ran again after a spell off
 * CPU; the owner is that thread. */
struct off_cpu_event {
	struct event_hdr h;
	__u64 dur;  /* ns; h.ts is its start */
	__u64 wait; /* ns from its wakeup to switch-in (0: not woken while traced) */
	__u32 next_pid; /* the task that ran instead (its tid): the longest runner of a preempted spell, else the first */
	char next_comm[TASK_COMM_LEN];
};

/* Keep the types in the object so bpf2go -type generates them for Go: the
 * records and the enums that give their fields their meaning. */
const struct event_hdr *unused_event_hdr __attribute__((unused));
const struct res_event *unused_res_event __attribute__((unused));
const struct dev_event *unused_dev_event __attribute__((unused));
const struct port_busy_event *unused_port_busy_event __attribute__((unused));
const struct smc_link_event *unused_smc_link_event __attribute__((unused));
const struct smc_fallback_event *unused_smc_fallback_event __attribute__((unused));
const struct span_event *unused_span_event __attribute__((unused));
const struct off_cpu_event *unused_off_cpu_event __attribute__((unused));
const enum event_kind *unused_event_kind __attribute__((unused));
const enum event_flag *unused_event_flag __attribute__((unused));
const enum cm_tp *unused_cm_tp __attribute__((unused));
const enum port_op *unused_port_op __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* user space may resize */
} events SEC(".maps");

/* Events that found the ring buffer full: counted here, never silent. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* polling is set by the reader while it polls (events are flowing): submit
 * then does not wake it per event. Mapped into the reader's memory. fence
 * is only added to, for the barrier. */
struct reader_state {
	__u64 polling;
	__u64 fence;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct reader_state);
} reader SEC(".maps");

/* Last known state of each QP, by address, to report old -> new. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} qp_states SEC(".maps");

/* Side maps (closing, entry_args, modify_args) carry a value from a
 * function's entry to its return. A missed return (kretprobe maxactive
 * exhausted, a thread killed in between) leaves its entry behind for good:
 * in a plain HASH those would fill the map and every later update would
 * fail, and the events behind them vanish. LRU maps evict the oldest
 * instead; what still goes wrong is counted in side_drops. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} side_drops SEC(".maps");

static __always_inline void side_drop(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&side_drops, &zero);
	if (n)
		__sync_fetch_and_add(n, 1); /* atomic: a preemptible program can be interrupted on its CPU by another */
}

/* Threads inside the release of a uverbs or rdma_cm file: what they free
 * is cleanup of a closed file, not an explicit destroy. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32); /* tid */
	__type(value, __u32);
} closing SEC(".maps");

/* Arguments saved at kprobe entry for the kretprobe fallbacks. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 10240);
	__type(key, __u64); /* pid_tgid */
	__type(value, __u64);
} entry_args SEC(".maps");

static __always_inline void count(void *map)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(map, &zero);
	if (n)
		__sync_fetch_and_add(n, 1);
}

/* Fill a reserved record's header: the actor and the context. */
static __always_inline void fill_hdr(struct event_hdr *h, __u32 kind)
{
	h->ts = bpf_ktime_get_ns();
	h->kind = kind;
	__u64 id = bpf_get_current_pid_tgid();
	h->actor_pid = id >> 32;
	h->actor_tid = (__u32)id;
	h->cgroup = bpf_get_current_cgroup_id();
	bpf_get_current_comm(h->actor_comm, sizeof(h->actor_comm));
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	if (BPF_CORE_READ(task, flags) & PF_EXITING)
		h->flags |= F_EXITING;
	__u32 tid = h->actor_tid;
	if (bpf_map_lookup_elem(&closing, &tid))
		h->flags |= F_CLOSING;
}

/* Reserve a record of type (one of the *_event structs), zeroed, its
 * header filled, counting a full ring in lost (drops, or busy_drops for the
 * port-busy events). A macro: the ring takes only a constant size. */
#define reserve_counted(type, kind, lost)                                 \
	({                                                                \
		type *__e = bpf_ringbuf_reserve(&events, sizeof(type), 0); \
		if (__e) {                                                \
			__builtin_memset(__e, 0, sizeof(type));           \
			fill_hdr(&__e->h, kind);                          \
		} else {                                                  \
			count(lost);                                      \
		}                                                         \
		__e;                                                      \
	})

#define reserve(type, kind) reserve_counted(type, kind, &drops)

/* Filters pushed from user space (trace -p, --filter-cgroup, --filter-
 * container, --filter-pod, -- CMD): an event whose owner is in none of the
 * sets is discarded here, before it can wake the reader, and counted.
 * Events without an owner pass: user space decides for them. */
#define FILTER_PIDS (1 << 0)
#define FILTER_CGROUPS (1 << 1)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32); /* FILTER_* */
} filter_on SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* a tgid or tid */
	__type(value, __u8);
} filter_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* a cgroup v2 id */
	__type(value, __u8);
} filter_cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} filtered SEC(".maps");

static __always_inline int filtered_out(struct event_hdr *e)
{
	__u32 zero = 0;
	__u32 *on = bpf_map_lookup_elem(&filter_on, &zero);
	if (!on || !*on || !(e->flags & F_HAS_OWNER))
		return 0;
	/* Keys on the stack: older verifiers take no ring buffer memory as a key. */
	__u32 pid = e->owner_pid, tid = e->owner_tid;
	__u64 cg = e->owner_cgroup;
	if ((*on & FILTER_PIDS) && !bpf_map_lookup_elem(&filter_pids, &pid) && !bpf_map_lookup_elem(&filter_pids, &tid))
		return 1;
	if ((*on & FILTER_CGROUPS) && !bpf_map_lookup_elem(&filter_cgroups, &cg))
		return 1;
	return 0;
}

/* Waking the reader costs more than the event (a thread switch and the Go
 * scheduler, per event when events come one by one). While the reader says
 * it polls, it is not woken, unless the ring is a quarter full; otherwise
 * notification is adaptive (flags 0): the kernel wakes a reader that had
 * caught up. The locked add orders our reservation before the look at the
 * flag, as the reader's atomic store orders its flag before its look at the
 * ring: one of the two sees the other, so no event waits unseen. (Polling
 * when idle too, every 50 ms, cost the idle reader 58 ms of CPU a second
 * under TCG: the reader polls only while events flow.) */
static __always_inline void submit(struct event_hdr *e)
{
	__u32 zero = 0;
	if (filtered_out(e)) {
		__u64 *n = bpf_map_lookup_elem(&filtered, &zero);
		if (n)
			__sync_fetch_and_add(n, 1);
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		return;
	}
	struct reader_state *r = bpf_map_lookup_elem(&reader, &zero);
	if (r) {
		__sync_fetch_and_add(&r->fence, 1); /* lock xadd: a full barrier */
		if (r->polling) {
			__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
			__u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);
			bpf_ringbuf_submit(e, avail > size / 4 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
			return;
		}
	}
	bpf_ringbuf_submit(e, 0);
}

static __always_inline int close_enter(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), one = 1;
	if (bpf_map_update_elem(&closing, &tid, &one, BPF_ANY))
		side_drop();
	return 0;
}

/* Entry half of a kprobe/kretprobe pair: save what the return needs. */
static __always_inline void save_entry(void *map, __u64 key, const void *val)
{
	if (bpf_map_update_elem(map, &key, val, BPF_ANY))
		side_drop();
}

/* Return half: what the entry saved, or NULL, counted: the entry was
 * evicted or never ran (a missed kprobe), and the event is lost. The
 * caller deletes the entry once it has copied it. */
static __always_inline void *take_entry(void *map, __u64 key)
{
	void *v = bpf_map_lookup_elem(map, &key);
	if (!v)
		side_drop();
	return v;
}

static __always_inline int close_exit(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&closing, &tid);
	return 0;
}

static __always_inline void set_dev(struct event_hdr *h, struct ev_dev *d, struct ib_device *dev)
{
	if (!dev)
		return;
	d->index = BPF_CORE_READ(dev, index);
	BPF_CORE_READ_STR_INTO(&d->name, dev, name);
	h->flags |= F_HAS_DEV;
}

/* kernfs_node.id was a union kernfs_node_id before Linux 5.5 (commit
 * 67c0496e87d1, "kernfs: convert kernfs_node->id from union kernfs_node_id
 * to u64"); the flavour reads it there, the plain type everywhere else. */
union kernfs_node_id___old {
	struct {
		__u32 ino;
		__u32 generation;
	};
	__u64 id;
};
struct kernfs_node___old {
	union kernfs_node_id___old id;
};

/* The cgroup v2 id of a task (its default hierarchy cgroup), as
 * bpf_get_current_cgroup_id gives for the current one: what tells the
 * owner's membership in `leaks -- CMD`'s cgroup at the event itself.
 * A task's css_set stays set through its exit until it is freed, and
 * restrack holds a reference to res->task. */
static __always_inline __u64 task_cgroup_id(struct task_struct *task)
{
	struct kernfs_node *kn = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn);
	if (!kn)
		return 0;
	if (bpf_core_type_exists(union kernfs_node_id___old)) {
		struct kernfs_node___old *old = (void *)kn;
		return BPF_CORE_READ(old, id.id);
	}
	return BPF_CORE_READ(kn, id);
}

/* Whether task's process is exiting: the task is (PF_EXITING) and so is
 * every other thread of its process (signal->live, the live threads, is 0:
 * each exiting thread counts itself out before it lets go of its files and
 * memory). res->task is the thread that created the object, which may have
 * ended long before its process: its own PF_EXITING alone would take every
 * later release by the process's other threads for an exit. */
static __always_inline int process_exiting(struct task_struct *task)
{
	if (!(BPF_CORE_READ(task, flags) & PF_EXITING))
		return 0;
	return BPF_CORE_READ(task, signal, live.counter) == 0;
}

/* The owner is res->task (user objects) or res->kern_name (kernel
 * objects), never the current task: rdma_cm runs in workqueues. */
static __always_inline void set_owner(struct event_hdr *h, struct ev_res *r, struct rdma_restrack_entry *res)
{
	struct task_struct *task = BPF_CORE_READ(res, task);
	const char *kern = BPF_CORE_READ(res, kern_name);

	r->res_type = BPF_CORE_READ(res, type);
	r->id = BPF_CORE_READ(res, id);
	if (BPF_CORE_READ(res, user))
		h->flags |= F_USER;
	if (task) {
		h->owner_pid = BPF_CORE_READ(task, tgid);
		h->owner_tid = BPF_CORE_READ(task, pid);
		BPF_CORE_READ_STR_INTO(&h->owner_comm, task, comm);
		h->owner_cgroup = task_cgroup_id(task);
		h->flags |= F_HAS_OWNER;
		if (process_exiting(task))
			h->flags |= F_OWNER_EXITING;
	}
	if (kern)
		bpf_probe_read_kernel_str(r->kern_name, sizeof(r->kern_name), kern);
}

#define container(ptr, type, member) ((type *)((void *)(ptr) - bpf_core_field_offset(type, member)))

static __always_inline void set_qp(struct event_hdr *h, struct ev_dev *d, struct ev_res *r, struct ib_qp *qp)
{
	r->qpn = BPF_CORE_READ(qp, qp_num);
	r->qp_type = BPF_CORE_READ(qp, qp_type);
	d->port = BPF_CORE_READ(qp, port);
	h->flags |= F_HAS_QP;
}

static __always_inline void set_cm(struct event_hdr *h, struct ev_dev *d, struct ev_res *r, struct ev_addr *a,
				   struct rdma_id_private *id)
{
	h->obj = (__u64)id;
	set_owner(h, r, &id->res);
	r->res_type = 3; /* RDMA_RESTRACK_CM_ID, also before it is tracked */
	set_dev(h, d, BPF_CORE_READ(id, id.device));
	d->port = BPF_CORE_READ(id, id.port_num);
	a->ps = BPF_CORE_READ(id, id.ps);
	r->qp_type = BPF_CORE_READ(id, id.qp_type);
	r->qpn = BPF_CORE_READ(id, qp_num);
	if (r->qpn)
		h->flags |= F_HAS_QP;
	r->new_state = BPF_CORE_READ(id, state);
	h->flags |= F_HAS_STATE | F_HAS_ADDR;
	bpf_probe_read_kernel(a->src, ADDR_LEN, &id->id.route.addr.src_addr);
	bpf_probe_read_kernel(a->dst, ADDR_LEN, &id->id.route.addr.dst_addr);
}

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

#include "qpattr.h"

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

static __always_inline int emit_dev(__u32 kind, struct ib_device *dev)
{
	struct dev_event *e = reserve(struct dev_event, kind);
	if (!e)
		return 0;
	e->h.obj = (__u64)dev;
	set_dev(&e->h, &e->dev, dev);
	submit(&e->h);
	return 0;
}

/* iWARP devices (node type RNIC) that exist: a process's TCP bind can clash
 * with RDMA only through one (iWARP's listens and connections are host TCP
 * sockets; RoCE's and InfiniBand's rdma_cm ports are not), so a failed bind
 * is reported only while devs is not 0. at_start is how many existed when
 * the tracer started, as user space counted them in sysfs before attaching;
 * iwarp_devs holds those registered since, by address, so that the
 * unregister of either kind is counted once. */
#define RDMA_NODE_RNIC 4 /* enum rdma_node_type, UAPI */

struct iwarp_state {
	__s64 devs;
	__s64 at_start;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iwarp_state);
} iwarp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* struct ib_device * */
	__type(value, __u8);
} iwarp_devs SEC(".maps");

static __always_inline void iwarp_registered(struct ib_device *dev)
{
	__u32 zero = 0;
	__u64 key = (__u64)dev;
	__u8 one = 1;
	struct iwarp_state *s = bpf_map_lookup_elem(&iwarp, &zero);
	if (!s || BPF_CORE_READ(dev, node_type) != RDMA_NODE_RNIC)
		return;
	/* A full map (1024 RNICs) counts the device anyway: a failed bind
	 * too many reported rather than a clash missed. */
	if (bpf_map_update_elem(&iwarp_devs, &key, &one, BPF_NOEXIST) != -17 /* EEXIST */)
		__sync_fetch_and_add(&s->devs, 1);
}

static __always_inline void iwarp_unregistering(struct ib_device *dev)
{
	__u32 zero = 0;
	__u64 key = (__u64)dev;
	struct iwarp_state *s = bpf_map_lookup_elem(&iwarp, &zero);
	if (!s || BPF_CORE_READ(dev, node_type) != RDMA_NODE_RNIC)
		return;
	if (bpf_map_delete_elem(&iwarp_devs, &key) == 0) {
		__sync_fetch_and_add(&s->devs, -1);
	} else if (s->at_start > 0) {
		__sync_fetch_and_add(&s->at_start, -1);
		__sync_fetch_and_add(&s->devs, -1);
	}
}

static __always_inline int iwarp_present(void)
{
	__u32 zero = 0;
	struct iwarp_state *s = bpf_map_lookup_elem(&iwarp, &zero);
	return s && s->devs != 0;
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

SEC("fexit/ib_register_device")
int BPF_PROG(fexit_register_device, struct ib_device *dev, const char *name, void *dma_device, int ret)
{
	if (ret)
		return 0;
	iwarp_registered(dev);
	return emit_dev(EV_DEV_REGISTER, dev);
}

SEC("fexit/__ib_unregister_device")
int BPF_PROG(fexit_unregister_device, struct ib_device *dev)
{
	return emit_dev(EV_DEV_UNREGISTERED, dev);
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

/* ---- Hooks whose two variants share one body ----
 * One line per hook, as pwru does: the BTF program (fentry, tp_btf) and its
 * fallback (kprobe, raw_tp) come from one macro, so that they cannot drift
 * apart. expr is parenthesised where it has commas. */
#define ENTRY_HOOK(fn, name, expr, ...)                                       \
	SEC("fentry/" #fn)                                                   \
	int BPF_PROG(fentry_##name, ##__VA_ARGS__) { return expr; }          \
	SEC("kprobe/" #fn)                                                   \
	int BPF_KPROBE(kprobe_##name, ##__VA_ARGS__) { return expr; }
#define RETURN_HOOK(fn, name, expr)                                           \
	SEC("fexit/" #fn)                                                    \
	int BPF_PROG(fexit_##name) { return expr; }                          \
	SEC("kretprobe/" #fn)                                                \
	int BPF_KRETPROBE(kretprobe_##name) { return expr; }
#define TP_HOOK(tp, expr, ...)                                                \
	SEC("tp_btf/" #tp)                                                   \
	int BPF_PROG(tp_btf_##tp, ##__VA_ARGS__) { return expr; }            \
	SEC("raw_tp/" #tp)                                                   \
	int BPF_PROG(raw_tp_##tp, ##__VA_ARGS__) { return expr; }

ENTRY_HOOK(rdma_restrack_del, restrack_del, (emit_res(EV_RES_DEL, res)), struct rdma_restrack_entry *res)
ENTRY_HOOK(rdma_restrack_begin_del, restrack_begin_del, (emit_res(EV_RES_BEGIN_DEL, res)), struct rdma_restrack_entry *res)
ENTRY_HOOK(rdma_restrack_commit_del, restrack_commit_del, (emit_res(EV_RES_COMMIT_DEL, res)), struct rdma_restrack_entry *res)
ENTRY_HOOK(rdma_restrack_abort_del, restrack_abort_del, (emit_res(EV_RES_ABORT_DEL, res)), struct rdma_restrack_entry *res)
ENTRY_HOOK(__ib_unregister_device, unregister_device, (iwarp_unregistering(dev), emit_dev(EV_DEV_UNREGISTER, dev)), struct ib_device *dev)

/* The release of /dev/infiniband/uverbsN (ib_uverbs) and rdma_cm (rdma_ucm)
 * files, where the kernel frees what a process left behind. */
ENTRY_HOOK(ib_uverbs_close, uverbs_close, close_enter())
RETURN_HOOK(ib_uverbs_close, uverbs_close, close_exit())
ENTRY_HOOK(ucma_close, ucma_close, close_enter())
RETURN_HOOK(ucma_close, ucma_close, close_exit())

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

/* ==== Port conflicts: EADDRINUSE where RDMA meets TCP ====
 * iWARP's listens and connections are host TCP sockets, so rdma_listen and
 * rdma_connect on an iWARP device fail with EADDRINUSE when a process's TCP
 * socket holds the port, and a process's bind fails when iWARP holds it.
 * Only that error is reported: these functions are called often, fail
 * rarely. User space names the holder from a dump made when the event
 * arrives. */

#define EADDRINUSE 98
#define IPPROTO_TCP_NUM 6

/* Port-busy events are auxiliary: any local user can make failing binds by
 * the hundred thousand a second, and they must never cost a lifecycle event
 * its place. So (1) a failed bind is reported only while an iWARP device
 * exists (iwarp_present); (2) each process, port and operation gets one
 * event a second, the next one carrying how many were held back in
 * suppressed (all of them also counted in busy_suppressed); (3) a port-busy
 * event is queued only while the ring is less than a quarter full, so that
 * three quarters are always left to the lifecycle events; what that refuses,
 * or a full ring, is counted in busy_drops, never in drops. */
#define BUSY_INTERVAL_NS 1000000000ULL

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} busy_drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} busy_suppressed SEC(".maps");

struct busy_key {
	__u32 tgid;
	__u16 port; /* network order, as in the sockaddr */
	__u16 op;   /* enum port_op */
};

struct busy_limit {
	__u64 next; /* bpf_ktime_get_ns from which the next one is shown */
	__u64 held; /* held back since the last one shown */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct busy_key);
	__type(value, struct busy_limit);
} busy_limits SEC(".maps");

/* The rate limit: -1 to hold this one back (counted), else the number held
 * back before it, to carry. The count is taken by subtracting what was
 * read, so that increments racing with the read stay for the next one. */
static __always_inline long busy_admit(__u32 op, __u16 port)
{
	struct busy_key k = {.tgid = bpf_get_current_pid_tgid() >> 32, .port = port, .op = op};
	__u64 now = bpf_ktime_get_ns();
	struct busy_limit *l = bpf_map_lookup_elem(&busy_limits, &k);
	if (!l) {
		struct busy_limit first = {.next = now + BUSY_INTERVAL_NS};
		bpf_map_update_elem(&busy_limits, &k, &first, BPF_NOEXIST);
		return 0;
	}
	if (now < l->next) {
		__sync_fetch_and_add(&l->held, 1);
		count(&busy_suppressed);
		return -1;
	}
	l->next = now + BUSY_INTERVAL_NS;
	__u64 held = l->held;
	__sync_fetch_and_add(&l->held, -held);
	return held > 0xffffffff ? 0xffffffff : held;
}

/* A record for a port-busy event, or 0: held back by the rate limit, or
 * refused as the ring is a quarter full (counted in busy_drops). A refused
 * event gives its held-back count to the next. */
static __always_inline struct port_busy_event *reserve_busy(__u32 op, __u16 port)
{
	long held = busy_admit(op, port);
	if (held < 0)
		return 0;
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);
	struct port_busy_event *e = 0;
	if (avail + sizeof(struct port_busy_event) <= size / 4)
		e = reserve_counted(struct port_busy_event, EV_PORT_BUSY, &busy_drops);
	else
		count(&busy_drops);
	if (!e) {
		struct busy_key k = {.tgid = bpf_get_current_pid_tgid() >> 32, .port = port, .op = op};
		struct busy_limit *l = bpf_map_lookup_elem(&busy_limits, &k);
		if (l && held)
			__sync_fetch_and_add(&l->held, held);
		return 0;
	}
	e->suppressed = held;
	return e;
}

/* The port of a sockaddr_in or sockaddr_in6 (both have it at byte 2). */
static __always_inline __u16 sockaddr_port(const void *sa)
{
	__u16 port = 0;
	bpf_probe_read_kernel(&port, sizeof(port), sa + 2);
	return port;
}

static __always_inline int emit_cm_busy(__u32 op, struct rdma_cm_id *id, long ret)
{
	/* A listen that worked: the ID is in LISTEN now, which no rdma_cma
	 * tracepoint tells (a kernel service's listener would stay ADDR_BOUND
	 * in the live table where rdma res says LISTEN). */
	if (ret == 0 && id && op == PORT_RDMA_LISTEN)
		return emit_cm(CM_TP_LISTEN, container(id, struct rdma_id_private, id), 0, 0);
	if (ret != -EADDRINUSE || !id)
		return 0;
	struct port_busy_event *e = reserve_busy(op, sockaddr_port(&id->route.addr.src_addr));
	if (!e)
		return 0;
	set_cm(&e->h, &e->dev, &e->res, &e->addr, container(id, struct rdma_id_private, id));
	e->op = op;
	e->status = (__s32)ret;
	submit(&e->h);
	return 0;
}

/* A process's TCP bind; siw's own kernel sockets (no file) are left to the
 * rdma_listen or rdma_connect event that the same failure gives. */
static __always_inline int emit_bind_busy(__u32 op, struct sock *sk, struct sockaddr *uaddr, int addr_len, long ret)
{
	if (ret != -EADDRINUSE || !sk || !iwarp_present())
		return 0;
	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP_NUM || !BPF_CORE_READ(sk, sk_socket, file))
		return 0;
	if (addr_len < 4)
		return 0;
	struct port_busy_event *e = reserve_busy(op, sockaddr_port(uaddr));
	if (!e)
		return 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	e->h.owner_pid = e->h.actor_pid;
	e->h.owner_tid = e->h.actor_tid;
	__builtin_memcpy(e->h.owner_comm, e->h.actor_comm, sizeof(e->h.owner_comm));
	e->h.owner_cgroup = task_cgroup_id(task);
	e->h.flags |= F_HAS_OWNER | F_HAS_ADDR;
	e->addr.ps = 0x0106; /* RDMA_PS_TCP: the port space a bind shares with iWARP */
	/* The length a helper gets must be bounded in the register it is
	 * passed in. fexit hands addr_len over as a 64-bit context slot whose
	 * upper half the verifier cannot know; clang clamped a zero-extended
	 * copy and passed the unextended slot (and dropped the mask as
	 * redundant), which 6.1's and 6.12's verifiers reject ("R2 min value
	 * is negative"). Widening first and fencing the clamped value keeps
	 * the bound on the register the call uses. */
	__u64 n = (__u32)addr_len;
	if (n > ADDR_LEN)
		n = ADDR_LEN;
	asm volatile("" : "+r"(n));
	bpf_probe_read_kernel(e->addr.src, n, uaddr);
	e->op = op;
	e->status = (__s32)ret;
	submit(&e->h);
	return 0;
}

SEC("fexit/rdma_listen")
int BPF_PROG(fexit_rdma_listen, struct rdma_cm_id *id, int backlog, int ret)
{
	return emit_cm_busy(PORT_RDMA_LISTEN, id, ret);
}

/* rdma_connect_locked (5.11+: ucma calls it, rdma_connect wraps it), and
 * the same program on rdma_connect for older kernels. */
SEC("fexit/rdma_connect_locked")
int BPF_PROG(fexit_rdma_connect, struct rdma_cm_id *id, void *param, int ret)
{
	return emit_cm_busy(PORT_RDMA_CONNECT, id, ret);
}

SEC("fexit/__inet_bind")
int BPF_PROG(fexit_inet_bind, struct sock *sk, struct sockaddr *uaddr, int addr_len, __u32 flags, int ret)
{
	return emit_bind_busy(PORT_INET_BIND, sk, uaddr, addr_len, ret);
}

SEC("fexit/__inet6_bind")
int BPF_PROG(fexit_inet6_bind, struct sock *sk, struct sockaddr *uaddr, int addr_len, __u32 flags, int ret)
{
	return emit_bind_busy(PORT_INET6_BIND, sk, uaddr, addr_len, ret);
}

/* The kprobe fallbacks keep the arguments for the return, by thread and
 * function: siw's bind runs inside rdma_listen on the same thread. */
struct port_key {
	__u64 tid;
	__u32 op;
	__u32 pad;
};

struct port_args {
	__u64 a, b;
	__u32 len;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 10240);
	__type(key, struct port_key);
	__type(value, struct port_args);
} port_args SEC(".maps");

static __always_inline int port_save(__u32 op, __u64 a, __u64 b, __u32 len)
{
	struct port_key k = {.tid = bpf_get_current_pid_tgid(), .op = op};
	struct port_args v = {.a = a, .b = b, .len = len};
	bpf_map_update_elem(&port_args, &k, &v, BPF_ANY);
	return 0;
}

static __always_inline int port_take(__u32 op, struct port_args *out)
{
	struct port_key k = {.tid = bpf_get_current_pid_tgid(), .op = op};
	struct port_args *v = bpf_map_lookup_elem(&port_args, &k);
	if (!v)
		return 0;
	*out = *v;
	bpf_map_delete_elem(&port_args, &k);
	return 1;
}

SEC("kprobe/rdma_listen")
int BPF_KPROBE(kprobe_rdma_listen, struct rdma_cm_id *id) { return port_save(PORT_RDMA_LISTEN, (__u64)id, 0, 0); }
SEC("kretprobe/rdma_listen")
int BPF_KRETPROBE(kretprobe_rdma_listen, int ret)
{
	struct port_args a;
	if (!port_take(PORT_RDMA_LISTEN, &a))
		return 0;
	return emit_cm_busy(PORT_RDMA_LISTEN, (struct rdma_cm_id *)a.a, ret);
}

SEC("kprobe/rdma_connect_locked")
int BPF_KPROBE(kprobe_rdma_connect, struct rdma_cm_id *id) { return port_save(PORT_RDMA_CONNECT, (__u64)id, 0, 0); }
SEC("kretprobe/rdma_connect_locked")
int BPF_KRETPROBE(kretprobe_rdma_connect, int ret)
{
	struct port_args a;
	if (!port_take(PORT_RDMA_CONNECT, &a))
		return 0;
	return emit_cm_busy(PORT_RDMA_CONNECT, (struct rdma_cm_id *)a.a, ret);
}

SEC("kprobe/__inet_bind")
int BPF_KPROBE(kprobe_inet_bind, struct sock *sk, struct sockaddr *uaddr, int addr_len)
{
	return port_save(PORT_INET_BIND, (__u64)sk, (__u64)uaddr, addr_len);
}
SEC("kretprobe/__inet_bind")
int BPF_KRETPROBE(kretprobe_inet_bind, int ret)
{
	struct port_args a;
	if (!port_take(PORT_INET_BIND, &a))
		return 0;
	return emit_bind_busy(PORT_INET_BIND, (struct sock *)a.a, (struct sockaddr *)a.b, a.len, ret);
}

SEC("kprobe/__inet6_bind")
int BPF_KPROBE(kprobe_inet6_bind, struct sock *sk, struct sockaddr *uaddr, int addr_len)
{
	return port_save(PORT_INET6_BIND, (__u64)sk, (__u64)uaddr, addr_len);
}
SEC("kretprobe/__inet6_bind")
int BPF_KRETPROBE(kretprobe_inet6_bind, int ret)
{
	struct port_args a;
	if (!port_take(PORT_INET6_BIND, &a))
		return 0;
	return emit_bind_busy(PORT_INET6_BIND, (struct sock *)a.a, (struct sockaddr *)a.b, a.len, ret);
}

/* The port-busy limits as raw_tp programs that BPF_PROG_TEST_RUN can run
 * on a kernel without RDMA (tracer/busy_test.go): the rate limit's verdict,
 * and a port-busy or a lifecycle record queued (submitted) as the hooks do. */
SEC("raw_tp")
int BPF_PROG(selftest_busy_admit, __u64 op, __u64 port)
{
	return busy_admit(op, port);
}

SEC("raw_tp")
int BPF_PROG(selftest_reserve_busy, __u64 op, __u64 port)
{
	struct port_busy_event *e = reserve_busy(op, port);
	if (!e)
		return 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 1;
}

SEC("raw_tp")
int BPF_PROG(selftest_reserve)
{
	struct res_event *e = reserve(struct res_event, EV_RES_ADD);
	if (!e)
		return 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 1;
}

/* ==== SMC: a socket that falls back to TCP ====
 * smc:smc_switch_to_fallback(smc, fallback_rsn) has the SMC socket; its
 * CLC socket (the TCP connection) gives the 4-tuple, and the SMC socket's
 * inode lets user space name the process that holds it (the server side
 * falls back in a kworker). struct smc_sock is the smc module's, found by
 * name in its BTF when the program loads; its struct sock comes first. */

struct smc_sock {
	struct socket *clcsock;
} __attribute__((preserve_access_index));

#define AF_INET_NUM 2
#define AF_INET6_NUM 10

/* Write a socket's local and remote address as sockaddr_in or
 * sockaddr_in6, as the rdma_cm addresses are. */
static __always_inline void set_sk_addrs(struct event_hdr *h, struct ev_addr *a, struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	__u16 lport = bpf_htons(BPF_CORE_READ(sk, __sk_common.skc_num));
	__u16 rport = BPF_CORE_READ(sk, __sk_common.skc_dport);
	if (family == AF_INET_NUM) {
		__be32 la = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__be32 ra = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		__builtin_memcpy(a->src, &family, 2);
		__builtin_memcpy(a->src + 2, &lport, 2);
		__builtin_memcpy(a->src + 4, &la, 4);
		__builtin_memcpy(a->dst, &family, 2);
		__builtin_memcpy(a->dst + 2, &rport, 2);
		__builtin_memcpy(a->dst + 4, &ra, 4);
	} else if (family == AF_INET6_NUM) {
		__builtin_memcpy(a->src, &family, 2);
		__builtin_memcpy(a->src + 2, &lport, 2);
		BPF_CORE_READ_INTO(a->src + 8, sk, __sk_common.skc_v6_rcv_saddr);
		__builtin_memcpy(a->dst, &family, 2);
		__builtin_memcpy(a->dst + 2, &rport, 2);
		BPF_CORE_READ_INTO(a->dst + 8, sk, __sk_common.skc_v6_daddr);
	} else {
		return;
	}
	a->ps = 0x0106; /* RDMA_PS_TCP: it is a TCP connection */
	h->flags |= F_HAS_ADDR;
}

static __always_inline int emit_smc_fallback(struct smc_sock *smc, int rsn)
{
	if (!smc)
		return 0;
	struct smc_fallback_event *e = reserve(struct smc_fallback_event, EV_SMC_FALLBACK);
	if (!e)
		return 0;
	e->h.obj = (__u64)smc;
	e->reason = rsn;
	struct socket *sock = BPF_CORE_READ((struct sock *)smc, sk_socket);
	if (sock) {
		struct socket_alloc *sa = container(sock, struct socket_alloc, socket);
		e->inode = BPF_CORE_READ(sa, vfs_inode.i_ino);
	}
	struct sock *clc = BPF_CORE_READ(smc, clcsock, sk);
	if (clc)
		set_sk_addrs(&e->h, &e->addr, clc);
	submit(&e->h);
	return 0;
}

SEC("tp_btf/smc_switch_to_fallback")
int BPF_PROG(tp_btf_smc_switch_to_fallback, struct smc_sock *smc, int rsn)
{
	return emit_smc_fallback(smc, rsn);
}

SEC("raw_tp/smc_switch_to_fallback")
int BPF_PROG(raw_tp_smc_switch_to_fallback, struct smc_sock *smc, int rsn)
{
	return emit_smc_fallback(smc, rsn);
}

/* ==== SMC-R links: which [smc] QP is whose ====
 * No interface gives an SMC-R link's QP number: rdma res lists the smc
 * module's QPs as [smc], SMC's generic netlink the links without QPs. The
 * link itself has both: smc_ib_create_queue_pair(lnk) creates lnk->roce_qp
 * for link lnk->link_id of link group lnk->lgr, on lnk->smcibdev's ibdev,
 * port lnk->ibport; smc_ib_destroy_queue_pair(lnk) destroys it, and
 * smc:smcr_link_down(lnk, location) says the link went down. The types
 * are the smc module's (its BTF). role sits in an anonymous union of
 * struct smc_link_group, which CO-RE searches by name. */

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

/* ==== bench-trace: kernel-function spans and off-CPU spells ====
 * A span is one call of a kernel function that does the work behind a verb
 * or an rdma_cm step, timed from fentry to fexit (kprobe to kretprobe). An
 * off-CPU spell is the time a followed thread spent switched out, reported
 * when it runs again, with who ran first in its place. Followed threads are
 * those of the processes (tgids) user space puts in `follow`: the scheduler
 * hooks fire for every switch on the machine and must stay cheap, and
 * ucma_get_event's time is mostly waiting, only worth it for the benchmark. */

enum span_func {
	SPAN_RDMA_RESOLVE_ADDR = 1,
	SPAN_RDMA_RESOLVE_ROUTE,
	SPAN_RDMA_CONNECT_LOCKED,
	SPAN_UCMA_GET_EVENT,
	SPAN_IB_UVERBS_REG_MR,
	SPAN_IB_UMEM_GET,
	SPAN_IB_DEREG_MR_USER,
	SPAN_IB_UVERBS_ALLOC_PD,
	SPAN_UVERBS_CQ_CREATE,
	SPAN_UVERBS_QP_CREATE,
	SPAN_IB_UVERBS_CREATE_CQ,
	SPAN_IB_UVERBS_EX_CREATE_CQ,
	SPAN_IB_UVERBS_CREATE_QP,
	SPAN_IB_UVERBS_EX_CREATE_QP,
	SPAN_IB_UVERBS_MODIFY_QP,
	SPAN_IB_UVERBS_EX_MODIFY_QP,
};
const enum span_func *unused_span_func __attribute__((unused));

/* Processes whose threads the scheduler hooks and the followed-only spans
 * watch; filled by user space (--follow-pid). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} follow SEC(".maps");

struct span_key {
	__u32 tid;
	__u32 func;
};

struct span_start {
	__u64 ts;
	__u64 size;
	__u64 dev; /* struct ib_device *, where the entry knows it */
};

/* LRU: an entry whose exit never came (a missed fexit) must not pin a slot. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 10240);
	__type(key, struct span_key);
	__type(value, struct span_start);
} span_starts SEC(".maps");

struct offcpu {
	__u64 start;
	__u64 wake;
	__u32 next_pid;
	__u32 preempted;
	char next_comm[TASK_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32); /* tid of the followed thread */
	__type(value, struct offcpu);
} offcpu_starts SEC(".maps");

/* The task that ran longest while a followed thread waited for its CPU,
 * one preempted spell per CPU. Who ran first is often a short kworker or
 * the tracer's reader, and who ran last the same: a hog that took the CPU
 * in between was named by neither (seen on 6.12 under qemu). A thread
 * switched back in on another CPU (not pinned) keeps the first runner, as
 * does a spell that began while another one held the slot. */
struct cpu_spell {
	__u32 tid; /* the waiting thread, 0: none */
	__u32 longest_pid;
	__u64 start; /* when its spell began: a thread that left for another CPU
	              * and comes back here after a later spell is not this one */
	__u64 since; /* when the current runner got the CPU */
	__u64 longest; /* ns */
	char longest_comm[TASK_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_spell);
} cpu_spells SEC(".maps");

static __always_inline int followed(__u32 tgid)
{
	return tgid && bpf_map_lookup_elem(&follow, &tgid) != 0;
}

static __always_inline int span_enter(__u32 func, __u64 size, __u64 dev, int only_followed)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (only_followed && !followed(id >> 32))
		return 0;
	struct span_key k = {.tid = (__u32)id, .func = func};
	struct span_start s = {.ts = bpf_ktime_get_ns(), .size = size, .dev = dev};
	bpf_map_update_elem(&span_starts, &k, &s, BPF_ANY);
	return 0;
}

/* ret is the return value widened as the function's type says: an errno
 * (-4095..-1) becomes the status, anything else (a count, a pointer) is 0. */
static __always_inline int span_exit(__u32 func, long ret)
{
	struct span_key k = {.tid = (__u32)bpf_get_current_pid_tgid(), .func = func};
	struct span_start *sp = bpf_map_lookup_elem(&span_starts, &k);
	if (!sp)
		return 0;
	struct span_start s = *sp;
	bpf_map_delete_elem(&span_starts, &k);
	struct span_event *e = reserve(struct span_event, EV_SPAN);
	if (!e)
		return 0;
	e->dur = e->h.ts - s.ts;
	e->h.ts = s.ts;
	e->func = func;
	e->status = (ret < 0 && ret >= -4095) ? (__s32)ret : 0;
	if (s.size) {
		e->size = s.size;
		e->h.flags |= F_HAS_SIZE;
	}
	if (s.dev)
		set_dev(&e->h, &e->dev, (struct ib_device *)s.dev);
	submit(&e->h);
	return 0;
}

/* One fentry/fexit and one kprobe/kretprobe pair per function; nargs is
 * where fexit finds the return value, rtype its C type. */
#define SPAN(fn, func, nargs, rtype, only_followed)                              \
	SEC("fentry/" #fn)                                                       \
	int fentry_span_##fn(__u64 *ctx) { return span_enter(func, 0, 0, only_followed); } \
	SEC("fexit/" #fn)                                                        \
	int fexit_span_##fn(__u64 *ctx) { return span_exit(func, (long)(rtype)ctx[nargs]); } \
	SEC("kprobe/" #fn)                                                       \
	int kprobe_span_##fn(struct pt_regs *ctx) { return span_enter(func, 0, 0, only_followed); } \
	SEC("kretprobe/" #fn)                                                    \
	int kretprobe_span_##fn(struct pt_regs *ctx) { return span_exit(func, (long)(rtype)PT_REGS_RC(ctx)); }

SPAN(rdma_resolve_addr, SPAN_RDMA_RESOLVE_ADDR, 4, int, 0)
SPAN(rdma_resolve_route, SPAN_RDMA_RESOLVE_ROUTE, 2, int, 0)
SPAN(rdma_connect_locked, SPAN_RDMA_CONNECT_LOCKED, 2, int, 0)
SPAN(ucma_get_event, SPAN_UCMA_GET_EVENT, 4, long, 1)
SPAN(ib_uverbs_reg_mr, SPAN_IB_UVERBS_REG_MR, 1, int, 0)
SPAN(ib_dereg_mr_user, SPAN_IB_DEREG_MR_USER, 2, int, 0)
SPAN(ib_uverbs_alloc_pd, SPAN_IB_UVERBS_ALLOC_PD, 1, int, 0)
SPAN(ib_uverbs_handler_UVERBS_METHOD_CQ_CREATE, SPAN_UVERBS_CQ_CREATE, 1, int, 0)
SPAN(ib_uverbs_handler_UVERBS_METHOD_QP_CREATE, SPAN_UVERBS_QP_CREATE, 1, int, 0)
SPAN(ib_uverbs_create_cq, SPAN_IB_UVERBS_CREATE_CQ, 1, int, 0)
SPAN(ib_uverbs_ex_create_cq, SPAN_IB_UVERBS_EX_CREATE_CQ, 1, int, 0)
SPAN(ib_uverbs_create_qp, SPAN_IB_UVERBS_CREATE_QP, 1, int, 0)
SPAN(ib_uverbs_ex_create_qp, SPAN_IB_UVERBS_EX_CREATE_QP, 1, int, 0)
SPAN(ib_uverbs_modify_qp, SPAN_IB_UVERBS_MODIFY_QP, 1, int, 0)
SPAN(ib_uverbs_ex_modify_qp, SPAN_IB_UVERBS_EX_MODIFY_QP, 1, int, 0)

/* ib_umem_get(device, addr, size, access) returns struct ib_umem *: the
 * size is what registration pins, the device where. */
SEC("fentry/ib_umem_get")
int fentry_span_ib_umem_get(__u64 *ctx) { return span_enter(SPAN_IB_UMEM_GET, ctx[2], ctx[0], 0); }
SEC("fexit/ib_umem_get")
int fexit_span_ib_umem_get(__u64 *ctx) { return span_exit(SPAN_IB_UMEM_GET, (long)ctx[4]); }
SEC("kprobe/ib_umem_get")
int kprobe_span_ib_umem_get(struct pt_regs *ctx)
{
	return span_enter(SPAN_IB_UMEM_GET, PT_REGS_PARM3(ctx), PT_REGS_PARM1(ctx), 0);
}
SEC("kretprobe/ib_umem_get")
int kretprobe_span_ib_umem_get(struct pt_regs *ctx) { return span_exit(SPAN_IB_UMEM_GET, (long)PT_REGS_RC(ctx)); }

/* sched_switch(preempt, prev, next, prev_state): a followed prev starts a
 * spell (who runs instead is next); a followed next ends one. */
static __always_inline int on_switch(int preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	if (!prev || !next)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct cpu_spell *cs = bpf_map_lookup_elem(&cpu_spells, &zero);
	if (cs && cs->tid) {
		/* prev ran in the waiting thread's place since cs->since */
		__u64 ran = now - cs->since;
		if (ran > cs->longest) {
			cs->longest = ran;
			cs->longest_pid = BPF_CORE_READ(prev, pid);
			BPF_CORE_READ_STR_INTO(&cs->longest_comm, prev, comm);
		}
		cs->since = now;
	}
	if (followed(BPF_CORE_READ(prev, tgid))) {
		__u32 tid = BPF_CORE_READ(prev, pid);
		struct offcpu o = {.start = now};
		/* runnable when switched out (prev_state TASK_RUNNING): preempted
		 * or yielded, waiting for a CPU, not for an event */
		o.preempted = preempt || prev_state == 0;
		o.next_pid = BPF_CORE_READ(next, pid);
		BPF_CORE_READ_STR_INTO(&o.next_comm, next, comm);
		bpf_map_update_elem(&offcpu_starts, &tid, &o, BPF_ANY);
		/* The slot is this spell's unless another followed thread's
		 * spell still holds it here: the longer spell keeps its count (a
		 * thread of a followed process preempted while its sibling
		 * waited made the sibling's spell name its first runner). */
		int held = 0;
		if (cs && o.preempted && cs->tid && cs->tid != tid) {
			__u32 waiting = cs->tid;
			struct offcpu *w = bpf_map_lookup_elem(&offcpu_starts, &waiting);
			held = w && w->preempted && w->start == cs->start;
		}
		if (cs && o.preempted && !held) {
			cs->tid = tid;
			cs->start = now;
			cs->since = now;
			cs->longest = 0;
		}
	}
	__u32 tgid = BPF_CORE_READ(next, tgid);
	if (!followed(tgid))
		return 0;
	__u32 tid = BPF_CORE_READ(next, pid);
	struct offcpu *op = bpf_map_lookup_elem(&offcpu_starts, &tid);
	if (!op)
		return 0;
	struct offcpu o = *op;
	bpf_map_delete_elem(&offcpu_starts, &tid);
	if (cs && cs->tid == tid) {
		if (cs->longest && cs->start == o.start) {
			o.next_pid = cs->longest_pid;
			__builtin_memcpy(o.next_comm, cs->longest_comm, TASK_COMM_LEN);
		}
		cs->tid = 0;
	}
	struct off_cpu_event *e = reserve(struct off_cpu_event, EV_OFF_CPU);
	if (!e)
		return 0;
	e->h.ts = o.start;
	e->dur = now - o.start;
	if (o.wake >= o.start)
		e->wait = now - o.wake;
	e->h.owner_pid = tgid;
	e->h.owner_tid = tid;
	BPF_CORE_READ_STR_INTO(&e->h.owner_comm, next, comm);
	e->h.flags |= F_HAS_OWNER;
	if (o.preempted)
		e->h.flags |= F_PREEMPTED;
	e->next_pid = o.next_pid;
	__builtin_memcpy(e->next_comm, o.next_comm, TASK_COMM_LEN);
	submit(&e->h);
	return 0;
}

static __always_inline int on_wakeup(struct task_struct *p)
{
	if (!p || !followed(BPF_CORE_READ(p, tgid)))
		return 0;
	__u32 tid = BPF_CORE_READ(p, pid);
	struct offcpu *o = bpf_map_lookup_elem(&offcpu_starts, &tid);
	if (o)
		o->wake = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	return on_switch(preempt, prev, next, prev_state);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	return on_switch(preempt, prev, next, prev_state);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(tp_btf_sched_wakeup, struct task_struct *p) { return on_wakeup(p); }

SEC("raw_tp/sched_wakeup")
int BPF_PROG(raw_tp_sched_wakeup, struct task_struct *p) { return on_wakeup(p); }
#include "failures.h" /* async events and QP errors */
