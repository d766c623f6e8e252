#!/usr/bin/env bash
# Runs inside the guest (make package-smoke): the release's amd64 packages
# as an admin meets them, with a real systemd managing the services
# (guest/lib/systemd.sh: a container's PID 1; the guest's root is a
# writable overlay of the host's, so nothing reaches the host).
#
#   .deb  rdmatrace installed with dpkg; its files; the installed binary's
#         --version, res over soft-RoCE and a short trace that must see an
#         rping pair. The exporter enabled and started, then an upgrade
#         (dpkg -i again): the exporter runs again, as a new process, with
#         the admin's edit of /etc/default kept; stopped, an upgrade leaves
#         it stopped. rdmatrace-bench installed beside it: rdmabench,
#         with a PATH without sbin, finds /usr/sbin/rdmatrace and traces a
#         ctrl run with it; upgraded; removed. Removing rdmatrace while the
#         exporter runs stops and disables it; purge takes the conffile.
#   .rpm  the same with rpm (Debian's, its own database): install (%post
#         1), the exporter's flags in /etc/sysconfig, upgrade
#         (--replacepkgs: %post 2) restarting a running exporter, and
#         erase (%preun 0) stopping and disabling it; rdmatrace-bench
#         installed, upgraded and erased.
#
#   guest/package-smoke.sh DIST VERSION
set -euo pipefail
dist=$1 version=$2
t0=$SECONDS
fail() {
	echo "package-smoke: $*" >&2
	[ -z "${systemd_pid:-}" ] || sd systemctl status --no-pager rdmatrace-exporter.service >&2 || :
	exit 1
}
one() { # GLOB WHAT: the one file GLOB names
	local f=($1)
	[ ${#f[@]} = 1 ] && [ -f "${f[0]}" ] || fail "want one $2 in $dist, found: ${f[*]}"
	echo "${f[0]}"
}
deb=$(one "$dist/rdmatrace_*_amd64.deb" "rdmatrace amd64 .deb")
benchdeb=$(one "$dist/rdmatrace-bench_*_amd64.deb" "rdmatrace-bench amd64 .deb")
rpm=$(one "$dist/rdmatrace-[0-9]*.x86_64.rpm" "rdmatrace x86_64 .rpm")
benchrpm=$(one "$dist/rdmatrace-bench-[0-9]*.x86_64.rpm" "rdmatrace-bench x86_64 .rpm")

# The guest's root is the host's, a container image's, whose
# /usr/sbin/policy-rc.d (Docker's) forbids maintainer scripts to start or
# stop any service (exit 101), and deb-systemd-invoke obeys it: a node has
# none. Gone from the guest's overlay only.
rm -f /usr/sbin/policy-rc.d
. guest/lib/systemd.sh
trap systemd_stop EXIT
systemd_start || fail "no systemd to manage the exporter"

unit=rdmatrace-exporter.service
wants=/etc/systemd/system/multi-user.target.wants/$unit
# The container's systemd boots no sysinit.target (the guest's own PID 1
# set the system up): the unit starts without waiting for it, its other
# settings as packaged. A drop-in in the container's /run, gone with it.
sd sh -c "mkdir -p /run/systemd/system/$unit.d && printf '[Unit]\nDefaultDependencies=no\n' >/run/systemd/system/$unit.d/guest.conf"
# The exporter's process as systemd knows it (0: none).
mainpid() { sd systemctl show -p MainPID --value $unit; }
# Until the exporter answers /metrics, or 60 s.
serving() {
	local t=$SECONDS
	while [ $((SECONDS - t)) -lt 60 ]; do
		curl -sf -o /dev/null http://127.0.0.1:9879/metrics && return 0
		sleep 0.5
	done
	sd systemctl list-jobs --no-pager >&2 || :
	fail "the exporter does not serve (state $(sd systemctl is-active $unit))"
}
inactive() {
	local s
	s=$(sd systemctl is-active $unit) || :
	[ "$s" = inactive ] || fail "$*: the exporter is $s, want inactive"
}
# An admin's edit of the flags file: the tracer off, which the guest
# need not pay for here (the trace above shows it works).
edit_flags() {
	sed -i 's|^RDMATRACE_EXPORTER_ARGS=.*|RDMATRACE_EXPORTER_ARGS="--listen 127.0.0.1:9879 --no-trace"|' "$1"
	grep -q -- '--no-trace' "$1" || fail "could not edit $1"
}
# A package manager's command where systemd runs, its output shown but
# dpkg's progress.
run() {
	local out rc=0
	out=$(sd "$@" 2>&1) || rc=$?
	grep -v '^(Reading database' <<<"$out" || :
	return $rc
}
# Upgraded while running (PHASE, the upgrade's command...): the exporter
# runs again as a new process, still enabled, the flags kept.
upgrade_restarts() {
	local flags=$1 before after
	shift
	before=$(mainpid)
	[ "$before" != 0 ] || fail "the exporter is not running before the upgrade"
	echo "\$ $*   # an upgrade, the exporter running as pid $before"
	run "$@" || fail "the upgrade failed"
	after=$(mainpid)
	[ "$after" != 0 ] && [ "$after" != "$before" ] || fail "the upgrade did not restart the exporter (pid $before, then $after)"
	serving
	[ -L $wants ] || fail "the upgrade disabled the exporter"
	grep -q -- '--no-trace' "$flags" || fail "the upgrade replaced the admin's $flags"
	echo "  restarted: pid $before, then $after; still enabled; $flags kept"
}
# Upgraded while stopped: it stays stopped.
upgrade_leaves_stopped() {
	sd systemctl stop $unit
	echo "\$ $*   # an upgrade, the exporter stopped"
	run "$@" || fail "the upgrade failed"
	inactive "an upgrade of a stopped exporter"
	echo "  still stopped"
}
# rdmabench from the package, with a PATH without sbin, drives the
# package's rdmatrace (--trace: an error if it cannot). In the guest's
# pid namespace, as the tracer's pids are.
bench_traces() {
	echo "\$ PATH=/usr/bin:/bin rdmabench ctrl -d rxe0 -n 1 --sizes 4K --trace"
	out=$(env PATH=/usr/bin:/bin rdmabench ctrl -d rxe0 -n 1 --sizes 4K --trace 2>&1) || { echo "$out" >&2; fail "rdmabench ctrl --trace failed"; }
	echo "$out" | sed -n '/^tracing:/p;/^reg-mr/p' | head -n 3
	grep -q '^tracing: rdmatrace trace' <<<"$out" || { echo "$out" >&2; fail "rdmabench did not trace with the installed rdmatrace"; }
}

echo "== the .deb"
echo "\$ dpkg -i $deb"
run dpkg -i "$deb" || fail "dpkg -i failed"
[ -x /usr/sbin/rdmatrace ] || fail "the .deb installed no /usr/sbin/rdmatrace"
for f in /usr/share/man/man8/rdmatrace.8.gz /usr/share/bash-completion/completions/rdmatrace \
	/usr/share/zsh/vendor-completions/_rdmatrace /usr/share/fish/vendor_completions.d/rdmatrace.fish \
	/usr/lib/systemd/system/$unit /etc/default/rdmatrace-exporter \
	/usr/share/doc/rdmatrace/copyright /usr/share/doc/rdmatrace/changelog.Debian.gz; do
	[ -s "$f" ] || fail "the .deb installed no $f"
done
[ ! -e /etc/sysconfig/rdmatrace-exporter ] || fail "the .deb installed /etc/sysconfig/rdmatrace-exporter, RPM systems' file"
dpkg-query -W -f='${Conffiles}\n' rdmatrace | grep -q '/etc/default/rdmatrace-exporter' ||
	fail "/etc/default/rdmatrace-exporter is not a conffile"
head -n 1 /usr/share/doc/rdmatrace/copyright | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
	fail "the copyright file is not machine-readable (DEP-5)"
zcat /usr/share/doc/rdmatrace/changelog.Debian.gz | head -n 1 | grep -qF "rdmatrace ($(dpkg-query -W -f='${Version}' rdmatrace))" ||
	fail "the changelog's first entry is not this version: $(zcat /usr/share/doc/rdmatrace/changelog.Debian.gz | head -n 1)"
echo "\$ systemd-analyze verify $unit"
sd systemd-analyze verify /usr/lib/systemd/system/$unit || fail "systemd rejects the unit"
# grep -c reads to the end: grep -q would leave zcat writing into a closed
# pipe once the page is larger than the pipe, and pipefail fail the test.
[ "$(zcat /usr/share/man/man8/rdmatrace.8.gz | grep -c '^\.TH')" -ge 1 ] || fail "the man page is no man page"
inactive "an install"

echo "\$ rdmatrace --version"
out=$(/usr/sbin/rdmatrace --version)
echo "$out"
[[ $out == *"$version"* ]] || fail "--version says \"$out\", want $version"

guest/rdma-up.sh >/dev/null
echo "\$ rdmatrace res"
out=$(/usr/sbin/rdmatrace res)
echo "$out"
grep -q rxe0 <<<"$out" || fail "res does not show rxe0"

echo "\$ rdmatrace trace --duration 2s   # while an rping pair connects"
rm -f /tmp/smoke.ready
/usr/sbin/rdmatrace trace --no-snapshot --duration 2s --ready-file /tmp/smoke.ready >/tmp/smoke.trace 2>/tmp/smoke.err &
tracer=$!
for _ in $(seq 600); do [ -e /tmp/smoke.ready ] || ! kill -0 $tracer 2>/dev/null && break; sleep 0.1; done
[ -e /tmp/smoke.ready ] || { cat /tmp/smoke.err >&2; fail "trace did not start"; }
timeout 20 rping -s -a 10.99.0.1 -p 7999 -C 1 >/dev/null 2>&1 &
sleep 0.3
timeout 20 rping -c -a 10.99.0.1 -p 7999 -C 1 >/dev/null 2>&1 || true
rc=0
wait $tracer || rc=$?
[ $rc = 0 ] || { cat /tmp/smoke.err >&2; fail "trace exited $rc"; }
cat /tmp/smoke.trace
# Two seconds of an emulated CPU see rping's first rdma_cm IDs, not
# always its queue pairs: any event owned by rping shows the hooks work.
grep -q 'cm_id_create .*rping\[' /tmp/smoke.trace || fail "trace saw no rdma_cm ID of rping's"

echo "\$ systemctl enable --now $unit   # its flags edited first"
edit_flags /etc/default/rdmatrace-exporter
timeout 120 nsenter -t "$systemd_pid" -m -p --wd="$PWD" -- systemctl enable --now $unit 2>&1 || fail "systemctl enable --now failed"
serving
upgrade_restarts /etc/default/rdmatrace-exporter dpkg -i "$deb"
upgrade_leaves_stopped dpkg -i "$deb"

echo "\$ dpkg -i $benchdeb"
run dpkg -i "$benchdeb" || fail "dpkg -i of rdmatrace-bench failed"
for f in /usr/bin/rdmabench /usr/share/man/man1/rdmabench.1.gz /usr/share/doc/rdmatrace-bench/copyright /usr/share/doc/rdmatrace-bench/changelog.Debian.gz; do
	[ -s "$f" ] || fail "the bench .deb installed no $f"
done
[ "$(zcat /usr/share/man/man1/rdmabench.1.gz | grep -c '^\.TH')" -ge 1 ] || fail "rdmabench's man page is no man page"
out=$(rdmabench --version)
[[ $out == *"$version"* ]] || fail "rdmabench --version says \"$out\", want $version"
bench_traces
echo "\$ dpkg -i $benchdeb   # an upgrade"
run dpkg -i "$benchdeb" || fail "rdmatrace-bench's upgrade failed"
echo "\$ dpkg -r rdmatrace-bench"
sd dpkg -r rdmatrace-bench >/dev/null
[ ! -e /usr/bin/rdmabench ] || fail "dpkg -r left /usr/bin/rdmabench"

echo "\$ dpkg -r rdmatrace   # the exporter running"
sd systemctl start $unit
serving
sd dpkg -r rdmatrace >/dev/null
inactive "dpkg -r"
! pgrep -x rdmatrace >/dev/null || fail "an rdmatrace process is left after dpkg -r: $(pgrep -a -x rdmatrace)"
[ ! -e /usr/sbin/rdmatrace ] || fail "dpkg -r left /usr/sbin/rdmatrace"
[ ! -e $wants ] || fail "dpkg -r left the exporter enabled ($wants)"
[ -e /etc/default/rdmatrace-exporter ] || fail "dpkg -r removed the conffile (only purge should)"
echo "  stopped, disabled, the conffile kept"
echo "\$ dpkg -P rdmatrace"
sd dpkg -P rdmatrace >/dev/null
[ ! -e /etc/default/rdmatrace-exporter ] || fail "dpkg -P left /etc/default/rdmatrace-exporter"

echo "== the .rpm (Debian's rpm, a database of its own)"
rpmdb=(--dbpath /var/lib/rpm)
mkdir -p /var/lib/rpm
rpm "${rpmdb[@]}" --initdb
# --nodeps: glibc, libibverbs and librdmacm are dpkg's here, not rpm's.
echo "\$ rpm -i --nodeps $rpm"
sd rpm "${rpmdb[@]}" -i --nodeps "$rpm"
[ -s /etc/sysconfig/rdmatrace-exporter ] || fail "the .rpm installed no /etc/sysconfig/rdmatrace-exporter"
[ ! -e /etc/default/rdmatrace-exporter ] || fail "the .rpm installed /etc/default/rdmatrace-exporter, Debian's file"
rpm "${rpmdb[@]}" -q --configfiles rdmatrace | grep -qx /etc/sysconfig/rdmatrace-exporter || fail "/etc/sysconfig/rdmatrace-exporter is not a config file"
inactive "an install"
echo "\$ systemctl enable --now $unit   # its flags edited first"
edit_flags /etc/sysconfig/rdmatrace-exporter
timeout 120 nsenter -t "$systemd_pid" -m -p --wd="$PWD" -- systemctl enable --now $unit 2>&1 || fail "systemctl enable --now failed"
serving
cmdline=$(sd cat "/proc/$(mainpid)/cmdline" | tr '\0' ' ')
[[ $cmdline == *--no-trace* ]] || fail "the exporter does not run with /etc/sysconfig's flags: $cmdline"
upgrade_restarts /etc/sysconfig/rdmatrace-exporter rpm "${rpmdb[@]}" -U --replacepkgs --nodeps "$rpm"
upgrade_leaves_stopped rpm "${rpmdb[@]}" -U --replacepkgs --nodeps "$rpm"
echo "\$ rpm -i --nodeps $benchrpm"
sd rpm "${rpmdb[@]}" -i --nodeps "$benchrpm"
rpm "${rpmdb[@]}" -q --requires rdmatrace-bench | grep -qx "rdmatrace = $(rpm "${rpmdb[@]}" -q --qf '%{VERSION}-%{RELEASE}' rdmatrace)" ||
	fail "rdmatrace-bench does not require this rdmatrace: $(rpm "${rpmdb[@]}" -q --requires rdmatrace-bench | tr '\n' ' ')"
[ -x /usr/bin/rdmabench ] || fail "the bench .rpm installed no /usr/bin/rdmabench"
echo "\$ rpm -U --replacepkgs --nodeps $benchrpm   # an upgrade"
sd rpm "${rpmdb[@]}" -U --replacepkgs --nodeps "$benchrpm"
echo "\$ rpm -e rdmatrace-bench"
sd rpm "${rpmdb[@]}" -e rdmatrace-bench
[ ! -e /usr/bin/rdmabench ] || fail "rpm -e left /usr/bin/rdmabench"
echo "\$ rpm -e rdmatrace   # the exporter running"
sd systemctl start $unit
serving
sd rpm "${rpmdb[@]}" -e rdmatrace
inactive "rpm -e"
! pgrep -x rdmatrace >/dev/null || fail "an rdmatrace process is left after rpm -e: $(pgrep -a -x rdmatrace)"
[ ! -e /usr/sbin/rdmatrace ] || fail "rpm -e left /usr/sbin/rdmatrace"
[ ! -e $wants ] || fail "rpm -e left the exporter enabled ($wants)"
echo "  stopped, disabled"

echo "package-smoke: both packages of each format install, run, upgrade (restarting a running exporter) and remove ($((SECONDS - t0))s)"
