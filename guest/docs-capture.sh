#!/usr/bin/env bash
# Runs inside the guest (make docs-capture): the outputs that
# docs/quickstart.md and docs/cookbook.md show, each made by the fault it
# is about, and the recordings the docs' pictures are drawn from. Each
# output goes to $GUEST_OUT/NAME.txt with the command above it; the
# recordings to $GUEST_OUT/*.ndjson.
#
#   guest/docs-capture.sh BIN/rdmatrace OUT/workloads-dir
set -uo pipefail
bin=$(cd "$(dirname "${1:-bin/rdmatrace}")" && pwd)/$(basename "${1:-bin/rdmatrace}")
wl=$(cd "${2:-out}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=${GUEST_OUT:?run it in the guest: guest/run -o DIR}
addr=10.99.0.1
export PATH=$(dirname "$bin"):$PATH

"$here/rdma-up.sh" >/dev/null || exit 1
cd "$out" # the recordings are named as they are in the docs
cp "$wl/leaksites" ./leaksites

# show NAME CMD...: run CMD, write "$ CMD" and its output (stdout and
# stderr) to NAME.txt and the terminal, with its exit status when not 0.
show() {
	local name=$1
	shift
	{
		echo "\$ $*"
		timeout 90 "$@" 2>&1
		local rc=$?
		[ $rc = 0 ] || echo "(exit status $rc)"
	} | tee "$out/$name.txt"
}
# ready FILE: wait (60 s at most) for a tool's --ready-file.
ready() {
	for _ in $(seq 600); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	echo "docs-capture: $1 never appeared" >&2
	return 1
}
# connected PID...: wait until each process owns a QP in RTS.
connected() {
	for _ in $(seq 120); do
		local all=1
		for p in "$@"; do
			rdma res show qp | grep -q "state RTS .*pid $p " || all=0
		done
		[ $all = 1 ] && return 0
		sleep 0.5
	done
	echo "docs-capture: $* never connected" >&2
	return 1
}
step() { echo "== $* ($(date -u +%T))"; }
began=$(date +%s)

step "a healthy node"
show version rdmatrace --version
show doctor rdmatrace doctor
show health rdmatrace health
show health-since rdmatrace health --since 10s
show link rdmatrace link

step "the session's recording, and a clean rping pair for the sequence diagram"
rdmatrace trace -w session.ndjson --ready-file /tmp/session.ready 2>"$out/session.err" &
session=$!
rdmatrace trace --no-snapshot --filter-comm rping -w rping.ndjson --ready-file /tmp/rping.ready 2>/dev/null &
rpingtrace=$!
ready /tmp/session.ready && ready /tmp/rping.ready
rping -s -a $addr -p 7174 -C 3 >/dev/null 2>&1 &
pserver=$!
sleep 1
rping -c -a $addr -p 7174 -C 3 -S 64 >/dev/null 2>&1
wait $pserver
sleep 1
kill -INT $rpingtrace
wait $rpingtrace
show why-clean rdmatrace why -r rping.ndjson

step "workloads running: ps, top -b, the exporter"
rdmatrace -j link >top-link.json
rdmatrace trace -w top.ndjson --ready-file /tmp/top.ready 2>/dev/null &
toptrace=$!
ready /tmp/top.ready
rping -s -a $addr -p 7175 -C 100000000 >/dev/null 2>&1 &
server=$!
sleep 1
rping -c -a $addr -p 7175 -C 100000000 >/dev/null 2>&1 &
client=$!
ib_write_bw -d rxe0 -R -p 18515 -D 60 >/dev/null 2>&1 &
bws=$!
sleep 1
ib_write_bw -d rxe0 -R -p 18515 -D 60 $addr >/dev/null 2>&1 &
bwc=$!
connected $server $client
connected $bws $bwc
(while :; do "$wl/churn" rxe0 3 >/dev/null 2>&1; sleep 1; done) &
churn=$!
show ps rdmatrace ps
show res-qp rdmatrace res qp
rping -c -a $addr -p 7999 -C 1 >/dev/null 2>&1 # nobody listens: REJECTED
show top-b rdmatrace top -b -n 2 -d 2
rping -c -a $addr -p 7999 -C 1 >/dev/null 2>&1
rdmatrace exporter --listen 127.0.0.1:9879 --ready-file /tmp/exporter.ready 2>/dev/null &
exporter=$!
ready /tmp/exporter.ready
sleep 3
{
	echo '$ curl -s 127.0.0.1:9879/metrics | grep -E "^rdma(trace)?_" | grep -v _bucket'
	curl -s 127.0.0.1:9879/ | head -20 >exporter-landing.html
	curl -s 127.0.0.1:9879/metrics | grep -E '^rdma(trace)?_' | grep -v _bucket
} | tee "$out/metrics.txt"
kill $churn 2>/dev/null
wait $churn 2>/dev/null
kill -INT $toptrace
wait $toptrace

step "QP in ERR: the port flaps under the running rping pair"
ip link set veth0 down
sleep 1
ip link set veth0 up
sleep 4
kill $server $client $bws $bwc 2>/dev/null
wait $server $client $bws $bwc 2>/dev/null
"$here/rdma-up.sh" >/dev/null
echo "rping pair $server $client" >"$out/flap.pids"

step "a job hangs at init: its server process stopped before it accepts"
rping -s -a $addr -p 7176 -C 3 >/dev/null 2>&1 &
hserver=$!
sleep 1
kill -STOP $hserver
rdmatrace why --comm rping --no-answer 5s --duration 40s --ready-file /tmp/why.ready >"$out/hang-why.raw" 2>&1 &
why=$!
ready /tmp/why.ready
rping -c -a $addr -p 7176 -C 3 >"$out/hang-rping.txt" 2>&1 &
hclient=$!
sleep 8
show hang-res-cm-id rdmatrace res cm_id
show hang-ps rdmatrace ps -p $hclient
wait $why
{
	echo "\$ rdmatrace why --comm rping --no-answer 5s"
	cat "$out/hang-why.raw"
} | tee "$out/hang-why.txt"
kill -9 $hserver $hclient 2>/dev/null
wait $hserver $hclient 2>/dev/null
echo "server $hserver client $hclient" >"$out/hang.pids"

step "connection setup is slow: the server accepts 3 s late"
rping -s -a $addr -p 7177 -C 3 >/dev/null 2>&1 &
sserver=$!
sleep 1
kill -STOP $sserver
rping -c -a $addr -p 7177 -C 3 >/dev/null 2>&1 &
sclient=$!
sleep 3
kill -CONT $sserver
wait $sclient $sserver
echo "server $sserver client $sclient" >"$out/slow.pids"

step "which pod holds the port: an rping server in a pod's cgroup"
cg=/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod7c4b2d1e_5a3f_4e6b_9c8d_0f1e2a3b4c5d.slice/cri-containerd-4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b.scope
mkdir -p "$cg"
sh -c 'echo $$ > "$0"/cgroup.procs && exec rping -s -a 10.99.0.1 -p 7174 -C 100000000' "$cg" >/dev/null 2>&1 &
podserver=$!
sleep 2
show port-rping rping -s -a $addr -p 7174 -C 1
show port-doctor rdmatrace doctor --port 7174
show port-ps rdmatrace ps
show port-res-j rdmatrace -j -p res cm_id pid $podserver
show port-ps-pod rdmatrace ps --filter-pod 7c4b2d1e-5a3f-4e6b-9c8d-0f1e2a3b4c5d
kill $podserver
wait $podserver 2>/dev/null

step "ibv_create_qp and ibv_reg_mr fail"
"$wl/verbsfail" rxe0 qp >"$out/verbsfail-qp.txt" 2>&1
chmod 0666 /dev/infiniband/uverbs*
cp "$wl/verbsfail" /tmp/verbsfail && chmod 0755 /tmp/verbsfail
prlimit --memlock=65536 setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/verbsfail rxe0 mr 1048576 >"$out/verbsfail-mr.txt" 2>&1
show doctor-memlock prlimit --memlock=65536 rdmatrace doctor --user 65534 -- sleep 10
sleep 1

step "a device delete hangs: the owners of what is on it are stopped"
rping -s -a $addr -p 7178 -C 100000000 >/dev/null 2>&1 &
dserver=$!
sleep 1
rping -c -a $addr -p 7178 -C 100000000 >/dev/null 2>&1 &
dclient=$!
connected $dserver $dclient
rdmatrace leaks --filter-dev rxe0 --interval 3s --ready-file /tmp/leaks.ready >"$out/delete-leaks.raw" 2>&1 &
leaks=$!
ready /tmp/leaks.ready
kill -STOP $dserver $dclient
rdma link delete rxe0 &
delete=$!
sleep 4
show delete-ps rdmatrace ps
show delete-rdma-res rdma res show qp
sleep 3
kill -9 $dserver $dclient
wait $delete
sleep 1
kill -INT $leaks
wait $leaks
{
	echo "\$ rdmatrace leaks --filter-dev rxe0 --interval 3s"
	cat "$out/delete-leaks.raw"
} | tee "$out/delete-leaks.txt"
"$here/rdma-up.sh" >/dev/null

step "leaks -- CMD: a clean program and a leaking one"
rping -s -a $addr -p 7179 -C 3 >/dev/null 2>&1 &
lserver=$!
sleep 1
show leaks-clean rdmatrace leaks -- rping -c -a $addr -p 7179 -C 3
wait $lserver
show leaks-leaksites rdmatrace leaks -- ./leaksites rxe0 $addr

step "the session's recording ends; what it says"
kill -INT $session
wait $session
read -r _ _ fs fc <"$out/flap.pids"
show flap-why rdmatrace why --pid $fc,$fs -r session.ndjson
show flap-why-j rdmatrace why --pid $fc -r session.ndjson -j
read -r _ ss _ sc <"$out/slow.pids"
rdmatrace trace -r session.ndjson --filter-pid $ss,$sc -j >slow.ndjson # the slow connect's sequence
show slow-trace rdmatrace trace -r session.ndjson --filter-pid $ss,$sc --filter-res cm_id
show verbs-why rdmatrace why --comm verbsfail -r session.ndjson
show why-session rdmatrace why -r session.ndjson
{
	echo '$ curl -s 127.0.0.1:9879/metrics | grep ^rdma_cm_connection_setup'
	curl -s 127.0.0.1:9879/metrics | grep ^rdma_cm_connection_setup
} | tee "$out/connsetup.txt"
kill $exporter
wait $exporter 2>/dev/null
show health-after rdmatrace health
gzip -k session.ndjson top.ndjson
step "done in $(($(date +%s) - began)) s"
