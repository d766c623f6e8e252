//go:build ignore

// SPDX-License-Identifier: GPL-2.0
// rdmatrace's kernel side: CO-RE programs on ib_core's resource tracking,
// the rdma_cma tracepoints, QP modification, rdma_cm ID creation, device
// (un)registration, port conflicts, SMC, asynchronous events and QP errors,
// and rdmabench's spans. Every hook exists twice where the kernel allows:
// the BTF variant (fentry/fexit, tp_btf), which is cheapest, and a fallback
// (kprobe/kretprobe, raw_tp) for kernels where the first cannot attach.
// User space (tracer/hooks.go) picks per hook.
//
// One object, one topic a header. common.h holds what every topic shares:
// the kind space and the record header, the ring buffer with reserve and
// submit, the kernel filters and the helpers. Each topic header includes
// it (and the topics it builds on), defines its records, maps and
// programs, and keeps its records' types for bpf2go. A new topic is a new
// header, included below, with kind numbers of its own in common.h.
#include "common.h"
#include "resources.h" /* restrack lifecycle, QP state (and qpattr.h: QP settings) */
#include "cm.h"        /* rdma_cm IDs and the rdma_cma tracepoints */
#include "devices.h"   /* device (un)registration, the iWARP count */
#include "creates.h"   /* calls that created nothing; the GID table's changes */
#include "ports.h"     /* EADDRINUSE where RDMA meets TCP */
#include "smc.h"       /* SMC sockets that fall back to TCP */
#include "smcr.h"      /* SMC-R links and their QPs */
#include "failures.h"  /* asynchronous events and QP errors */
#include "bench.h"     /* rdmabench: kernel-function spans and off-CPU spells */

char LICENSE[] SEC("license") = "GPL";
