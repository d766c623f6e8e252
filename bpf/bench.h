/* SPDX-License-Identifier: GPL-2.0 */
/* ==== bench-trace: kernel-function spans and off-CPU spells ====
 * A span is one call of a kernel function that does the work behind a verb
 * or an rdma_cm step, timed from fentry to fexit (kprobe to kretprobe). An
 * off-CPU spell is the time a followed thread spent switched out, reported
 * when it runs again, with who ran first in its place. Followed threads are
 * those of the processes (tgids) user space puts in `follow`: the scheduler
 * hooks fire for every switch on the machine and must stay cheap, and
 * ucma_get_event's time is mostly waiting, only worth it for the benchmark. */
#ifndef RDMATRACE_BENCH_H
#define RDMATRACE_BENCH_H

#include "common.h"

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

const struct span_event *unused_span_event __attribute__((unused));
const struct off_cpu_event *unused_off_cpu_event __attribute__((unused));

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

#endif /* RDMATRACE_BENCH_H */
