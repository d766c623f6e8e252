/* SPDX-License-Identifier: GPL-2.0 */
/* ==== SMC: a socket that falls back to TCP ====
 * smc:smc_switch_to_fallback(smc, fallback_rsn) has the SMC socket; its
 * CLC socket (the TCP connection) gives the 4-tuple, and the SMC socket's
 * inode lets user space name the process that holds it (the server side
 * falls back in a kworker). struct smc_sock is the smc module's, found by
 * name in its BTF when the program loads; its struct sock comes first. */
#ifndef RDMATRACE_SMC_H
#define RDMATRACE_SMC_H

#include "common.h"

/* EV_SMC_FALLBACK: an SMC socket fell back to TCP. */
struct smc_fallback_event {
	struct event_hdr h;
	struct ev_addr addr; /* the TCP connection's */
	__u64 inode;  /* the SMC socket's */
	__s32 reason; /* SMC_CLC_DECL_* */
};

const struct smc_fallback_event *unused_smc_fallback_event __attribute__((unused));

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

#endif /* RDMATRACE_SMC_H */
