#!/usr/bin/env bash
# Runs inside the guest (make package-smoke): installs the release's amd64
# .deb with dpkg, as a user of Debian does (the guest's root is a writable
# overlay of the host's, so nothing reaches the host), and runs the
# installed /usr/sbin/rdmatrace: --version, res over soft-RoCE, and a
# short trace that must see an rping pair's queue pairs. Then, the exporter
# enabled, installs it again (an upgrade) and removes it: the removal
# disables the exporter, though no systemd runs here to stop it.
#
#   guest/package-smoke-deb.sh DIST VERSION
set -euo pipefail
dist=$1 version=$2
t0=$SECONDS
debs=("$dist"/rdmatrace_*_amd64.deb)
[ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || { echo "package-smoke: want one amd64 .deb in $dist, found: ${debs[*]}" >&2; exit 1; }
deb=${debs[0]}
fail() { echo "package-smoke: $*" >&2; exit 1; }

echo "\$ dpkg -i $deb"
dpkg -i "$deb" | grep -v '^(Reading database'
[ -x /usr/sbin/rdmatrace ] || fail "the .deb installed no /usr/sbin/rdmatrace"
for f in /usr/share/man/man8/rdmatrace.8.gz /usr/share/bash-completion/completions/rdmatrace \
	/usr/share/zsh/vendor-completions/_rdmatrace /usr/share/fish/vendor_completions.d/rdmatrace.fish \
	/usr/lib/systemd/system/rdmatrace-exporter.service /etc/default/rdmatrace-exporter; do
	[ -s "$f" ] || fail "the .deb installed no $f"
done
dpkg-query -W -f='${Conffiles}\n' rdmatrace | grep -q '/etc/default/rdmatrace-exporter' ||
	fail "/etc/default/rdmatrace-exporter is not a conffile"
if command -v systemd-analyze >/dev/null; then
	echo "\$ systemd-analyze verify rdmatrace-exporter.service"
	systemd-analyze verify /usr/lib/systemd/system/rdmatrace-exporter.service || fail "systemd rejects the unit"
fi
# grep -c reads to the end: grep -q would leave zcat writing into a closed
# pipe once the page is larger than the pipe, and pipefail fail the test.
[ "$(zcat /usr/share/man/man8/rdmatrace.8.gz | grep -c '^\.TH')" -ge 1 ] || fail "the man page is no man page"

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

wants=/etc/systemd/system/multi-user.target.wants/rdmatrace-exporter.service
echo "\$ deb-systemd-helper enable rdmatrace-exporter.service; dpkg -i $deb   # enabled as a maintainer script would, then an upgrade"
DPKG_MAINTSCRIPT_PACKAGE=rdmatrace deb-systemd-helper enable rdmatrace-exporter.service
[ -L $wants ] || fail "deb-systemd-helper enable made no $wants"
dpkg -i "$deb" | grep -v '^(Reading database' || fail "the upgrade's scripts failed"
[ -L $wants ] || fail "an upgrade disabled the exporter"

echo "\$ dpkg -r rdmatrace"
dpkg -r rdmatrace >/dev/null
[ ! -e /usr/sbin/rdmatrace ] || fail "dpkg -r left /usr/sbin/rdmatrace"
[ ! -e $wants ] || fail "dpkg -r left the exporter enabled ($wants)"
[ -e /etc/default/rdmatrace-exporter ] || fail "dpkg -r removed the conffile (only purge should)"
echo "package-smoke: the .deb installs, runs and removes ($((SECONDS - t0))s)"
