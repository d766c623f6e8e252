// Package bpf holds rdmatrace's CO-RE eBPF programs (rdmatrace.bpf.c), the
// vmlinux.h they are compiled against — Debian 6.1's kernel BTF together
// with the RDMA module types, made by gen-vmlinux.sh — and the committed
// bpf2go output, so that building rdmatrace needs no clang.
package bpf

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target amd64 -type event Rdmatrace rdmatrace.bpf.c
