#!/usr/bin/env bash
# kmod.sh 6.1|6.12 OUTDIR — build the leak-test kernel module (guest/kmod)
# against Debian's headers for that kernel: fetches linux-headers, its
# -common part and linux-kbuild with apt-get download into the harness cache
# (unpacked, not installed), and writes OUTDIR/KVER/rdmatrace_leak.ko.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
series=${1:-6.1}
out=${2:-out/kmod}
kdir=$("$here/kernel.sh" "$series")
kver=$(cat "$kdir/kver")
hdir=$kdir/headers
exec 9>"$kdir/.headers.lock"
flock 9
if [ ! -f "$hdir/ready" ]; then
	rm -rf "$hdir" && mkdir -p "$hdir/debs"
	pkgs=("linux-headers-$kver")
	# Its -common part and linux-kbuild (compiler packages are the host's gcc).
	while read -r dep; do pkgs+=("$dep"); done < <(apt-cache depends "linux-headers-$kver" |
		awk '/Depends: linux-(headers|kbuild)-/ { print $2 }')
	echo "guest: fetching ${pkgs[*]}" >&2
	(cd "$hdir/debs" && apt-get download -qq -o APT::Sandbox::User=root "${pkgs[@]}" >&2)
	for d in "$hdir"/debs/*.deb; do dpkg-deb -x "$d" "$hdir/root"; done
	# The headers' Makefile includes the -common part by absolute path.
	sed -i "s|include /usr/src/|include $hdir/root/usr/src/|" "$hdir/root/usr/src/linux-headers-$kver/Makefile"
	rm -rf "$hdir/debs"
	touch "$hdir/ready"
fi
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cp "$here"/kmod/rdmatrace_leak.c "$here"/kmod/Kbuild "$build/"
# No BTF for the module (it would need pahole, and no test reads it).
make -s -C "$hdir/root/usr/src/linux-headers-$kver" M="$build" CONFIG_DEBUG_INFO_BTF_MODULES= modules >&2 2> >(grep -v 'Skipping BTF generation' >&2)
mkdir -p "$out/$kver"
cp "$build/rdmatrace_leak.ko" "$out/$kver/"
echo "$out/$kver/rdmatrace_leak.ko"
