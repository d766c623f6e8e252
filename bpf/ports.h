/* SPDX-License-Identifier: GPL-2.0 */
/* ==== Port conflicts: EADDRINUSE where RDMA meets TCP ====
 * iWARP's listens and connections are host TCP sockets, so rdma_listen and
 * rdma_connect on an iWARP device fail with EADDRINUSE when a process's TCP
 * socket holds the port, and a process's bind fails when iWARP holds it.
 * Only that error is reported: these functions are called often, fail
 * rarely. User space names the holder from a dump made when the event
 * arrives. */
#ifndef RDMATRACE_PORTS_H
#define RDMATRACE_PORTS_H

#include "common.h"
#include "cm.h"
#include "devices.h"

/* What got EADDRINUSE, in EV_PORT_BUSY's func. */
enum port_op {
	PORT_RDMA_LISTEN = 1,
	PORT_RDMA_CONNECT,
	PORT_INET_BIND,
	PORT_INET6_BIND,
};

/* EV_PORT_BUSY: a bind, rdma_listen or rdma_connect got EADDRINUSE. */
struct port_busy_event {
	struct event_hdr h;
	struct ev_dev dev;
	struct ev_res res; /* the rdma_cm ID (rdma_listen, rdma_connect) */
	struct ev_addr addr;
	__u32 op;         /* enum port_op */
	__u32 suppressed; /* port-busy events of the same process the rate limit held back before this one */
	__s32 status;
};

const struct port_busy_event *unused_port_busy_event __attribute__((unused));
const enum port_op *unused_port_op __attribute__((unused));

#define EADDRINUSE 98
#define IPPROTO_TCP_NUM 6

/* Port-busy events are auxiliary: any local user can make failing binds by
 * the hundred thousand a second, on ports and from processes of its
 * choosing, and they must never cost a lifecycle event its place, nor the
 * reader its time (user space names each one's holders). So
 * (1) a failed bind is reported only while an iWARP device exists
 *     (iwarp_present);
 * (2) each event takes a token from three buckets: its process's (one a
 *     second), its user's in its cgroup (four a second, eight at once) and
 *     everyone's (sixteen a second, 32 at once). None is keyed by what a
 *     user may cycle through: ports are no key at all, new processes get
 *     buckets of their own but share their user's, and however many users
 *     or cgroups there are, they share everyone's. One held back, by any
 *     bucket, is counted in busy_suppressed and in its process's bucket,
 *     whose next event shown carries the number in suppressed;
 * (3) a port-busy event is queued only while the ring is less than a
 *     quarter full, so that three quarters are always left to the lifecycle
 *     events; what that refuses, or a full ring, is counted in busy_drops,
 *     never in drops. */
#define BUSY_PROC_NS 1000000000ULL /* a process: one a second */
#define BUSY_PROC_BURST 1
#define BUSY_GROUP_NS 250000000ULL /* a user in a cgroup: four a second */
#define BUSY_GROUP_BURST 8
#define BUSY_ALL_NS 62500000ULL /* everyone: sixteen a second */
#define BUSY_ALL_BURST 32

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

/* A token bucket as GCRA keeps it: one token comes every interval, at most
 * burst wait, and a token is there while tat - now <= (burst - 1) *
 * interval. Updated without a lock: CPUs racing may both take the last
 * token, no more. */
struct busy_bucket {
	__u64 tat;  /* bpf_ktime_get_ns: the theoretical arrival time */
	__u64 held; /* a process's: held back since its last one shown */
};

struct busy_group {
	__u64 cgroup;
	__u32 uid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct busy_bucket);
} busy_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct busy_group);
	__type(value, struct busy_bucket);
} busy_groups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct busy_bucket);
} busy_all SEC(".maps");

static __always_inline int bucket_take(struct busy_bucket *b, __u64 now, __u64 interval, __u64 burst)
{
	__u64 tat = b->tat > now ? b->tat : now;
	if (tat - now > (burst - 1) * interval)
		return 0;
	b->tat = tat + interval;
	return 1;
}

/* The bucket of key in an LRU map, made full if there is none. */
static __always_inline struct busy_bucket *bucket_of(void *map, const void *key)
{
	struct busy_bucket *b = bpf_map_lookup_elem(map, key);
	if (b)
		return b;
	struct busy_bucket fresh = {};
	bpf_map_update_elem(map, key, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* The rate limit, for process tgid run by a at now: -1 to hold this one
 * back (counted), else the number held back before it, to carry. The count
 * is taken by subtracting what was read, so that increments racing with the
 * read stay for the next one. A bucket that cannot be had (the maps
 * contended) holds the event back: counted, not shown. */
static __always_inline long busy_admit(__u32 tgid, const struct actor *a, __u64 now)
{
	struct busy_group g = {.cgroup = a->cgroup, .uid = a->uid};
	__u32 zero = 0;
	struct busy_bucket *p = bucket_of(&busy_procs, &tgid);
	struct busy_bucket *u = bucket_of(&busy_groups, &g);
	struct busy_bucket *all = bpf_map_lookup_elem(&busy_all, &zero);
	if (p && u && all && bucket_take(p, now, BUSY_PROC_NS, BUSY_PROC_BURST) &&
	    bucket_take(u, now, BUSY_GROUP_NS, BUSY_GROUP_BURST) && bucket_take(all, now, BUSY_ALL_NS, BUSY_ALL_BURST)) {
		__u64 held = p->held;
		__sync_fetch_and_add(&p->held, -held);
		return held > 0xffffffff ? 0xffffffff : held;
	}
	if (p)
		__sync_fetch_and_add(&p->held, 1);
	count(&busy_suppressed);
	return -1;
}

/* A record for a port-busy event, or 0: held back by the rate limit, or
 * refused as the ring is a quarter full (counted in busy_drops). A refused
 * event gives its held-back count to the next. */
static __always_inline struct port_busy_event *reserve_busy(__u32 op)
{
	struct actor a;
	get_actor(&a);
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	long held = busy_admit(tgid, &a, bpf_ktime_get_ns());
	if (held < 0)
		return 0;
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);
	struct port_busy_event *e = 0;
	if (avail + sizeof(struct port_busy_event) <= size / 4)
		e = reserve_as(struct port_busy_event, EV_PORT_BUSY, &busy_drops, &a);
	else
		count(&busy_drops);
	if (!e) {
		struct busy_bucket *p = bpf_map_lookup_elem(&busy_procs, &tgid);
		if (p && held)
			__sync_fetch_and_add(&p->held, held);
		return 0;
	}
	e->suppressed = held;
	return e;
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
	struct port_busy_event *e = reserve_busy(op);
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
	struct port_busy_event *e = reserve_busy(op);
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

/* What a port hook reports, from fn's arguments: an rdma_cm ID's (a) or a
 * socket's (a), its address (b) and the address's length (len). op is a
 * constant in each program: the compiler keeps one branch. */
static __always_inline int emit_port(__u32 op, __u64 a, __u64 b, __u32 len, long ret)
{
	if (op == PORT_RDMA_LISTEN || op == PORT_RDMA_CONNECT)
		return emit_cm_busy(op, (struct rdma_cm_id *)a, ret);
	return emit_bind_busy(op, (struct sock *)a, (struct sockaddr *)b, len, ret);
}

/* PORT_HOOK(fn, name, op, a, b, len, params...): fexit_<name> on fn, and
 * its fallback, kprobe_<name> and kretprobe_<name>, which carry a, b and
 * len (expressions of fn's parameters) from the entry to the return.
 * params are fn's parameters, all of them: fexit finds the return value
 * after the last. */
#define PORT_HOOK(fn, name, op, a_, b_, len_, ...)                              \
	SEC("fexit/" #fn)                                                      \
	int BPF_PROG(fexit_##name, __VA_ARGS__, int ret)                       \
	{                                                                      \
		return emit_port(op, (__u64)(a_), (__u64)(b_), (len_), ret);  \
	}                                                                      \
	SEC("kprobe/" #fn)                                                     \
	int BPF_KPROBE(kprobe_##name, __VA_ARGS__)                             \
	{                                                                      \
		return stash_save(STASH_PORTS + op, (__u64)(a_), (__u64)(b_), (len_)); \
	}                                                                      \
	SEC("kretprobe/" #fn)                                                  \
	int BPF_KRETPROBE(kretprobe_##name, int ret)                           \
	{                                                                      \
		struct stash_args s;                                           \
		if (!stash_take(STASH_PORTS + op, &s))                         \
			return 0;                                              \
		return emit_port(op, s.a, s.b, (__u32)s.c, ret);               \
	}

PORT_HOOK(rdma_listen, rdma_listen, PORT_RDMA_LISTEN, id, 0, 0, struct rdma_cm_id *id, int backlog)
/* rdma_connect_locked (5.11+: ucma calls it, rdma_connect wraps it); user
 * space attaches the same programs to rdma_connect on older kernels. */
PORT_HOOK(rdma_connect_locked, rdma_connect, PORT_RDMA_CONNECT, id, 0, 0, struct rdma_cm_id *id, void *param)
PORT_HOOK(__inet_bind, inet_bind, PORT_INET_BIND, sk, uaddr, addr_len,
	  struct sock *sk, struct sockaddr *uaddr, int addr_len, __u32 flags)
PORT_HOOK(__inet6_bind, inet6_bind, PORT_INET6_BIND, sk, uaddr, addr_len,
	  struct sock *sk, struct sockaddr *uaddr, int addr_len, __u32 flags)

/* PORT_HOOK's fallback halves as raw_tp programs that BPF_PROG_TEST_RUN
 * can run (tracer/sidemap_test.go): each run is a call of its own function
 * fn on this thread; the take answers whether the save was found. */
SEC("raw_tp")
int BPF_PROG(selftest_stash_save, __u64 fn)
{
	return stash_save(STASH_PORTS + (__u32)fn, fn, fn, 0);
}

SEC("raw_tp")
int BPF_PROG(selftest_stash_take, __u64 fn)
{
	struct stash_args s;
	return stash_take(STASH_PORTS + (__u32)fn, &s);
}

/* The port-busy limits and the ring's share as raw_tp programs that
 * BPF_PROG_TEST_RUN can run on a kernel without RDMA (tracer/busy_test.go):
 * the rate limit's verdict, for the calling process now or for any owner at
 * any time, and a port-busy or a lifecycle record queued (submitted) as the
 * hooks do, the latter for any owner. */
SEC("raw_tp")
int BPF_PROG(selftest_busy_admit, __u64 op, __u64 port)
{
	struct actor a;
	get_actor(&a);
	return busy_admit(bpf_get_current_pid_tgid() >> 32, &a, bpf_ktime_get_ns());
}

SEC("raw_tp")
int BPF_PROG(selftest_busy_admit_as, __u64 tgid, __u64 uid, __u64 cgroup, __u64 now)
{
	struct actor a = {.cgroup = cgroup, .uid = uid};
	return busy_admit(tgid, &a, now);
}

SEC("raw_tp")
int BPF_PROG(selftest_reserve_busy, __u64 op, __u64 port)
{
	struct port_busy_event *e = reserve_busy(op);
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

SEC("raw_tp")
int BPF_PROG(selftest_reserve_as, __u64 uid, __u64 cgroup)
{
	struct actor a = {.cgroup = cgroup, .uid = uid};
	struct res_event *e = reserve_as(struct res_event, EV_RES_ADD, &drops, &a);
	if (!e)
		return 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 1;
}

#endif /* RDMATRACE_PORTS_H */
