#!/usr/bin/env bash
# Checks that `make generate` reproduces the committed BPF output, without
# booting a guest: vmlinux_x86.h and vmlinux_arm64.h from the committed
# BTF (testdata/btf/6.1 and 6.1-arm64, what gen-vmlinux.sh saved with
# them), and the bpf2go output (every bpf/*_bpfel.go and .o, both
# architectures) from rdmatrace.bpf.c by go generate. The tree is
# left as it was; a difference fails with the files named.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
for tool in clang llvm-strip bpftool; do
	command -v "$tool" >/dev/null || { echo "check-generate: $tool is missing (make bpf-tools, guest/setup-host.sh)" >&2; exit 1; }
done
tmp=$(mktemp -d)
saved="$tmp/saved"
mkdir -p "$saved"
generated() { ls bpf/*_bpfel.go bpf/*_bpfel.o bpf/*_bpfeb.go bpf/*_bpfeb.o 2>/dev/null || true; }
for f in $(generated); do cp "$f" "$saved/"; done
restore() {
	rm -f $(generated)
	cp "$saved"/* bpf/ 2>/dev/null || true
	rm -rf "$tmp"
}
trap restore EXIT

fail=0
for arch in x86:6.1 arm64:6.1-arm64; do
	dir=testdata/btf/${arch#*:} h=bpf/vmlinux_${arch%%:*}.h
	gunzip -c "$dir/vmlinux.btf.gz" >"$tmp/vmlinux"
	gunzip -c "$dir/rdma_cm.btf.gz" >"$tmp/rdma_cm"
	bpftool -B "$tmp/vmlinux" btf dump file "$tmp/rdma_cm" format c >"$tmp/vmlinux.h"
	if ! cmp -s "$tmp/vmlinux.h" "$h"; then
		echo "check-generate: $h differs from the dump of $dir (run make generate and commit both)" >&2
		fail=1
	fi
done

rm -f $(generated)
(cd bpf && go generate ./) >&2
new=$(generated | xargs -n1 basename | sort)
old=$(ls "$saved" | sort)
if [ "$new" != "$old" ]; then
	echo "check-generate: go generate made [$(echo $new)], the tree has [$(echo $old)]" >&2
	fail=1
fi
for f in $new; do
	if [ -f "$saved/$f" ] && ! cmp -s "bpf/$f" "$saved/$f"; then
		echo "check-generate: bpf/$f differs from what go generate makes of rdmatrace.bpf.c with $(clang --version | head -1) (run make generate and commit it)" >&2
		fail=1
	fi
done
if [ $fail = 0 ]; then
	echo "check-generate: vmlinux_x86.h, vmlinux_arm64.h and $(echo $new) are what make generate gives" >&2
fi
exit $fail
