# guest/lib/headers.sh — sourced by kmod.sh and siw.sh, which build
# out-of-tree modules for a guest kernel: module_build_env SERIES finds the
# kernel (kernel.sh) and its headers, kbuild makes a module against them.
# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

# module_build_env SERIES: sets kdir (the kernel's cache directory), kver
# and hsrc (the headers' directory a module's make -C takes).
module_build_env() {
	kdir=$("$(dirname "${BASH_SOURCE[0]}")/../kernel.sh" "$1")
	kernel_series "$1"
	kver=$(cat "$kdir/kver")
	linux_headers "$kdir" "$kver"
}

# kbuild NAME BUILD WHYFILE [MAKEVAR=VALUE...]: make the module in BUILD
# without BTF (it would need pahole and a vmlinux the headers lack); when
# it cannot be built, say why in WHYFILE (the test that needs it skips
# with that) and exit 3.
kbuild() {
	local name=$1 build=$2 whyfile=$3
	shift 3
	kbuild_cc
	if ! make -s -C "$hsrc" M="$build" "${ccopt[@]}" CONFIG_DEBUG_INFO_BTF_MODULES= "$@" modules >"$build/log" 2>&1; then
		grep -v 'Skipping BTF generation' "$build/log" >&2
		echo "cannot build $name against linux-headers-$kver (built with ${cc:-gcc}) with the host's gcc $(gcc -dumpversion): $(unbuildable_why "$build/log")" | tee "$whyfile" >&2
		exit 3
	fi
	grep -v 'Skipping BTF generation' "$build/log" >&2 || true
}

# linux_headers KDIR KVER unpacks Debian's linux-headers for KVER, its
# -common part and linux-kbuild (apt-get download, never installed) under
# KDIR/headers once, and sets hsrc.

linux_headers() {
	local kdir=$1 kver=$2
	local hdir=$kdir/headers
	exec 9>"$kdir/.headers.lock"
	flock 9
	if [ ! -f "$hdir/ready" ]; then
		rm -rf "$hdir" && mkdir -p "$hdir/debs"
		local pkgs=("linux-headers-$kver") dep
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
	flock -u 9
	hsrc=$hdir/root/usr/src/linux-headers-$kver
}

# kbuild_cc: the kernel's own compiler (gcc-10 for 5.10, a newer gcc than
# the host's for sid) when the host has it, else the host's gcc.
kbuild_cc() {
	cc=$(sed -n 's/^CC = .*)\(gcc-[0-9]*\)$/\1/p' "$hsrc/.kernelvariables" 2>/dev/null)
	ccopt=()
	command -v "${cc:-gcc}" >/dev/null || ccopt=(CC=gcc)
}

# unbuildable_why LOG: one line on why make failed (sid's kbuild tools are
# linked against a newer glibc than the host's, and its flags need a newer gcc).
unbuildable_why() {
	grep -m1 -oE "version \`GLIBC_[0-9.]+' not found|unrecognized command-line option [^;]*" "$1" || echo "make failed"
}
