#!/usr/bin/env bash
# make package-smoke, on the host: the release's .rpm files read with
# Debian's rpm: their files, scriptlets and version, rdmatrace-bench's
# dependencies, and rdmatrace's x86_64 one installed into a scratch root (--nodeps: the root has no system;
# --noscripts: nor a shell for the scriptlets, which rpm -qp --scripts
# showed).
#
#   guest/package-smoke-rpm.sh DIST VERSION
set -euo pipefail
dist=$1 version=$2
t0=$SECONDS
fail() { echo "package-smoke: $*" >&2; exit 1; }
command -v rpm >/dev/null || fail "no rpm (guest/setup-host.sh test installs Debian's)"

want="/etc/sysconfig/rdmatrace-exporter
/usr/lib/systemd/system/rdmatrace-exporter.service
/usr/sbin/rdmatrace
/usr/share/bash-completion/completions/rdmatrace
/usr/share/doc/rdmatrace/Apache-2.0.txt
/usr/share/doc/rdmatrace/GPL-2.0.txt
/usr/share/fish/vendor_completions.d/rdmatrace.fish
/usr/share/man/man8/rdmatrace.8.gz
/usr/share/zsh/site-functions/_rdmatrace"

for arch in x86_64 aarch64; do
	rpms=("$dist"/rdmatrace-[0-9]*."$arch".rpm)
	[ ${#rpms[@]} = 1 ] && [ -f "${rpms[0]}" ] || fail "want one $arch .rpm in $dist, found: ${rpms[*]}"
	r=${rpms[0]}
	echo "\$ rpm -qlp $r"
	got=$(rpm -qlp "$r" 2>/dev/null | grep -v '/$' | sort)
	echo "$got"
	missing=$(comm -23 <(sort <<<"$want") <(sort <<<"$got"))
	[ -z "$missing" ] || fail "$r lacks: $missing"
	[ "$(rpm -qp --qf '%{ARCH}' "$r" 2>/dev/null)" = "$arch" ] || fail "$r is not for $arch"
	echo "\$ rpm -qp --scripts $r"
	scripts=$(rpm -qp --scripts "$r" 2>/dev/null)
	echo "$scripts"
	grep -q 'systemctl daemon-reload' <<<"$scripts" || fail "$r does not reload systemd's units"
	grep -A40 '^preuninstall scriptlet' <<<"$scripts" | grep -q 'systemctl stop' || fail "$r does not stop the exporter before its removal"
	grep -A40 '^preuninstall scriptlet' <<<"$scripts" | grep -q 'disable' || fail "$r does not disable the exporter before its removal"
	grep -A40 '^postinstall scriptlet' <<<"$scripts" | grep -q 'try-restart' || fail "$r does not restart a running exporter at an upgrade"
	! grep -v '^[[:space:]]*#' <<<"$scripts" | grep -qE 'systemctl (enable|start)' || fail "$r enables or starts a service"
	rpm -qp --configfiles "$r" 2>/dev/null | grep -qx /etc/sysconfig/rdmatrace-exporter ||
		fail "$r: /etc/sysconfig/rdmatrace-exporter is not a config file"
done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
r=$(ls "$dist"/rdmatrace-[0-9]*.x86_64.rpm)
echo "\$ rpm -i --root SCRATCH --nodeps --noscripts $r"
# Debian's rpm keeps its database in ~/.rpmdb: the scratch root's own.
rpm -i --root "$scratch" --dbpath /var/lib/rpm --nodeps --noscripts "$r"
installed=$(cd "$scratch" && find . -type f ! -path './var/lib/rpm/*' | sed 's|^\.||' | sort)
echo "$installed"
[ "$installed" = "$want" ] || fail "the installed files differ from the expected: $(diff <(echo "$want") <(echo "$installed") || true)"
out=$("$scratch/usr/sbin/rdmatrace" --version)
[[ $out == *"$version"* ]] || fail "the rpm's rdmatrace --version says \"$out\", want $version"
rpm --root "$scratch" --dbpath /var/lib/rpm -q rdmatrace
# rdmatrace-bench: the host's architecture alone (cgo against rdma-core).
b=$(ls "$dist"/rdmatrace-bench-[0-9]*.x86_64.rpm)
echo "\$ rpm -qp --requires $b"
requires=$(rpm -qp --requires "$b" 2>/dev/null)
echo "$requires"
for dep in libibverbs librdmacm "rdmatrace = $(rpm -qp --qf '%{VERSION}-%{RELEASE}' "$r" 2>/dev/null)"; do
	grep -qx "$dep" <<<"$requires" || fail "$b does not require $dep"
done
[ "$(rpm -qlp "$b" 2>/dev/null | grep -v '/$' | sort | tr '\n' ' ')" = "/usr/bin/rdmabench /usr/share/doc/rdmatrace-bench/Apache-2.0.txt /usr/share/man/man1/rdmabench.1.gz " ] ||
	fail "$b holds: $(rpm -qlp "$b" 2>/dev/null | tr '\n' ' ')"
! ls "$dist"/rdmatrace-bench-*.aarch64.rpm >/dev/null 2>&1 || fail "an aarch64 rdmatrace-bench: it is built for the host's architecture alone"
echo "package-smoke: the .rpm files are complete and install ($((SECONDS - t0))s)"
