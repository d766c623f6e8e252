#!/usr/bin/env bash
# kmod.sh 5.10|6.1|6.12|sid OUTDIR — build the leak-test kernel module (guest/kmod)
# against Debian's headers for that kernel: fetches linux-headers, its
# -common part and linux-kbuild with apt-get download into the harness cache
# (unpacked, not installed), and writes OUTDIR/KVER/rdmatrace_leak.ko.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
series=${1:-6.1}
out=${2:-out/kmod}
kdir=$("$here/kernel.sh" "$series")
cache=${RDMATRACE_GUEST_CACHE:-$here/cache}
# shellcheck source=lib/apt.sh
. "$here/lib/apt.sh"
kernel_series "$series"
kver=$(cat "$kdir/kver")
hdir=$kdir/headers
exec 9>"$kdir/.headers.lock"
flock 9
if [ ! -f "$hdir/ready" ]; then
	rm -rf "$hdir" && mkdir -p "$hdir/debs"
	pkgs=("linux-headers-$kver")
	# Its -common part and linux-kbuild (compiler packages are the host's gcc).
	while read -r dep; do pkgs+=("$dep"); done < <(apt-cache "${apt_opts[@]}" depends "linux-headers-$kver" |
		awk '/Depends: linux-(headers|kbuild)-/ { print $2 }')
	echo "guest: fetching ${pkgs[*]}" >&2
	(cd "$hdir/debs" && apt-get "${apt_opts[@]}" download -qq "${pkgs[@]}" >&2)
	for d in "$hdir"/debs/*.deb; do dpkg-deb -x "$d" "$hdir/root"; done
	# The headers' Makefile names the -common part (and, on 7.x, its own
	# directory) by absolute path.
	sed -i "s|include /usr/src/|include $hdir/root/usr/src/|; s|=/usr/src/|=$hdir/root/usr/src/|" "$hdir/root/usr/src/linux-headers-$kver/Makefile"
	rm -rf "$hdir/debs"
	touch "$hdir/ready"
fi
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cp "$here"/kmod/rdmatrace_leak.c "$here"/kmod/Kbuild "$build/"
# The kernel's own compiler (gcc-10 for 5.10, a newer gcc than the host's
# for sid) when the host has it, else the host's gcc: a module this small
# builds with either.
cc=$(sed -n 's/^CC = .*)\(gcc-[0-9]*\)$/\1/p' "$hdir/root/usr/src/linux-headers-$kver/.kernelvariables" 2>/dev/null)
ccopt=()
command -v "${cc:-gcc}" >/dev/null || ccopt=(CC=gcc)
mkdir -p "$out/$kver"
rm -f "$out/$kver/rdmatrace_leak.ko" "$out/$kver/unbuildable"
# No BTF for the module (it would need pahole, and no test reads it).
if ! make -s -C "$hdir/root/usr/src/linux-headers-$kver" M="$build" "${ccopt[@]}" CONFIG_DEBUG_INFO_BTF_MODULES= modules \
	>"$build/log" 2>&1; then
	grep -v 'Skipping BTF generation' "$build/log" >&2
	# Say why for the test that needs it (sid's kbuild tools are linked
	# against a newer glibc than the host's, and its flags need a newer gcc).
	why=$(grep -m1 -oE "version \`GLIBC_[0-9.]+' not found|unrecognized command-line option [^;]*" "$build/log" || echo "make failed")
	echo "cannot build a module against linux-headers-$kver (built with ${cc:-gcc}) with the host's gcc $(gcc -dumpversion): $why" | tee "$out/$kver/unbuildable" >&2
	exit 3
fi
grep -v 'Skipping BTF generation' "$build/log" >&2 || true
cp "$build/rdmatrace_leak.ko" "$out/$kver/"
echo "$out/$kver/rdmatrace_leak.ko"
