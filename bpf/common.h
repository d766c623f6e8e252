/* SPDX-License-Identifier: GPL-2.0 */
/* What every topic of rdmatrace.bpf.c shares: the one kind space and the
 * record header (the wire format user space decodes), the ring buffer and
 * how a record gets into it (reserve, submit, the kernel filters), the side
 * maps of the kprobe fallbacks, the helpers that name a record's device,
 * owner, QP and rdma_cm ID, and the macros that make a hook's two variants
 * from one body. Each topic header includes this one. */
#ifndef RDMATRACE_COMMON_H
#define RDMATRACE_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

#define TASK_COMM_LEN 16
#define DEV_NAME_LEN 64 /* IB_DEVICE_NAME_MAX */
#define KERN_NAME_LEN 32
#define ADDR_LEN 28 /* sizeof(struct sockaddr_in6), as the tracepoints copy */
#define STATE_UNKNOWN 0xff

/* The kind of every record, whichever topic header defines it: one space,
 * so that a record's kind alone says which record it is. The numbers are
 * the wire format (recordings keep them): never reuse one; a new topic
 * takes numbers of its own. */
enum event_kind {
	/* resources.h: struct res_event */
	EV_RES_ADD = 1,       /* rdma_restrack_add returned: the object is tracked */
	EV_RES_DEL = 2,       /* rdma_restrack_del: MR, CM_ID, CTX, COUNTER freed */
	EV_RES_BEGIN_DEL = 3, /* PD/CQ/QP/SRQ destruction started */
	EV_RES_COMMIT_DEL = 4,/* ... and done: the object is gone */
	EV_RES_ABORT_DEL = 5, /* ... and failed: the object stays */
	EV_QP_STATE = 6,      /* a QP changed state */
	/* cm.h: struct res_event */
	EV_CM_ID_CREATE = 7,  /* an rdma_cm ID was created (not yet tracked) */
	EV_CM = 8,            /* an rdma_cma tracepoint; cm_tp says which */
	/* devices.h: struct dev_event */
	EV_DEV_REGISTER = 9,
	EV_DEV_UNREGISTER = 10,
	EV_DEV_UNREGISTERED = 11,
	/* ports.h: struct port_busy_event */
	EV_PORT_BUSY = 12,    /* a bind, rdma_listen or rdma_connect got EADDRINUSE */
	/* smc.h: struct smc_fallback_event */
	EV_SMC_FALLBACK = 13, /* smc:smc_switch_to_fallback: an SMC socket fell back to TCP */
	/* smcr.h: struct smc_link_event */
	EV_SMC_LINK_CREATE = 14,  /* an SMC-R link's QP was created (smc_ib_create_queue_pair returned) */
	EV_SMC_LINK_DOWN = 15,    /* smc:smcr_link_down: an SMC-R link went down */
	EV_SMC_LINK_DESTROY = 16, /* an SMC-R link's QP is destroyed (smc_ib_destroy_queue_pair) */
	/* bench.h: struct span_event, struct off_cpu_event */
	EV_SPAN = 20,    /* bench-trace: a kernel function returned; dur is its time */
	EV_OFF_CPU = 21, /* bench-trace: a followed thread ran again after an off-CPU spell */
	/* failures.h */
	EV_ASYNC = 30,    /* an IB async event: struct async_event */
	EV_QP_ERROR = 31, /* a QP's error: struct qp_error_event */
	/* qpattr.h: struct qp_attr_event */
	EV_QP_ATTR = 40, /* a modify set a QP's timeouts, retries, path MTU or address */
	/* creates.h */
	EV_CALL_FAIL = 50,  /* a create or an rdma_cm step failed in the call: struct call_fail_event */
	EV_GID_CHANGE = 51, /* a GID table entry was added or deleted: struct gid_event */
};

/* Flags in event_hdr.flags. */
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
	F_HAS_PEER = 1 << 20,  /* failures.h: peer is set, the remote GID and QPN the QP was connected to */
	F_HAS_CAPS = 1 << 21,  /* creates.h: caps are set, the device's limits */
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

/* Keep the types in the object so bpf2go -type generates them for Go: the
 * header and the enums that give its fields their meaning. Each topic
 * header keeps its own records and enums the same way. */
const struct event_hdr *unused_event_hdr __attribute__((unused));
const enum event_kind *unused_event_kind __attribute__((unused));
const enum event_flag *unused_event_flag __attribute__((unused));

/* ==== The ring buffer, and how a record gets into it ==== */

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

/* Side maps (closing, entry_args, modify_args, stash) carry a value from a
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

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h, as PF_EXITING */
#define NO_UID 0xffffffff

/* Who runs a hook, as the ring's share and the record's header need it. */
struct actor {
	__u64 cgroup; /* its cgroup v2 id */
	__u32 uid;    /* NO_UID for a kernel thread (a kworker running rdma_cm's events) */
	__u32 task_flags;
};

static __always_inline void get_actor(struct actor *a)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	a->cgroup = bpf_get_current_cgroup_id();
	a->task_flags = BPF_CORE_READ(task, flags);
	a->uid = (a->task_flags & PF_KTHREAD) ? NO_UID : (__u32)bpf_get_current_uid_gid();
}

/* Fill a reserved record's header: the actor and the context. */
static __always_inline void fill_hdr(struct event_hdr *h, __u32 kind, const struct actor *a)
{
	h->ts = bpf_ktime_get_ns();
	h->kind = kind;
	__u64 id = bpf_get_current_pid_tgid();
	h->actor_pid = id >> 32;
	h->actor_tid = (__u32)id;
	h->cgroup = a->cgroup;
	bpf_get_current_comm(h->actor_comm, sizeof(h->actor_comm));
	if (a->task_flags & PF_EXITING)
		h->flags |= F_EXITING;
	__u32 tid = h->actor_tid;
	if (bpf_map_lookup_elem(&closing, &tid))
		h->flags |= F_CLOSING;
}

/* ---- The ring's share: the busiest owner leaves a quarter to the others ----
 * One user's churn must not cost another user's lifecycle events their
 * place. The owner of a record here is who runs the hook, by user and
 * cgroup (a user cannot change its uid, and forking stays in its cgroup;
 * kernel threads are one owner). A vote finds the busiest (Boyer-Moore's
 * majority vote: its own records add one, others' take one away, and a
 * lead of SHARE_VOTES_MAX is kept at most, so a newcomer takes its place
 * within that many records more than its own). Once the ring is three
 * quarters full, the busiest owner's records are refused, counted in shed:
 * the last quarter is for everyone else. Port-busy events stop at a
 * quarter already (ports.h). The vote is one entry for all CPUs, updated
 * without a lock: a race misplaces a vote, nothing more. */
#define SHARE_VOTES_MAX 1024
#define SHARE_VOTES_MIN 64 /* a lead below this: no one is the busiest */

struct share_vote {
	__u64 cgroup;
	__u32 uid;
	__u32 pad;
	__s64 votes;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct share_vote);
} busiest SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} shed SEC(".maps");

/* Whether a's record may go in the ring: it votes, and is refused if it is
 * the busiest owner and the ring is three quarters full. */
static __always_inline int share_admit(const struct actor *a)
{
	__u32 zero = 0;
	struct share_vote *v = bpf_map_lookup_elem(&busiest, &zero);
	if (!v)
		return 1;
	int mine = v->cgroup == a->cgroup && v->uid == a->uid;
	if (mine) {
		if (v->votes < SHARE_VOTES_MAX)
			v->votes++;
	} else if (v->votes > 0) {
		v->votes--;
	} else {
		v->cgroup = a->cgroup;
		v->uid = a->uid;
		v->votes = 1;
	}
	if (!mine || v->votes < SHARE_VOTES_MIN)
		return 1;
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);
	return avail <= size - size / 4;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} aux_shed SEC(".maps");

/* Whether a record of kind is refused to keep room for the lifecycle
 * events: a QP's settings (qp-attr, a quarter of a connection burst's
 * records and the dearest to write out) and bench-trace's spans are shed
 * once the ring is half full, counted in aux_shed. kind is a constant at
 * every reserve: the look at the ring is compiled in only for those. */
static __always_inline int aux_shed_first(__u32 kind)
{
	if (kind != EV_QP_ATTR && kind != EV_SPAN && kind != EV_OFF_CPU)
		return 0;
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);
	return avail > size / 2;
}

/* Reserve a record of type (one of the *_event structs) for actor, zeroed,
 * its header filled, counting a full ring in lost (drops, or busy_drops for
 * the port-busy events), a refusal by the share in shed and an auxiliary
 * record refused at half in aux_shed. reserve_counted and reserve are it
 * for the task that runs the hook. Macros: the ring takes only a constant
 * size. */
#define reserve_as(type, kind, lost, actor)                                      \
	({                                                                        \
		type *__e = 0;                                                    \
		if (aux_shed_first(kind)) {                                       \
			count(&aux_shed);                                         \
		} else if (!share_admit(actor)) {                                 \
			count(&shed);                                             \
		} else if ((__e = bpf_ringbuf_reserve(&events, sizeof(type), 0))) { \
			__builtin_memset(__e, 0, sizeof(type));                   \
			fill_hdr(&__e->h, kind, actor);                           \
		} else {                                                          \
			count(lost);                                              \
		}                                                                 \
		__e;                                                              \
	})

#define reserve_counted(type, kind, lost)                                         \
	({                                                                        \
		struct actor __a;                                                 \
		get_actor(&__a);                                                  \
		reserve_as(type, kind, lost, &__a);                               \
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

/* The stash: a call's arguments (up to three) carried from a kprobe at its
 * entry to the kretprobe at its return, where fexit is not to be had. Keyed
 * by thread and function: a call may run inside another on the same thread
 * (siw's bind inside rdma_listen). A save that fails and a return that finds
 * nothing (evicted, a missed kprobe) are counted in side_drops by
 * save_entry and take_entry. */
enum stash_fn {
	STASH_CALLS = 0,     /* CALL_HOOK's ids (creates.h): 1, 2, ... */
	STASH_PORTS = 0x100, /* PORT_HOOK's: STASH_PORTS + enum port_op (ports.h) */
};

struct stash_args {
	__u64 a, b, c;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 20480);
	__type(key, __u64); /* function << 32 | thread id */
	__type(value, struct stash_args);
} stash SEC(".maps");

static __always_inline __u64 stash_key(__u32 fn)
{
	return (__u64)fn << 32 | (__u32)bpf_get_current_pid_tgid();
}

static __always_inline int stash_save(__u32 fn, __u64 a, __u64 b, __u64 c)
{
	struct stash_args v = {.a = a, .b = b, .c = c};
	save_entry(&stash, stash_key(fn), &v);
	return 0;
}

/* stash_take copies fn's saved arguments to out and forgets them; 0 when
 * there were none. */
static __always_inline int stash_take(__u32 fn, struct stash_args *out)
{
	__u64 key = stash_key(fn);
	struct stash_args *v = take_entry(&stash, key);
	if (!v)
		return 0;
	*out = *v;
	bpf_map_delete_elem(&stash, &key);
	return 1;
}

static __always_inline int close_exit(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&closing, &tid);
	return 0;
}

/* ==== What a record says of its device, owner, QP and rdma_cm ID ==== */

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
	r->res_type = RDMA_RESTRACK_CM_ID; /* also before it is tracked */
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

/* ==== Hooks whose two variants share one body ====
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

#endif /* RDMATRACE_COMMON_H */
