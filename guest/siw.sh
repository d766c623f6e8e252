#!/usr/bin/env bash
# siw.sh 5.10|6.1|6.12|sid OUTDIR — build soft-iWARP (siw) for that kernel:
# Debian builds its kernels without CONFIG_RDMA_SIW, so the module comes
# from drivers/infiniband/sw/siw of the same version's linux-source package
# (apt-get download, only that directory unpacked, cached with the kernel)
# built out of tree against its linux-headers. Writes OUTDIR/KVER/siw.ko,
# or OUTDIR/KVER/unbuildable-siw saying why (exit 3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
series=${1:-6.1}
out=${2:-out/kmod}
cache=${RDMATRACE_GUEST_CACHE:-$here/cache}
# shellcheck source=lib/headers.sh
. "$here/lib/headers.sh"
module_build_env "$series"

src=$kdir/siw-src
exec 8>"$kdir/.siw.lock"
flock 8
if [ ! -f "$src/ready" ]; then
	rm -rf "$src" && mkdir -p "$src/debs"
	# The image's version names the source: linux-image-6.1.0-56-amd64
	# 6.1.192-2 comes from linux-source-6.1 6.1.192-2. The same version when
	# the archive still has it, else the newest of that series.
	version=$(basename "$kdir" | grep -oE '[0-9]+\.[0-9]+\.[0-9]+-[^-]+$')
	pkg=linux-source-$(echo "$kver" | cut -d. -f1,2)
	want=$pkg=$version
	apt-cache "${apt_opts[@]}" show "$want" >/dev/null 2>&1 || want=$pkg
	echo "guest: fetching $want for siw" >&2
	(cd "$src/debs" && apt-get "${apt_opts[@]}" download -qq "$want" >&2)
	tarball=./usr/src/$pkg.tar.xz
	dpkg-deb --fsys-tarfile "$src"/debs/*.deb | tar -xO "$tarball" | xz -dc -T2 |
		tar -x -C "$src" --strip-components=5 --wildcards "$pkg/drivers/infiniband/sw/siw/*"
	rm -rf "$src/debs"
	[ -f "$src/siw_main.c" ] || { echo "guest: $want has no drivers/infiniband/sw/siw" >&2; exit 1; }
	touch "$src/ready"
fi
flock -u 8

build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cp "$src"/*.[ch] "$src/Makefile" "$build/"
mkdir -p "$out/$kver"
rm -f "$out/$kver/siw.ko" "$out/$kver/unbuildable-siw"
# CONFIG_RDMA_SIW=m is what the kernel's config does not say; rdmatrace
# hooks iw_cm and rdma_cm, not siw, so siw needs no BTF either.
kbuild siw "$build" "$out/$kver/unbuildable-siw" CONFIG_RDMA_SIW=m
cp "$build/siw.ko" "$out/$kver/"
echo "$out/$kver/siw.ko"
