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

# What kbuild says because modules are built without BTF on purpose.
kbuild_noise='Skipping BTF generation|pahole version differs|The kernel was built with: |You are using: +[0-9]'

# kbuild NAME BUILD WHYFILE [MAKEVAR=VALUE...]: make the module in BUILD
# without BTF (it would need pahole and a vmlinux the headers lack); when
# it cannot be built, say why in WHYFILE (the test that needs it skips
# with that) and exit 3.
kbuild() {
	local name=$1 build=$2 whyfile=$3
	shift 3
	kbuild_cc
	local make=(make -s -C "$hsrc" M="$build" "${ccopt[@]}" CONFIG_DEBUG_INFO_BTF_MODULES= "$@" modules)
	local with hostcc=${cc:-gcc}
	[ ${#ccopt[@]} = 0 ] || hostcc=gcc
	if [ -z "$troot" ]; then
		with="the host's $hostcc $($hostcc -dumpversion)"
	else
		with="$cc from Debian's $series, unpacked in $troot"
		# A private mount namespace: the bind mounts go when make ends.
		make=(unshare --mount --propagation private sh -c '
			r=$1 h=$2 b=$3; shift 3
			mkdir -p "$r$h" "$r$b" "$r/dev" "$r/proc" "$r/tmp" &&
			mount --bind "$h" "$r$h" && mount --bind "$b" "$r$b" &&
			mount --rbind /dev "$r/dev" && mount -t proc proc "$r/proc" &&
			exec chroot "$r" /usr/bin/env -i PATH=/usr/bin:/usr/sbin HOME=/tmp LC_ALL=C.UTF-8 DEB_BUILD_ARCH=amd64 "$@"' \
			sh "$troot" "$kdir/headers" "$build" "${make[@]}")
	fi
	if ! "${make[@]}" >"$build/log" 2>&1; then
		grep -vE "$kbuild_noise" "$build/log" >&2
		echo "cannot build $name against linux-headers-$kver (built with ${cc:-gcc}) with $with: $(unbuildable_why "$build/log")" | tee "$whyfile" >&2
		exit 3
	fi
	grep -vE "$kbuild_noise" "$build/log" >&2 || true
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

# kbuild_cc: the kernel's own compiler (gcc-10 for 5.10, gcc-16 for sid)
# when the host has it. Else the host's gcc when it is at least as new
# (5.10 builds with bookworm's gcc 12); else, for a kernel whose compiler
# is newer than the host's (sid's flags need gcc 16, its kbuild tools a
# newer glibc), that compiler from the kernel's own suite, unpacked into a
# root to chroot into (toolchain_root): troot. Only sid's is known: the
# package names toolchain_root asks for are trixie's and later.
kbuild_cc() {
	cc=$(sed -n 's/^CC = .*)\(gcc-[0-9]*\)$/\1/p' "$hsrc/.kernelvariables" 2>/dev/null)
	ccopt=() troot=
	command -v "${cc:-gcc}" >/dev/null && return
	if [ -n "$cc" ] && [ "${cc#gcc-}" -gt "$(gcc -dumpversion | cut -d. -f1)" ] && [ "$series" = sid ]; then
		toolchain_root
		return
	fi
	ccopt=(CC=gcc)
}

# toolchain_root: unpacks (apt-get download, never installed) the kernel's
# compiler, make, libc6-dev and what kbuild's tools link, with everything
# they depend on, from the kernel's suite into KDIR/toolchain once; sets
# troot. Like the kernel, it is cached with the kernel's ABI.
toolchain_root() {
	troot=$kdir/toolchain
	exec 7>"$kdir/.toolchain.lock"
	flock 7
	if [ ! -f "$troot/ready" ]; then
		rm -rf "$troot" "$troot.debs" && mkdir -p "$troot.debs" "$troot/usr/bin" "$troot/usr/sbin" "$troot/usr/lib" "$troot/usr/lib64"
		local d
		for d in bin sbin lib lib64; do ln -s "usr/$d" "$troot/$d"; done
		local pkgs
		# The closure of the packages, minus virtual ones (<awk>: mawk is named).
		pkgs=$(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
			--no-breaks --no-replaces --no-enhances "$cc" make libc6-dev libelf1t64 libssl3t64 zlib1g \
			bash dash coreutils sed grep mawk findutils diffutils | grep -E '^[a-z0-9]' | sort -u)
		echo "guest: fetching $(echo "$pkgs" | wc -l) packages from Debian's $series ($cc, make, libc6-dev and what they need) to build modules for $kver" >&2
		# shellcheck disable=SC2086 # one package per word
		(cd "$troot.debs" && apt-get "${apt_opts[@]}" download -qq $pkgs >&2)
		for d in "$troot.debs"/*.deb; do
			dpkg-deb --fsys-tarfile "$d" | tar -x --keep-directory-symlink -C "$troot"
		done
		rm -rf "$troot.debs"
		# What maintainer scripts or alternatives would have made.
		[ -e "$troot/usr/bin/sh" ] || ln -s dash "$troot/usr/bin/sh"
		[ -e "$troot/usr/bin/awk" ] || ln -s mawk "$troot/usr/bin/awk"
		[ -x "$troot/usr/bin/x86_64-linux-gnu-$cc" ] || { echo "guest: no x86_64-linux-gnu-$cc in $troot" >&2; exit 1; }
		touch "$troot/ready"
	fi
	flock -u 7
}

# unbuildable_why LOG: one line on why make failed: a kbuild tool linked
# against a newer glibc, a flag of a newer gcc, or the compiler's first error.
unbuildable_why() {
	grep -m1 -oE "version \`GLIBC_[0-9.]+' not found|unrecognized command-line option [^;]*|[^ ]+:[0-9]+:[0-9]+: error: .*" "$1" || echo "make failed"
}
