//go:build ignore

// SPDX-License-Identifier: GPL-2.0
// Call sites of user-space creates: a uprobe at the entry of a verbs or
// rdma_cm library function (ibv_create_qp, rdma_create_id, ...) records
// the caller's return address and the user stack above it; a uretprobe
// at its return closes the window. User space joins a create the main
// object traced (rdma_restrack_add, rdma_cm ID creation) to the window
// its thread was in. An object of its own, with its own small ring, so
// that the main object stays as it is and a plain trace loads no uprobe.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define CALLSITE_FRAMES 32
#define CALLSITE_VMAS 8     /* the call site and the first frames above it */
#define CALLSITE_NAME_LEN 64

enum callsite_kind {
	CALLSITE_ENTER = 1, /* struct callsite_entry */
	CALLSITE_EXIT = 2,  /* struct callsite_hdr */
};

struct callsite_hdr {
	__u64 ts;     /* bpf_ktime_get_ns: the main object's clock */
	__u64 sp;     /* the stack pointer: at entry (x86: it points at the return address), or after the return */
	__u64 ip;     /* entry: the probed function's address; exit: where it returned to */
	__u64 cgroup; /* the thread's cgroup v2 id */
	__u32 pid;
	__u32 tid;
	__u32 kind; /* enum callsite_kind */
	__u32 pad;
};

/* Which file maps an address, as the kernel knew it at the call
 * (callsite_enter_vma): what names a frame after the process has exited
 * and /proc/PID/maps with it. ino 0: no file, or not looked up. */
struct callsite_vma {
	__u64 start;  /* vm_start */
	__u64 pgoff;  /* vm_pgoff: the mapping's offset in the file, in pages */
	__u64 ino;    /* the file's inode */
	char name[CALLSITE_NAME_LEN]; /* the file's name (its dentry's: no directory) */
};

struct callsite_entry {
	struct callsite_hdr h;
	__u64 ret;       /* the caller's return address, read at the function's first instruction */
	__s64 stack_len; /* bpf_get_stack's bytes of frames, or its negative errno */
	__u64 frames[CALLSITE_FRAMES];
	/* ret's, then frames[1..]'s (frames[0] is the probed function) */
	struct callsite_vma vmas[CALLSITE_VMAS];
	struct callsite_vma ip_vma; /* the probed function's: which it is */
};

const struct callsite_hdr *unused_callsite_hdr __attribute__((unused));
const struct callsite_entry *unused_callsite_entry __attribute__((unused));
const struct callsite_vma *unused_callsite_vma __attribute__((unused));
const enum callsite_kind *unused_callsite_kind __attribute__((unused));

/* 4 MiB: about 4 000 calls (a record is 1 KiB) that the reader has not
 * taken yet. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} callsites SEC(".maps");

/* Records that found the ring full: counted, never silent. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} callsite_drops SEC(".maps");

/* With cgroup_filter[0] set, only threads in these cgroups are recorded
 * (leaks -- CMD: the program's own cgroup). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u8);
} cgroups SEC(".maps");

static __always_inline int wanted(__u64 cg)
{
	__u32 zero = 0;
	__u32 *on = bpf_map_lookup_elem(&cgroup_filter, &zero);
	if (on && *on && !bpf_map_lookup_elem(&cgroups, &cg))
		return 0;
	return 1;
}

static __always_inline void callsite_drop(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&callsite_drops, &zero);
	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void fill(struct callsite_hdr *h, struct pt_regs *ctx, __u32 kind, __u64 cg)
{
	__u64 id = bpf_get_current_pid_tgid();
	h->ts = bpf_ktime_get_ns();
	h->sp = PT_REGS_SP(ctx);
	h->ip = PT_REGS_IP(ctx);
	h->cgroup = cg;
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->kind = kind;
}

static __always_inline struct callsite_entry *enter(struct pt_regs *ctx)
{
	__u64 cg = bpf_get_current_cgroup_id();
	if (!wanted(cg))
		return 0;
	struct callsite_entry *e = bpf_ringbuf_reserve(&callsites, sizeof(*e), 0);
	if (!e) {
		callsite_drop();
		return 0;
	}
	/* Every field is written: the header here, ret, the frames by
	 * bpf_get_stack (which zeroes what it does not fill), the mappings
	 * by clear_vmas or callsite_enter_vma. (Too large for one memset.) */
	__builtin_memset(&e->h, 0, sizeof(e->h));
	fill(&e->h, ctx, CALLSITE_ENTER, cg);
	e->ret = 0;
#if defined(__TARGET_ARCH_x86)
	/* At the first instruction the return address is on top of the
	 * stack: the caller's frame, which a frame-pointer walk from here
	 * skips (the callee has not pushed its frame yet). */
	bpf_probe_read_user(&e->ret, sizeof(e->ret), (void *)PT_REGS_SP(ctx));
#else
	e->ret = PT_REGS_RET(ctx); /* the link register */
#endif
	e->stack_len = bpf_get_stack(ctx, e->frames, sizeof(e->frames), BPF_F_USER_STACK);
	return e;
}

static __always_inline void clear_vmas(struct callsite_entry *e)
{
	for (int i = 0; i < CALLSITE_VMAS; i++)
		__builtin_memset(&e->vmas[i], 0, sizeof(e->vmas[i]));
	__builtin_memset(&e->ip_vma, 0, sizeof(e->ip_vma));
}

SEC("uprobe")
int callsite_enter(struct pt_regs *ctx)
{
	struct callsite_entry *e = enter(ctx);
	if (e) {
		clear_vmas(e);
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

static long vma_of(struct task_struct *task, struct vm_area_struct *vma, struct callsite_vma *out)
{
	out->start = BPF_CORE_READ(vma, vm_start);
	out->pgoff = BPF_CORE_READ(vma, vm_pgoff);
	struct file *f = BPF_CORE_READ(vma, vm_file);
	if (f) {
		out->ino = BPF_CORE_READ(f, f_inode, i_ino);
		bpf_probe_read_kernel_str(out->name, sizeof(out->name), BPF_CORE_READ(f, f_path.dentry, d_name.name));
	}
	return 0;
}

/* callsite_enter, and which file maps each address (bpf_find_vma, Linux
 * 5.17): user space loads it where the kernel takes it. */
SEC("uprobe")
int callsite_enter_vma(struct pt_regs *ctx)
{
	struct callsite_entry *e = enter(ctx);
	if (!e)
		return 0;
	clear_vmas(e);
	struct task_struct *task = bpf_get_current_task_btf();
	struct callsite_vma v;
	__builtin_memset(&v, 0, sizeof(v));
	if (!bpf_find_vma(task, e->h.ip, vma_of, &v, 0))
		__builtin_memcpy(&e->ip_vma, &v, sizeof(v));
	for (int i = 0; i < CALLSITE_VMAS; i++) {
		__u64 addr = i == 0 ? e->ret : e->frames[i];
		if (!addr || (i > 0 && (__s64)i * 8 >= e->stack_len))
			break;
		__builtin_memset(&v, 0, sizeof(v));
		if (bpf_find_vma(task, addr, vma_of, &v, 0))
			continue;
		__builtin_memcpy(&e->vmas[i], &v, sizeof(v));
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("uretprobe")
int callsite_exit(struct pt_regs *ctx)
{
	__u64 cg = bpf_get_current_cgroup_id();
	if (!wanted(cg))
		return 0;
	struct callsite_hdr *h = bpf_ringbuf_reserve(&callsites, sizeof(*h), 0);
	if (!h) {
		callsite_drop();
		return 0;
	}
	__builtin_memset(h, 0, sizeof(*h));
	fill(h, ctx, CALLSITE_EXIT, cg);
	bpf_ringbuf_submit(h, 0);
	return 0;
}
