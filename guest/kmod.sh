#!/usr/bin/env bash
# kmod.sh 5.10|6.1|6.12|sid OUTDIR — build the leak-test kernel module (guest/kmod)
# against Debian's headers for that kernel: fetches linux-headers, its
# -common part and linux-kbuild with apt-get download into the harness cache
# (unpacked, not installed), and writes OUTDIR/KVER/rdmatrace_leak.ko.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
series=${1:-6.1}
out=${2:-out/kmod}
cache=${RDMATRACE_GUEST_CACHE:-$here/cache}
# shellcheck source=lib/headers.sh
. "$here/lib/headers.sh"
module_build_env "$series"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cp "$here"/kmod/rdmatrace_leak.c "$here"/kmod/Kbuild "$build/"
mkdir -p "$out/$kver"
rm -f "$out/$kver/rdmatrace_leak.ko" "$out/$kver/unbuildable"
kbuild "a module" "$build" "$out/$kver/unbuildable"
cp "$build/rdmatrace_leak.ko" "$out/$kver/"
echo "$out/$kver/rdmatrace_leak.ko"
