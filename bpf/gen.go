// Package bpf holds rdmatrace's CO-RE eBPF programs (rdmatrace.bpf.c, one
// object whose topics are the headers it includes: common.h, resources.h,
// cm.h, devices.h, ports.h, smc.h, smcr.h, failures.h, qpattr.h, bench.h),
// the kernel types they are compiled against — vmlinux_x86.h and
// vmlinux_arm64.h, Debian 6.1's kernel BTF together with the RDMA module
// types, made by gen-vmlinux.sh — and the committed bpf2go output for amd64
// and arm64, so that building rdmatrace needs no clang. bpf2go also
// generates the records (a common header, then one struct per kind) and the C side's enums (-type), which the decoder uses.
package bpf

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target amd64,arm64 -type event_hdr -type res_event -type dev_event -type port_busy_event -type smc_link_event -type smc_fallback_event -type span_event -type off_cpu_event -type event_kind -type event_flag -type cm_tp -type span_func -type port_op -type qp_attr_event -type qp_attr_flag -type async_event -type qp_error_event -type qp_error_cause -type call_fail_event -type gid_event -type call_op -type call_limit -type asked_flag Rdmatrace rdmatrace.bpf.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target amd64,arm64 -type callsite_hdr -type callsite_entry -type callsite_vma -type callsite_kind Callsite callsite.bpf.c
