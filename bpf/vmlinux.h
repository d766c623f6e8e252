/* SPDX-License-Identifier: GPL-2.0 */
/* The kernel's types for the architecture being compiled for (bpf2go
 * defines __TARGET_ARCH_<arch> per -target): dumps of Debian 6.1's BTF with
 * the rdma_cm module's, made by gen-vmlinux.sh. CO-RE relocates every field
 * access to the running kernel; what the architecture changes is struct
 * pt_regs, which the kprobe fallbacks read their arguments from. */
#if defined(__TARGET_ARCH_x86)
#include "vmlinux_x86.h"
#elif defined(__TARGET_ARCH_arm64)
#include "vmlinux_arm64.h"
#else
#error "rdmatrace's BPF side is built for x86 and arm64 (bpf2go -target amd64,arm64)"
#endif
