#!/usr/bin/env bash
# Regenerates bpf/vmlinux.h from the BTF of Debian's 6.1 kernel together with
# the rdma_cm module's types (which carry the ib_core structs rdmatrace
# reads), and the same BTF, compressed, in testdata/btf/6.1 for the host
# verifier test. Boots the guest to read /sys/kernel/btf.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
command -v bpftool >/dev/null || { echo "bpf: installing bpftool" >&2; apt-get install -y -qq --no-install-recommends bpftool >&2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
guest/run -k 6.1 -t 300 -o "$out" -c 'modprobe -a ib_core ib_uverbs rdma_cm rdma_ucm && cp /sys/kernel/btf/vmlinux /sys/kernel/btf/rdma_cm "$GUEST_OUT/"' >&2
bpftool -B "$out/vmlinux" btf dump file "$out/rdma_cm" format c >bpf/vmlinux.h
mkdir -p testdata/btf/6.1
gzip -9 -n -c "$out/vmlinux" >testdata/btf/6.1/vmlinux.btf.gz
gzip -9 -n -c "$out/rdma_cm" >testdata/btf/6.1/rdma_cm.btf.gz
