#!/usr/bin/env bash
# kernel.sh 5.10|6.1|6.12|sid — fetch Debian's kernel package, unpack it,
# run depmod and build a small initramfs; prints the cache directory that
# holds vmlinuz, modules/ and initramfs.cpio. Cached by the exact package
# version, so a new Debian ABI is simply fetched anew. 5.10 is bullseye's,
# sid the newest Debian packages; both come through a private apt
# configuration (lib/apt.sh), never the host's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${RDMATRACE_GUEST_CACHE:-$here/cache}
series=${1:-6.1}

mkdir -p "$cache"
# shellcheck source=lib/apt.sh
. "$here/lib/apt.sh"
kernel_series "$series"

# The metapackage depends on the current ABI's image, e.g. linux-image-6.1.0-56-amd64.
pkg=$(apt-cache "${apt_opts[@]}" depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
if [ -z "$pkg" ]; then
	echo "guest: cannot resolve the kernel package of $meta for $series (apt-get update?)" >&2
	exit 1
fi
version=$(apt-cache "${apt_opts[@]}" policy "$pkg" | awk '/Candidate:/ { print $2 }')
dir="$cache/$pkg-$version"
exec 9>"$cache/.lock"
flock 9
if [ -f "$dir/ready" ]; then
	echo "$dir"
	exit 0
fi

rm -rf "$dir" && mkdir -p "$dir/debs"
echo "guest: fetching $pkg $version" >&2
# Newer Debian kernels (sid's 7.x) split the image into linux-binary-,
# linux-modules- and linux-base- packages of the same ABI: fetch those too.
abi=${pkg#linux-image-}
debs=("$pkg=$version")
while read -r dep; do debs+=("$dep=$version"); done < <(apt-cache "${apt_opts[@]}" depends "$pkg" |
	awk -v abi="$abi" '$1 ~ /Depends:$/ && $2 ~ "^linux-[a-z]+-" && substr($2, length($2) - length(abi) + 1) == abi { print $2 }' | sort -u)
(cd "$dir/debs" && apt-get "${apt_opts[@]}" download -qq "${debs[@]}" >&2)
mkdir -p "$dir/root"
for d in "$dir"/debs/*.deb; do dpkg-deb -x "$d" "$dir/root"; done
kver=$(ls "$dir/root/lib/modules" 2>/dev/null || ls "$dir/root/usr/lib/modules")
modroot=$dir/root
[ -d "$modroot/lib/modules/$kver" ] || modroot=$dir/root/usr
ln -s "$modroot/lib/modules/$kver" "$dir/modules"
# sid's 7.x keeps the image and config in the modules directory.
for f in "$dir/root/boot/vmlinuz-$kver" "$modroot/lib/modules/$kver/vmlinuz"; do
	[ -f "$f" ] && cp "$f" "$dir/vmlinuz" && break
done
for f in "$dir/root/boot/config-$kver" "$modroot/lib/modules/$kver/config"; do
	[ -f "$f" ] && cp "$f" "$dir/config" && break
done
echo "$kver" >"$dir/kver"
# The .deb ships no modules.dep.
depmod -b "$modroot" "$kver"

# initramfs: busybox and what it takes to mount 9p and overlay.
ird=$dir/initramfs
mkdir -p "$ird"/{bin,dev,proc,sys,mnt,newroot,lib/mod}
cp /bin/busybox "$ird/bin/busybox"
: >"$ird/lib/mod/order"
for m in virtio_pci 9pnet_virtio 9p overlay; do
	modprobe -d "$modroot" -S "$kver" --show-depends "$m"
done | awk '$1 == "insmod" { print $2 }' | while read -r ko; do
	name=$(basename "$ko")
	case $ko in
	*.xz) xz -dc "$ko" >"$ird/lib/mod/${name%.xz}" && name=${name%.xz} ;;
	*.zst) zstd -qdc "$ko" >"$ird/lib/mod/${name%.zst}" && name=${name%.zst} ;;
	*) cp "$ko" "$ird/lib/mod/$name" ;;
	esac
	grep -qx "$name" "$ird/lib/mod/order" || echo "$name" >>"$ird/lib/mod/order"
done
cp "$here/lib/init.sh" "$ird/init"
chmod +x "$ird/init"
echo "$kver" >"$ird/kver"
(cd "$ird" && find . | /bin/busybox cpio -o -H newc 2>/dev/null) >"$dir/initramfs.cpio"
rm -rf "$dir/debs" "$ird"
touch "$dir/ready"
echo "$dir"
