#!/usr/bin/env bash
# modbtf.sh 5.10|6.1|6.12|sid OUTDIR — make the BTF of the RDMA modules
# (ib_core, ib_uverbs, rdma_cm, rdma_ucm, iw_cm, ib_cm) for a kernel
# whose modules carry none (5.10: CONFIG_DEBUG_INFO_BTF_MODULES is 5.11+),
# for `rdmatrace trace --btf`. The modules are built again, out of tree,
# from drivers/infiniband/core of the same version's linux-source package
# with the kernel's own config (from its linux-headers) and debug info, so
# their structures have the layout of Debian's binary modules; pahole
# turns their debug info into BTF split on the kernel's, taken from its
# vmlinuz. Writes OUTDIR/KVER/btf/MODULE (raw BTF, as /sys/kernel/btf
# holds it; made once per source version), or OUTDIR/KVER/unbuildable-btf saying why (exit 3). On a
# kernel that has module BTF it does nothing (the tracer reads its own).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
series=${1:-5.10}
out=${2:-out/kmod}
cache=${RDMATRACE_GUEST_CACHE:-$here/cache}
# shellcheck source=lib/headers.sh
. "$here/lib/headers.sh"
module_build_env "$series"
mkdir -p "$out/$kver"
why=$out/$kver/unbuildable-btf
rm -f "$why"
if grep -q '^CONFIG_DEBUG_INFO_BTF_MODULES=y' "$kdir/config"; then
	exit 0 # its modules have BTF
fi
fail() { echo "$*" | tee "$why" >&2; exit 3; }
command -v pahole >/dev/null || fail "no pahole: apt-get install dwarves"
grep -q '^CONFIG_DEBUG_INFO=y' "$kdir/config" || fail "kernel $kver is built without CONFIG_DEBUG_INFO: its modules cannot be rebuilt with debug info of the same layout"

src=$kdir/ibcore-src
exec 8>"$kdir/.ibcore.lock"
flock 8
if [ ! -f "$src/ready" ]; then
	rm -rf "$src" && mkdir -p "$src/debs"
	# As siw.sh: the image's version names the source.
	version=$(basename "$kdir" | grep -oE '[0-9]+\.[0-9]+\.[0-9]+-[^-]+$')
	pkg=linux-source-$(echo "$kver" | cut -d. -f1,2)
	want=$pkg=$version
	apt-cache "${apt_opts[@]}" show "$want" >/dev/null 2>&1 || want=$pkg
	echo "guest: fetching $want for the RDMA modules' BTF" >&2
	(cd "$src/debs" && apt-get "${apt_opts[@]}" download -qq "$want" >&2)
	tarball=./usr/src/$pkg.tar.xz
	mkdir -p "$src/core"
	dpkg-deb --fsys-tarfile "$src"/debs/*.deb | tar -xO "$tarball" | xz -dc -T2 |
		tar -x -C "$src/core" --strip-components=4 --wildcards "$pkg/drivers/infiniband/core/*"
	rm -rf "$src/debs"
	[ -f "$src/core/restrack.c" ] || fail "$want has no drivers/infiniband/core"
	echo "$want" >"$src/version"
	touch "$src/ready"
fi
flock -u 8
# Made already from this source.
if [ -f "$out/$kver/btf/ib_core" ] && cmp -s "$src/version" "$out/$kver/btf.from"; then
	echo "$out/$kver/btf"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The kernel's BTF, the base of the modules': the .BTF section of the
# vmlinux in its vmlinuz (xz-compressed in Debian's 5.10).
# The first xz stream that decompresses to an ELF file is the vmlinux.
python3 - "$kdir/vmlinuz" "$work/vmlinux" <<'PY' || fail "no xz-compressed vmlinux found in $kdir/vmlinuz"
import lzma, sys
data = open(sys.argv[1], "rb").read()
at = data.find(b"\xfd7zXZ\x00")
while at >= 0:
    try:
        elf = lzma.LZMADecompressor().decompress(data[at:])
        if elf.startswith(b"\x7fELF"):
            open(sys.argv[2], "wb").write(elf)
            sys.exit(0)
    except lzma.LZMAError:
        pass
    at = data.find(b"\xfd7zXZ\x00", at + 1)
sys.exit(1)
PY
objcopy -O binary --only-section=.BTF "$work/vmlinux" "$work/vmlinux.btf" 2>/dev/null || true
[ -s "$work/vmlinux.btf" ] || fail "no .BTF section in the vmlinux of $kdir/vmlinuz"

# cm_trace.h has define_trace.h include it as
# ../../drivers/infiniband/core/cm_trace.h, from the kernel's include/:
# the build directory sits at that path from an include directory of ours.
build=$work/drivers/infiniband/core
mkdir -p "$work/drivers/infiniband" "$work/include/trace"
cp -r "$src/core" "$build"
# Debug info for pahole; no BTF from kbuild (it would need the vmlinux the
# headers lack): pahole is run below.
kbuild "RDMA core modules" "$build" "$why" CONFIG_DEBUG_INFO=y KCFLAGS="-I$work/include/trace"
mkdir -p "$out/$kver/btf.new"
for m in ib_core ib_uverbs rdma_cm rdma_ucm iw_cm ib_cm; do
	[ -f "$build/$m.ko" ] || fail "building drivers/infiniband/core made no $m.ko"
	pahole -J --btf_base "$work/vmlinux.btf" --btf_encode_detached="$out/$kver/btf.new/$m" "$build/$m.ko" >&2 ||
		fail "pahole could not make the BTF of $m.ko"
done
rm -rf "$out/$kver/btf"
mv "$out/$kver/btf.new" "$out/$kver/btf"
cp "$src/version" "$out/$kver/btf.from"
echo "$out/$kver/btf (from $(cat "$src/version"))"
