#!/usr/bin/env bash
# Regenerates bpf/vmlinux_x86.h and bpf/vmlinux_arm64.h from the BTF of
# Debian's 6.1 kernel together with the rdma_cm module's types (which carry
# the ib_core structs rdmatrace reads), and the same BTF, compressed, in
# testdata/btf/6.1 and 6.1-arm64 for the host verifier tests.
# x86: boots the guest to read /sys/kernel/btf. arm64: Debian's arm64 image
# package (never booted): vmlinux's BTF from the flat Image
# (bpf/internal/imagebtf), the module's from rdma_cm.ko's .BTF section.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
command -v bpftool >/dev/null || { echo "bpf: installing bpftool" >&2; apt-get install -y -qq --no-install-recommends bpftool >&2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

guest/run -k 6.1 -t 300 -o "$out" -c 'modprobe -a ib_core ib_uverbs rdma_cm rdma_ucm smc rdma_rxe && cp /sys/kernel/btf/vmlinux /sys/kernel/btf/rdma_cm /sys/kernel/btf/smc /sys/kernel/btf/rdma_rxe "$GUEST_OUT/"' >&2
bpftool -B "$out/vmlinux" btf dump file "$out/rdma_cm" format c >bpf/vmlinux_x86.h
mkdir -p testdata/btf/6.1
gzip -9 -n -c "$out/vmlinux" >testdata/btf/6.1/vmlinux.btf.gz
gzip -9 -n -c "$out/rdma_cm" >testdata/btf/6.1/rdma_cm.btf.gz
# smc's types are not in the header (the BPF code declares the one field
# it reads); kept for the verifier test's CO-RE relocations.
gzip -9 -n -c "$out/smc" >testdata/btf/6.1/smc.btf.gz
gzip -9 -n -c "$out/rdma_rxe" >testdata/btf/6.1/rdma_rxe.btf.gz # the same: rxe's QP, CQ and address vector

cache=${RDMATRACE_GUEST_CACHE:-$top/guest/cache}
mkdir -p "$cache" "$out/arm64"
# shellcheck source=../guest/lib/apt.sh
. guest/lib/apt.sh
kernel_series 6.1-arm64
pkg=$(apt-cache "${apt_opts[@]}" depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
[ -n "$pkg" ] || { echo "bpf: cannot resolve the arm64 kernel package of $meta" >&2; exit 1; }
echo "bpf: fetching $pkg (arm64) for its BTF" >&2
(cd "$out/arm64" && apt-get "${apt_opts[@]}" -qq download "$pkg")
dpkg-deb -x "$out"/arm64/*.deb "$out/arm64/x"
go run ./bpf/internal/imagebtf "$out"/arm64/x/boot/vmlinuz-* "$out/arm64/vmlinux"
ko=$(find "$out/arm64/x" -name 'rdma_cm.ko*')
case $ko in
*.xz) xz -dc "$ko" >"$out/arm64/rdma_cm.ko" ;;
*.zst) zstd -qdc "$ko" >"$out/arm64/rdma_cm.ko" ;;
*) cp "$ko" "$out/arm64/rdma_cm.ko" ;;
esac
llvm-objcopy --dump-section .BTF="$out/arm64/rdma_cm" "$out/arm64/rdma_cm.ko"
bpftool -B "$out/arm64/vmlinux" btf dump file "$out/arm64/rdma_cm" format c >bpf/vmlinux_arm64.h
mkdir -p testdata/btf/6.1-arm64
gzip -9 -n -c "$out/arm64/vmlinux" >testdata/btf/6.1-arm64/vmlinux.btf.gz
gzip -9 -n -c "$out/arm64/rdma_cm" >testdata/btf/6.1-arm64/rdma_cm.btf.gz
ko=$(find "$out/arm64/x" -name 'smc.ko*')
case $ko in
*.xz) xz -dc "$ko" >"$out/arm64/smc.ko" ;;
*.zst) zstd -qdc "$ko" >"$out/arm64/smc.ko" ;;
*) cp "$ko" "$out/arm64/smc.ko" ;;
esac
llvm-objcopy --dump-section .BTF="$out/arm64/smc" "$out/arm64/smc.ko"
gzip -9 -n -c "$out/arm64/smc" >testdata/btf/6.1-arm64/smc.btf.gz
ko=$(find "$out/arm64/x" -name 'rdma_rxe.ko*')
case $ko in
*.xz) xz -dc "$ko" >"$out/arm64/rdma_rxe.ko" ;;
*.zst) zstd -qdc "$ko" >"$out/arm64/rdma_rxe.ko" ;;
*) cp "$ko" "$out/arm64/rdma_rxe.ko" ;;
esac
llvm-objcopy --dump-section .BTF="$out/arm64/rdma_rxe" "$out/arm64/rdma_rxe.ko"
gzip -9 -n -c "$out/arm64/rdma_rxe" >testdata/btf/6.1-arm64/rdma_rxe.btf.gz
